package timeline

import (
	"math/bits"
	"slices"
	"sync/atomic"
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
	// First pass, in parts at once: count, find the largest id and the
	// processes (numbered in order of first appearance).
	parts := numParts(len(ev))
	type tally struct {
		nAPI, gpu int
		maxCorr   int64
		neg       bool
		procs     []uint32 // in order of first appearance
	}
	tallies := make([]tally, parts)
	inParts(len(ev), parts, func(p, lo, hi int) {
		t := &tallies[p]
		seen := map[uint32]bool{}
		last, have := uint32(0), false
		for i := lo; i < hi; i++ {
			e := &ev[i]
			if e.Corr == 0 || (e.Kind != KindAPI && !e.Kind.IsGPUWork()) {
				continue
			}
			if e.Corr < 0 {
				t.neg = true
				return
			}
			if e.Kind == KindAPI {
				t.nAPI++
			} else {
				t.gpu++
			}
			t.maxCorr = max(t.maxCorr, e.Corr)
			if !have || e.Proc != last {
				if !seen[e.Proc] {
					seen[e.Proc] = true
					t.procs = append(t.procs, e.Proc)
				}
				last, have = e.Proc, true
			}
		}
	})
	var (
		nAPI, gpu int
		maxCorr   int64
		procs     = map[uint32]uint64{}
	)
	apiAt := make([]int, parts+1) // where each part's keys begin
	for p, t := range tallies {
		if t.neg {
			return false
		}
		nAPI += t.nAPI
		gpu += t.gpu
		maxCorr = max(maxCorr, t.maxCorr)
		for _, pr := range t.procs {
			if _, ok := procs[pr]; !ok {
				procs[pr] = uint64(len(procs))
			}
		}
		apiAt[p+1] = apiAt[p] + t.nAPI
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
	// proc returns a lookup of process numbers for one goroutine: the
	// last one is remembered.
	proc := func() func(uint32) uint64 {
		last, lastIdx, have := uint32(0), uint64(0), false
		return func(p uint32) uint64 {
			if !have || p != last {
				last, lastIdx, have = p, procs[p], true
			}
			return lastIdx
		}
	}
	// key = proc | corr | index, from the high bits down; each part writes
	// its own span.
	mem, keys := uint64s(nAPI, alloc)
	sorted := make([]bool, parts)
	inParts(len(ev), parts, func(p, lo, hi int) {
		num, out, ok := proc(), keys[apiAt[p]:apiAt[p]:apiAt[p+1]], true
		for i := lo; i < hi; i++ {
			e := &ev[i]
			if e.Kind != KindAPI || e.Corr == 0 {
				continue
			}
			v := num(e.Proc)<<(cb+ib) | uint64(e.Corr)<<ib | uint64(i)
			if n := len(out); n > 0 && out[n-1] > v {
				ok = false
			}
			out = append(out, v)
		}
		sorted[p] = ok
	})
	inOrder := !slices.Contains(sorted, false)
	for p := 1; p < parts && inOrder; p++ {
		if a := apiAt[p]; a > 0 && a < nAPI && keys[a-1] > keys[a] {
			inOrder = false
		}
	}
	if !inOrder {
		slices.Sort(keys)
	}
	// Each piece of GPU work links to its call; a call links to its
	// first piece of work (the lowest index, kept with an atomic minimum
	// since parts meet the same call).
	mask := uint64(1)<<ib - 1
	inParts(len(ev), parts, func(_, lo, hi int) {
		num, at := proc(), 0
		for i := lo; i < hi; i++ {
			e := &ev[i]
			if e.Corr == 0 || !e.Kind.IsGPUWork() {
				continue
			}
			want := (num(e.Proc)<<cb | uint64(e.Corr)) << ib
			at = gallop(keys, want, at)
			if at == len(keys) || keys[at]&^mask != want {
				continue
			}
			api := int32(keys[at] & mask) // the first call of the id (a duplicate API row links nothing)
			e.Link = api
			l := &ev[api].Link
			for {
				old := atomic.LoadInt32(l)
				if (old >= 0 && old <= int32(i)) || atomic.CompareAndSwapInt32(l, old, int32(i)) {
					break
				}
			}
		}
	})
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
