package hostact

import (
	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/timeline"
)

// Stalls is what host calls cost the GPU: wasted, the time in steady steps
// that any of calls (indexes into tl.Events) covers while busy (the
// kernels, or all GPU work) does not run, in ns; and one finding candidate
// per call, weighted by its part of wasted, with the call as evidence,
// worded by describe from the call and that part.
func Stalls(tl *timeline.Timeline, ix *index.Index, calls []int32, busy ivl.Set,
	describe func(e *timeline.Event, wastedNS int64) string) (wasted ivl.Set, cands []analyze.Candidate) {
	spans := make([]ivl.Interval, len(calls))
	for k, i := range calls {
		spans[k] = ivl.Interval{Start: tl.Events[i].Start, End: tl.Events[i].End}
	}
	wasted = ivl.Union(spans).Subtract(busy).Intersect(ix.SteadySet)
	for _, i := range calls {
		e := &tl.Events[i]
		w := wasted.Covered(e.Start, e.End)
		cands = append(cands, analyze.Candidate{Weight: w, Evidence: analyze.Evidence{
			StartNS: e.Start, EndNS: e.End, Track: ix.Label(e.Track)}, Describe: func() string { return describe(e, w) }})
	}
	return wasted, cands
}
