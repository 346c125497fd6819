// Package merge merges runs of events, each already in timeline order, into
// one: the readers parse chunks of a trace in parallel, each chunk sorted,
// and hand the timeline.Builder the whole trace in order, so that Build
// need not sort it again.
package merge

import "github.com/traceaudit/traceaudit/timeline"

// Runs calls add for every event of runs, in the order of timeline.Before
// (start, then the longer first), taking ties from the earlier run; run is
// the event's index in runs. Each run must be sorted by timeline.Before.
// Cost: O(n log k) for n events in k runs.
func Runs(runs [][]timeline.Event, add func(run int, e timeline.Event)) {
	// A binary heap of run indexes, keyed by each run's next event.
	pos := make([]int, len(runs))
	h := make([]int, 0, len(runs))
	for i, r := range runs {
		if len(r) > 0 {
			h = append(h, i)
		}
	}
	less := func(a, b int) bool {
		if c := timeline.Before(&runs[a][pos[a]], &runs[b][pos[b]]); c != 0 {
			return c < 0
		}
		return a < b
	}
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && less(h[r], h[l]) {
				m = r
			}
			if !less(h[m], h[i]) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(h) > 0 {
		k := h[0]
		add(k, runs[k][pos[k]])
		if pos[k]++; pos[k] == len(runs[k]) {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
}
