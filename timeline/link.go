package timeline

import (
	"math/bits"
	"slices"
)

// linkPacked is linkCorrelations for the usual case, where the process
// (numbered among the few that appear), the correlation id, the
// API-before-GPU flag and the event index fit together in 64 bits: each
// correlated event becomes one integer whose order is the one the linking
// needs, and the integers are sorted as integers (no comparison function),
// in half the memory of the general case. It reports false, having done
// nothing, when the ids do not fit.
func linkPacked(ev []Event) bool {
	var (
		n       int
		maxCorr int64
		procs   = map[uint32]uint64{}
		last    uint32
		lastIdx uint64
		have    bool
	)
	proc := func(p uint32) uint64 {
		if have && p == last {
			return lastIdx
		}
		k, ok := procs[p]
		if !ok {
			k = uint64(len(procs))
			procs[p] = k
		}
		last, lastIdx, have = p, k, true
		return k
	}
	for i := range ev {
		e := &ev[i]
		if e.Corr == 0 || (e.Kind != KindAPI && !e.Kind.IsGPUWork()) {
			continue
		}
		if e.Corr < 0 {
			return false
		}
		n++
		maxCorr = max(maxCorr, e.Corr)
		proc(e.Proc)
	}
	if n == 0 {
		return true
	}
	ib := bits.Len64(uint64(len(ev) - 1))
	cb := bits.Len64(uint64(maxCorr))
	pb := bits.Len64(uint64(len(procs) - 1))
	if ib+1+cb+pb > 64 {
		return false
	}
	// v = proc | corr | gpu | index, from the high bits down: equal
	// (process, correlation) sort together, the API call first, then the
	// GPU work in index order.
	vs := make([]uint64, 0, n)
	for i := range ev {
		e := &ev[i]
		if e.Corr == 0 || (e.Kind != KindAPI && !e.Kind.IsGPUWork()) {
			continue
		}
		v := proc(e.Proc)<<(cb+1+ib) | uint64(e.Corr)<<(1+ib) | uint64(i)
		if e.Kind != KindAPI {
			v |= 1 << ib
		}
		vs = append(vs, v)
	}
	slices.Sort(vs)
	idx := func(v uint64) int32 { return int32(v & (1<<ib - 1)) }
	for i := 0; i < len(vs); {
		key := vs[i] >> (1 + ib)
		j := i + 1
		for j < len(vs) && vs[j]>>(1+ib) == key {
			j++
		}
		if api := idx(vs[i]); ev[api].Kind == KindAPI {
			for _, v := range vs[i+1 : j] {
				if v&(1<<ib) == 0 {
					continue // a duplicate API row: the first one wins
				}
				g := idx(v)
				ev[g].Link = api
				if ev[api].Link < 0 {
					ev[api].Link = g
				}
			}
		}
		i = j
	}
	return true
}
