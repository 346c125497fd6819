package chrome

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/traceaudit/traceaudit/timeline"
)

// sortedCopy must equal a stable sort by timeline.Before, whatever the
// runs: sorted input, reversed, a few interleaved threads, many ties.
func TestSortedCopyIsStableSort(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	var buf []timeline.Event
	for trial := range 400 {
		n := r.Intn(300)
		ev := make([]timeline.Event, n)
		span := int64(1 + r.Intn(50)) // small spans: many equal keys
		for i := range ev {
			ev[i].Start = r.Int63n(span)
			ev[i].End = ev[i].Start + r.Int63n(3)
			ev[i].Corr = int64(i) // identifies the input position
		}
		switch trial % 4 {
		case 1: // sorted already
			slices.SortStableFunc(ev, func(x, y timeline.Event) int { return timeline.Before(&x, &y) })
		case 2: // reversed: one run per event
			slices.SortStableFunc(ev, func(x, y timeline.Event) int { return timeline.Before(&y, &x) })
		case 3: // threads: a few sorted runs one after another
			for lo := 0; lo < n; {
				hi := min(n, lo+1+r.Intn(60))
				slices.SortStableFunc(ev[lo:hi], func(x, y timeline.Event) int { return timeline.Before(&x, &y) })
				lo = hi
			}
		}
		for i := range ev {
			ev[i].Corr = int64(i)
		}
		want := slices.Clone(ev)
		slices.SortStableFunc(want, func(x, y timeline.Event) int { return timeline.Before(&x, &y) })
		got := make([]timeline.Event, n)
		buf = sortedCopy(got, slices.Clone(ev), buf)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (%d events): sortedCopy differs from a stable sort", trial, n)
		}
	}
}

// The arena's slices are disjoint, of the length asked, and do not grow
// into each other.
func TestArena(t *testing.T) {
	var a arena
	var all [][]timeline.Event
	for i := range 3000 {
		n := 1 + (i*7919)%5000
		s := a.alloc(n)
		if len(s) != n || cap(s) != n {
			t.Fatalf("alloc(%d): len %d cap %d", n, len(s), cap(s))
		}
		for j := range s {
			s[j].Corr = int64(i)
		}
		all = append(all, s)
	}
	for i, s := range all {
		for j := range s {
			if s[j].Corr != int64(i) {
				t.Fatalf("slice %d overwritten at %d", i, j)
			}
		}
	}
	if big := a.alloc(arenaMax); len(big) != arenaMax {
		t.Fatalf("large alloc: len %d", len(big))
	}
}
