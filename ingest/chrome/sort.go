package chrome

import (
	"github.com/traceaudit/traceaudit/timeline"
)

// A worker parses a chunk's events into a scratch slice it reuses, then
// hands over a sorted copy of exactly the right size: the scratch stays
// warm in the cache, and the memory that outlives the chunk is only what
// its events need.
//
// Kineto writes each thread's and stream's events in time order, one
// thread after another, so a chunk is a few long ascending runs. They are
// found and merged (a natural merge sort), in O(n log r) for r runs; ties
// keep their input order, so that the result does not depend on how the
// input was cut.

// sortedCopy returns a new slice holding src's events ordered by
// timeline.Before, ties in input order. buf is scratch space the size of
// src or larger, or nil (sortedCopy then allocates it); the possibly grown
// buffer is returned for reuse.
func sortedCopy(src, buf []timeline.Event) (dst, scratch []timeline.Event) {
	n := len(src)
	dst = make([]timeline.Event, n)
	bounds := runBounds(src)
	if len(bounds) <= 2 {
		copy(dst, src)
		return dst, buf
	}
	if cap(buf) < n {
		buf = make([]timeline.Event, n)
	}
	buf = buf[:n]
	// Merge pairs of runs from a into b until one run is left; the last
	// pass writes into dst. src serves as the first a (it is scratch).
	a, b := src, buf
	for {
		last := len(bounds) == 3 // two runs: this pass leaves one
		out := b
		if last {
			out = dst
		}
		next := bounds[:1]
		for i := 0; i+1 < len(bounds); i += 2 {
			lo, mid := bounds[i], bounds[i+1]
			if i+2 >= len(bounds) {
				copy(out[lo:mid], a[lo:mid]) // an odd run out
				next = append(next, mid)
				continue
			}
			hi := bounds[i+2]
			mergeRuns2(out[lo:hi], a[lo:mid], a[mid:hi])
			next = append(next, hi)
		}
		bounds = next
		if last {
			break
		}
		a, b = out, a
	}
	return dst, buf
}

// runBounds returns the start of each ascending run of ev, then len(ev).
func runBounds(ev []timeline.Event) []int {
	bounds := []int{0}
	for i := 1; i < len(ev); i++ {
		if timeline.Before(&ev[i-1], &ev[i]) > 0 {
			bounds = append(bounds, i)
		}
	}
	return append(bounds, len(ev))
}

// mergeRuns2 merges the sorted runs x and y into out (len(x)+len(y)),
// taking from x on ties.
func mergeRuns2(out, x, y []timeline.Event) {
	i, j, k := 0, 0, 0
	for i < len(x) && j < len(y) {
		if timeline.Before(&y[j], &x[i]) < 0 {
			out[k] = y[j]
			j++
		} else {
			out[k] = x[i]
			i++
		}
		k++
	}
	k += copy(out[k:], x[i:])
	copy(out[k:], y[j:])
}
