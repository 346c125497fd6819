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
		var got []timeline.Event
		got, buf = sortedCopy(slices.Clone(ev), buf)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (%d events): sortedCopy differs from a stable sort", trial, n)
		}
	}
}
