package merge

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/traceaudit/traceaudit/timeline"
)

// TestRunsKeepsBuildOrder checks the claim the readers rely on: sorting
// each run stably by timeline.Before, merging the runs (the earlier run
// first on ties) and then sorting stably by the builder's full order gives
// the same result as stably sorting the concatenated input by the full
// order, so the builder finds the events already sorted.
func TestRunsKeepsBuildOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	full := func(x, y timeline.Event) int {
		if c := timeline.Before(&x, &y); c != 0 {
			return c
		}
		if x.Track != y.Track {
			return cmp.Compare(x.Track, y.Track)
		}
		return cmp.Compare(x.Kind, y.Kind)
	}
	for trial := range 300 {
		var input []timeline.Event
		var runs [][]timeline.Event
		for range 1 + rng.IntN(6) {
			var u []timeline.Event
			for range rng.IntN(30) { // empty runs too
				s := int64(rng.IntN(8))
				e := timeline.Event{Start: s, End: s + int64(rng.IntN(3)), Track: timeline.TrackID(rng.IntN(3)),
					Kind: timeline.Kind(1 + rng.IntN(2)), Corr: int64(len(input))} // Corr marks the input position
				input = append(input, e)
				u = append(u, e)
			}
			slices.SortStableFunc(u, func(x, y timeline.Event) int { return timeline.Before(&x, &y) })
			runs = append(runs, u)
		}
		var merged []timeline.Event
		var from []int
		Runs(runs, func(run int, e timeline.Event) {
			merged = append(merged, e)
			from = append(from, run)
		})
		if len(merged) != len(input) {
			t.Fatalf("trial %d: %d events merged, want %d", trial, len(merged), len(input))
		}
		for i := 1; i < len(merged); i++ {
			c := timeline.Before(&merged[i-1], &merged[i])
			if c > 0 || c == 0 && from[i-1] > from[i] {
				t.Fatalf("trial %d: event %d (run %d) before event %d (run %d) out of order", trial, i-1, from[i-1], i, from[i])
			}
		}
		for i, e := range merged {
			if !slices.Contains(runs[from[i]], e) {
				t.Fatalf("trial %d: event %d attributed to run %d, which does not hold it", trial, i, from[i])
			}
		}
		slices.SortStableFunc(merged, full)
		slices.SortStableFunc(input, full)
		if !reflect.DeepEqual(merged, input) {
			t.Fatalf("trial %d: merged order differs", trial)
		}
	}
}

func TestRunsEmpty(t *testing.T) {
	n := 0
	Runs(nil, func(int, timeline.Event) { n++ })
	Runs([][]timeline.Event{nil, {}}, func(int, timeline.Event) { n++ })
	if n != 0 {
		t.Errorf("%d events from empty runs", n)
	}
}
