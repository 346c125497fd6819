package chrome

import (
	"sync"
	"unsafe"

	"github.com/traceaudit/traceaudit/internal/hugepage"
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

// sortedCopy fills dst (len(src) events) with src's events ordered by
// timeline.Before, ties in input order. src is clobbered. buf is scratch
// space the size of src or larger, or nil (sortedCopy then allocates it);
// the possibly grown buffer is returned for reuse.
func sortedCopy(dst, src, buf []timeline.Event) (scratch []timeline.Event) {
	n := len(src)
	bounds := runBounds(src)
	if len(bounds) <= 2 {
		copy(dst, src)
		return buf
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
	return buf
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

// arena hands out the slices that hold the workers' sorted events, carved
// from large blocks of memory instead of one allocation per chunk. Blocks
// double from 256 kB to 8 MB, so that a small trace stays small; the large
// ones are huge-page memory (internal/hugepage). Safe for concurrent use.
type arena struct {
	mu     sync.Mutex
	block  []timeline.Event
	blocks [][]timeline.Event // every block, for free
	next   int                // size of the next block, in events
}

// Arena block sizes in events.
var (
	arenaFirst = (256 << 10) / int(unsafe.Sizeof(timeline.Event{}))
	arenaMax   = (8 << 20) / int(unsafe.Sizeof(timeline.Event{}))
)

// alloc returns a slice of n events; its capacity is n.
func (a *arena) alloc(n int) []timeline.Event {
	if a == nil || n > arenaMax/4 {
		return make([]timeline.Event, n)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if cap(a.block)-len(a.block) < n {
		size := max(a.next, arenaFirst, n)
		a.next = min(2*size, arenaMax)
		a.block = hugepage.Make[timeline.Event](0, size)
		a.blocks = append(a.blocks, a.block)
	}
	at := len(a.block)
	a.block = a.block[:at+n]
	return a.block[at : at+n : at+n]
}

// free gives the blocks' huge pages back to the system once every event
// carved from them has been merged into the timeline: no collection runs
// during an analysis, so they would stay resident to its end.
func (a *arena) free() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range a.blocks {
		hugepage.Free(b)
	}
	a.block, a.blocks = nil, nil
}
