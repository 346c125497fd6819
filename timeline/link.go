package timeline

import (
	"math/bits"
	"slices"
	"unsafe"
)

// linkPacked is linkCorrelations for the usual case, where the process
// (numbered among the few that appear), the correlation id and the event
// index fit together in 64 bits. Each API call becomes one integer whose
// order is (process, id, index); in a trace those come in that order
// already (CUPTI numbers calls as they are made), so usually nothing is
// sorted. Each piece of GPU work then finds the first call of its
// (process, id) by a search that starts where the previous one ended:
// consecutive GPU work has close ids. It reports false, having done
// nothing, when the ids do not fit. alloc, when set, makes the int32
// memory for the keys, and free, when set, receives it at the end.
func linkPacked(ev []Event, alloc func(int) []int32, free func([]int32)) bool {
	var (
		nAPI    int
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
	gpu := 0
	for i := range ev {
		e := &ev[i]
		if e.Corr == 0 || (e.Kind != KindAPI && !e.Kind.IsGPUWork()) {
			continue
		}
		if e.Corr < 0 {
			return false
		}
		if e.Kind == KindAPI {
			nAPI++
		} else {
			gpu++
		}
		maxCorr = max(maxCorr, e.Corr)
		proc(e.Proc)
	}
	if nAPI == 0 || gpu == 0 {
		return true
	}
	ib := bits.Len64(uint64(len(ev) - 1))
	cb := bits.Len64(uint64(maxCorr))
	pb := bits.Len64(uint64(len(procs) - 1))
	if ib+cb+pb > 64 {
		return false
	}
	// key = proc | corr | index, from the high bits down.
	mem, keys := uint64s(nAPI, alloc)
	keys = keys[:0]
	sorted := true
	for i := range ev {
		e := &ev[i]
		if e.Kind != KindAPI || e.Corr == 0 {
			continue
		}
		v := proc(e.Proc)<<(cb+ib) | uint64(e.Corr)<<ib | uint64(i)
		if n := len(keys); n > 0 && keys[n-1] > v {
			sorted = false
		}
		keys = append(keys, v)
	}
	if !sorted {
		slices.Sort(keys)
	}
	mask := uint64(1)<<ib - 1
	at := 0
	for i := range ev {
		e := &ev[i]
		if e.Corr == 0 || !e.Kind.IsGPUWork() {
			continue
		}
		want := (proc(e.Proc)<<cb | uint64(e.Corr)) << ib
		at = gallop(keys, want, at)
		if at == len(keys) || keys[at]&^mask != want {
			continue
		}
		api := int32(keys[at] & mask) // the first call of the id (a duplicate API row links nothing)
		e.Link = api
		if ev[api].Link < 0 {
			ev[api].Link = int32(i)
		}
	}
	if free != nil && mem != nil {
		free(mem)
	}
	return true
}

// gallop returns the first index of sorted keys whose value is >= want,
// searching outwards from hint: O(log d) for an answer d places away.
func gallop(keys []uint64, want uint64, hint int) int {
	n := len(keys)
	hint = min(max(hint, 0), n)
	lo, hi := 0, n
	if hint < n && keys[hint] < want {
		// The answer is after hint.
		lo = hint + 1
		for step := 1; ; step *= 2 {
			j := hint + step
			if j >= n {
				break
			}
			if keys[j] >= want {
				hi = j
				break
			}
			lo = j + 1
		}
	} else {
		// The answer is at or before hint.
		hi = hint
		for step := 1; ; step *= 2 {
			j := hint - step
			if j < 0 {
				break
			}
			if keys[j] < want {
				lo = j + 1
				break
			}
			hi = j
		}
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if keys[m] < want {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// uint64s returns a slice of n uint64, in memory from alloc when set (two
// int32 a value, aligned to 8 bytes), and that memory (nil without alloc).
func uint64s(n int, alloc func(int) []int32) ([]int32, []uint64) {
	if alloc == nil || n == 0 {
		return nil, make([]uint64, n)
	}
	s := alloc(2*n + 1)
	p := unsafe.Pointer(unsafe.SliceData(s))
	if uintptr(p)%8 != 0 {
		p = unsafe.Add(p, 4)
	}
	return s, unsafe.Slice((*uint64)(p), n)
}
