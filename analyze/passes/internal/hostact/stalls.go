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

// Feeders are the threads that launch kernels or copies in steady steps:
// an OS call of theirs delays the GPU's next work.
func Feeders(tl *timeline.Timeline, ix *index.Index) map[timeline.TrackID]bool {
	out := map[timeline.TrackID]bool{}
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind == timeline.KindAPI && (e.API == timeline.APILaunch || e.API.IsCopy()) && ix.InSteady(e.Start) {
			out[e.Track] = true
		}
	}
	return out
}

// Why an analyzer of OS calls cannot judge a trace without them: one text
// for all, so that a report names the reason once.
const (
	NoOSCallsProfiler = "this trace's profiler does not record OS runtime calls (the PyTorch profiler never does): capture with nsys profile --trace=cuda,nvtx,osrt"
	NoOSCalls         = "the profile has no OS runtime calls: capture with nsys profile --trace=cuda,nvtx,osrt"
)
