package index

import (
	"math"
	"slices"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/timeline"
)

// IsDataRange reports whether range event e loads data: a DataLoader
// __next__ span, or a range whose name matches cfg.DataRange. Step ranges
// never count.
func IsDataRange(tl *timeline.Timeline, e *timeline.Event, cfg *analyze.Config) bool {
	if e.Kind != timeline.KindRange || e.Range == timeline.RangeStep {
		return false
	}
	if e.Range == timeline.RangeDataLoader {
		return true
	}
	return cfg.DataRange != nil && cfg.DataRange.MatchString(tl.Name(e.Name))
}

// IsMemoryOSCall reports whether an OS runtime call manages host memory
// (munmap, madvise, brk, mmap, mremap, mprotect). These are the calls the
// "os" bucket counts; waits such as poll or pthread_cond_wait are not, since
// a thread waiting there waits for something else (a DataLoader worker, a
// lock) that its own range already names.
func IsMemoryOSCall(name string) bool {
	if timeline.IsMunmapLike(name) {
		return true
	}
	switch name {
	case "mmap", "mmap64", "mprotect":
		return true
	}
	return false
}

// findMain picks the steps by design.md's rules and the main thread: the
// thread holding the step ranges, else the one with the most CUDA calls.
func (ix *Index) findMain(cfg *analyze.Config) picked {
	tl := ix.TL
	apiCalls := make([]int, len(tl.Tracks))
	for i := range tl.Events {
		if tl.Events[i].Kind == timeline.KindAPI {
			apiCalls[tl.Events[i].Track]++
		}
	}
	p := ix.pickSteps(cfg, apiCalls)
	thread := p.thread
	if thread < 0 {
		thread = mostCalls(apiCalls)
	}
	if thread >= 0 {
		ix.Main, ix.HasMain = timeline.TrackID(thread), true
	}
	return p
}

// findSteps turns the picked steps into the steady state: steps that
// launched no GPU work are dropped, steps are paced by the GPU when it runs
// behind the host, clipped to the window (and to the end of any wait for
// GPU work queued before it), start-up and loop-end steps are set aside,
// and the window is checked for being a steady loop at all.
func (ix *Index) findSteps(p picked) {
	tl := ix.TL
	steps, source := p.steps, p.source
	if p.thread >= 0 && !p.repeated {
		steps = ix.dropIdleSteps(steps)
	}
	if len(steps) > 0 {
		var lag float64
		if steps, lag = ix.paceByGPU(steps); lag > 0 {
			ix.GPULag = lag
			source += " (GPU-paced)"
		}
	}
	lo, hi := tl.Span()
	pre := ix.preWindowEnd()
	if len(steps) == 0 {
		// One step: the span of GPU activity, so that CUDA and model
		// initialisation before the first GPU work is not judged; the
		// whole window when there is no GPU work.
		if glo, ghi := gpuSpan(tl); ghi > glo {
			lo, hi = glo, ghi
		}
		// Where the GPU work repeats, the loop it repeats in is the
		// steady state: one-time set-up copies before it and read-backs
		// after it are not judged per step.
		if rlo, rhi, ok := ix.loopRegion(lo, hi); ok {
			lo, hi = rlo, rhi
			ix.LoopOnly = true
		}
		if hi > lo {
			steps = []Step{{Start: lo, End: hi}}
		}
		source = "window"
	}
	if len(steps) > 0 && pre > steps[0].Start {
		ix.PreWindowNS = min(pre, steps[0].End) - steps[0].Start
	}
	steps = clipSteps(steps, max(lo, pre), hi)
	markEnds(steps, p.repeated, p.lastIncomplete)
	ix.Steps, ix.Source = steps, source
	ix.Steady = nil
	for i, s := range ix.Steps {
		switch {
		case s.Startup:
			ix.Startup = &ix.Steps[i]
		case s.Teardown:
			ix.Teardown = &ix.Steps[i]
		default:
			ix.Steady = append(ix.Steady, s)
		}
	}
	ix.NotSteady = ix.steadiness()
	ix.SteadyNS = 0
	ivs := make([]ivl.Interval, len(ix.Steady))
	for i, s := range ix.Steady {
		ix.SteadyNS += s.Dur()
		ivs[i] = ivl.Interval{Start: s.Start, End: s.End}
	}
	ix.SteadySet = ivl.Union(ivs)
}

// gpuSpan is the first start and last end of GPU work (kernels, copies,
// memsets), or (0, 0).
func gpuSpan(tl *timeline.Timeline) (lo, hi int64) {
	lo, hi = math.MaxInt64, math.MinInt64
	for i := range tl.Events {
		if e := &tl.Events[i]; e.Kind.IsGPUWork() {
			lo, hi = min(lo, e.Start), max(hi, e.End)
		}
	}
	if hi < lo {
		return 0, 0
	}
	return lo, hi
}

// mostCalls is the track with the most API calls, or -1.
func mostCalls(apiCalls []int) int {
	best := -1
	for t, n := range apiCalls {
		if n > 0 && (best < 0 || n > apiCalls[best]) {
			best = t
		}
	}
	return best
}

// median of v: the middle value, or the mean of the two middle values for
// an even count; v is reordered.
func median(v []int64) int64 {
	n := len(v)
	if n == 0 {
		return 0
	}
	slices.Sort(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return v[n/2-1] + (v[n/2]-v[n/2-1])/2
}
