package index

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/timeline"
)

// StartupFactor: the first step is start-up, excluded from steady-state
// figures, when it is longer than StartupFactor times the median of the
// others.
const StartupFactor = 1.5

// minRepeats is how often a host range must repeat on one thread to define
// steps.
const minRepeats = 3

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

// findSteps picks the main thread and the steps, in design.md's order:
// --step-range, ProfilerStep#N, the earliest repeated host range on one
// thread, else the whole window.
func (ix *Index) findSteps(cfg *analyze.Config) {
	tl := ix.TL
	apiCalls := make([]int, len(tl.Tracks))
	for i := range tl.Events {
		if tl.Events[i].Kind == timeline.KindAPI {
			apiCalls[tl.Events[i].Track]++
		}
	}
	var steps []Step
	thread := -1
	switch {
	case cfg.StepRange != nil:
		thread, steps = ix.rangeSteps(apiCalls, func(e *timeline.Event) bool {
			return e.Kind == timeline.KindRange && cfg.StepRange.MatchString(tl.Name(e.Name))
		})
		ix.Source = "step-range"
	default:
		thread, steps = ix.rangeSteps(apiCalls, func(e *timeline.Event) bool {
			return e.Kind == timeline.KindRange && e.Range == timeline.RangeStep
		})
		ix.Source = "ProfilerStep"
		if len(steps) == 0 {
			var name string
			thread, steps, name = ix.repeatedSteps(apiCalls)
			ix.Source = fmt.Sprintf("repeated range %q", name)
		}
	}
	if thread < 0 {
		thread = mostCalls(apiCalls)
	}
	if thread >= 0 {
		ix.Main, ix.HasMain = timeline.TrackID(thread), true
	}
	if len(steps) == 0 {
		// One step: the span of GPU activity, so that CUDA and model
		// initialisation before the first GPU work is not judged; the
		// whole window when there is no GPU work.
		lo, hi := gpuSpan(tl)
		if hi <= lo {
			lo, hi = tl.Span()
		}
		if hi > lo {
			steps = []Step{{Start: lo, End: hi}}
		}
		ix.Source = "window"
	}
	ix.Steps = steps
	ix.Steady = steps
	if ix.Teardown != nil {
		ix.Steady = steps[:len(steps)-1]
	}
	if len(ix.Steady) >= 2 {
		steps := ix.Steady
		rest := make([]int64, 0, len(steps)-1)
		for _, s := range steps[1:] {
			rest = append(rest, s.Dur())
		}
		if float64(steps[0].Dur()) > StartupFactor*float64(median(rest)) {
			first := steps[0]
			first.Startup = true
			ix.Startup = &first
			ix.Steps[0].Startup = true
			ix.Steady = ix.Steady[1:]
		}
	}
	ix.Steady = slices.Clone(ix.Steady)
	ivs := make([]ivl.Interval, len(ix.Steady))
	for i, s := range ix.Steady {
		ix.SteadyNS += s.Dur()
		ivs[i] = ivl.Interval{Start: s.Start, End: s.End}
	}
	ix.SteadySet = ivl.Union(ivs)
}

// rangeSteps makes one step per matching range, on the thread holding the
// most matches (ties: more API calls, then the lower track).
func (ix *Index) rangeSteps(apiCalls []int, match func(*timeline.Event) bool) (int, []Step) {
	tl := ix.TL
	count := make([]int, len(tl.Tracks))
	for i := range tl.Events {
		if e := &tl.Events[i]; match(e) && !e.Has(timeline.FlagOpenEnd) {
			count[e.Track]++
		}
	}
	best := -1
	for t, n := range count {
		if n == 0 {
			continue
		}
		if best < 0 || n > count[best] || (n == count[best] && apiCalls[t] > apiCalls[best]) {
			best = t
		}
	}
	if best < 0 {
		return -1, nil
	}
	var steps []Step
	for _, i := range tl.Tracks[best].Events {
		if e := &tl.Events[i]; match(e) && !e.Has(timeline.FlagOpenEnd) && e.End > e.Start {
			steps = append(steps, Step{Start: e.Start, End: e.End, Name: tl.Name(e.Name)})
		}
	}
	return best, steps
}

// repeatedSteps finds, on the thread with repeated ranges and the most API
// calls, the range name repeated at least minRepeats times whose first
// occurrence starts earliest. Step k runs from occurrence k to occurrence
// k+1; the last runs to the end of the last repeated range that starts
// within it (its own end when none does).
func (ix *Index) repeatedSteps(apiCalls []int) (int, []Step, string) {
	tl := ix.TL
	type stat struct {
		n     int
		first int64
	}
	best := -1
	var bestName timeline.NameID
	for t := range tl.Tracks {
		tr := &tl.Tracks[t]
		if tr.Kind != timeline.TrackHost {
			continue
		}
		names := map[timeline.NameID]*stat{}
		var outerEnd int64 = math.MinInt64
		for _, i := range tr.Events {
			e := &tl.Events[i]
			if e.Kind != timeline.KindRange || e.Has(timeline.FlagOpenEnd) || e.End <= e.Start || libraryRange(tl.Name(e.Name)) {
				continue
			}
			// Only top-level ranges define steps: a range nested in another
			// (an internal phase of a bigger one) would cut steps into slivers.
			if e.Start < outerEnd {
				continue
			}
			outerEnd = e.End
			s := names[e.Name]
			if s == nil {
				s = &stat{first: e.Start}
				names[e.Name] = s
			}
			s.n++
		}
		var pick timeline.NameID
		var pickFirst int64
		found := false
		for id, s := range names {
			if s.n < minRepeats {
				continue
			}
			if !found || s.first < pickFirst || (s.first == pickFirst && tl.Name(id) < tl.Name(pick)) {
				pick, pickFirst, found = id, s.first, true
			}
		}
		if !found {
			continue
		}
		if best < 0 || apiCalls[t] > apiCalls[best] {
			best, bestName = t, pick
		}
	}
	if best < 0 {
		return -1, nil, ""
	}
	// Names that repeat on this thread, to find where the last step ends.
	counts := map[timeline.NameID]int{}
	var occ []int32
	var outerEnd int64 = math.MinInt64
	for _, i := range tl.Tracks[best].Events {
		e := &tl.Events[i]
		if e.Kind != timeline.KindRange || e.Has(timeline.FlagOpenEnd) || e.End <= e.Start || e.Start < outerEnd || libraryRange(tl.Name(e.Name)) {
			continue
		}
		outerEnd = e.End
		counts[e.Name]++
		if e.Name == bestName {
			occ = append(occ, i)
		}
	}
	steps := make([]Step, len(occ))
	// names[k] holds the repeated range names that start in step k, to
	// recognise an incomplete last cycle.
	names := make([]map[timeline.NameID]bool, len(occ))
	for k, i := range occ {
		steps[k] = Step{Start: tl.Events[i].Start, Name: tl.Name(bestName)}
		if k+1 < len(occ) {
			steps[k].End = tl.Events[occ[k+1]].Start
			continue
		}
		end := tl.Events[i].End
		for _, j := range tl.Tracks[best].Events {
			e := &tl.Events[j]
			if e.Kind == timeline.KindRange && e.Start >= steps[k].Start && counts[e.Name] >= minRepeats && !e.Has(timeline.FlagOpenEnd) {
				end = max(end, e.End)
			}
		}
		steps[k].End = ix.queuedWorkEnd(timeline.TrackID(best), steps[k].Start, end)
	}
	for _, j := range tl.Tracks[best].Events {
		e := &tl.Events[j]
		if e.Kind != timeline.KindRange || counts[e.Name] < minRepeats {
			continue
		}
		// The step that starts last at or before e (steps are sorted).
		k := sort.Search(len(steps), func(i int) bool { return steps[i].Start > e.Start }) - 1
		if k >= 0 && e.Start < steps[k].End {
			if names[k] == nil {
				names[k] = map[timeline.NameID]bool{}
			}
			names[k][e.Name] = true
		}
	}
	ix.markTeardown(steps, names)
	return best, steps, tl.Name(bestName)
}

// queuedWorkEnd extends the end of the last step to the end of the GPU work
// that its process launched within [start, end): the kernels a step queued
// belong to it even when they run after its last host range.
func (ix *Index) queuedWorkEnd(thread timeline.TrackID, start, end int64) int64 {
	tl := ix.TL
	pid := tl.Tracks[thread].PID
	out := end
	for i := range tl.Events {
		g := &tl.Events[i]
		if !g.Kind.IsGPUWork() || g.Link < 0 || g.End <= out {
			continue
		}
		if c := &tl.Events[g.Link]; c.Start >= start && c.Start < end && tl.Tracks[c.Track].PID == pid {
			out = g.End
		}
	}
	return out
}

// markTeardown flags the last of the repeated-range steps as tear-down when
// it runs over StartupFactor times the median of the others, or lacks a
// range that every other step has: the loop's last iteration (the iterator
// shutting its workers down, nothing left to prefetch, the GPU draining an
// asynchronous loop's backlog) is not a steady step. Cost: O(steps × names).
func (ix *Index) markTeardown(steps []Step, names []map[timeline.NameID]bool) {
	n := len(steps)
	if n < 3 {
		return
	}
	mark := func() {
		steps[n-1].Teardown = true
		last := steps[n-1]
		ix.Teardown = &last
	}
	// A last step that runs far longer than the others collects the loop's
	// backlog (GPU work queued by an asynchronous loop) or its shutdown.
	others := make([]int64, 0, n-1)
	for _, s := range steps[:n-1] {
		others = append(others, s.Dur())
	}
	if float64(steps[n-1].Dur()) > StartupFactor*float64(median(others)) {
		mark()
		return
	}
	for id := range names[0] {
		inAll := true
		for k := 1; k < n-1; k++ {
			if !names[k][id] {
				inAll = false
				break
			}
		}
		if inAll && !names[n-1][id] {
			mark()
			return
		}
	}
}

// libraryRange reports whether a host range was written by a library
// (NCCL's ncclAllReduce, RCCL, MPI) rather than the program's own loop:
// never a step.
func libraryRange(name string) bool {
	n := strings.ToLower(name)
	for _, p := range []string{"nccl", "rccl", "mpi_", "pmpi_"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
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

// median of v (the lower middle for even lengths); v is reordered.
func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[(len(v)-1)/2]
}
