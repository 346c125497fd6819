package index

import (
	"fmt"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/timeline"
)

// minRepeats is how often a host range must repeat on one thread to define
// steps.
const minRepeats = 3

// IsLibraryRange reports whether a host range was written by a library, a
// framework or a profiler rather than by the program's own loop: NCCL's and
// RCCL's ranges (ncclAllReduce, ...), MPI's (MPI_Send, PMPI_...), CUDA
// libraries' (cudnn*, cublas*), per-operator markers (C++-qualified names
// such as aten::add or Fusion::resetTvUses; emit_nvtx's "op, seq = 12";
// Python frames "file.py(12): fn"). Such ranges never define steps.
func IsLibraryRange(name string) bool {
	lower := strings.ToLower(name)
	for _, p := range []string{"nccl", "rccl", "mpi_", "pmpi_", "cudnn", "cublas", "cufft", "cusparse", "nvshmem", "ucx"} {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	return strings.Contains(name, "::") || strings.Contains(name, ", seq = ") || strings.Contains(name, ", op_id = ") ||
		strings.Contains(name, ".py(")
}

// picked is what the step rules found: the thread holding the steps (-1:
// none), the steps, where they came from, and for repeated ranges whether
// the last cycle lacks a range every other cycle has.
type picked struct {
	thread         int
	steps          []Step
	source         string
	repeated       bool
	lastIncomplete bool
}

// pickSteps applies design.md's rules 1 to 3: --step-range, ProfilerStep#N,
// then the earliest repeated host range whose cycles launch GPU work.
func (ix *Index) pickSteps(cfg *analyze.Config, apiCalls []int) picked {
	tl := ix.TL
	if cfg.StepRange != nil {
		t, steps := ix.rangeSteps(apiCalls, func(e *timeline.Event) bool {
			return e.Kind == timeline.KindRange && cfg.StepRange.MatchString(tl.Name(e.Name))
		})
		return picked{thread: t, steps: steps, source: "step-range"}
	}
	t, steps := ix.rangeSteps(apiCalls, func(e *timeline.Event) bool {
		return e.Kind == timeline.KindRange && e.Range == timeline.RangeStep
	})
	if len(steps) > 0 {
		return picked{thread: t, steps: steps, source: "ProfilerStep"}
	}
	return ix.repeatedSteps(apiCalls)
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

// topRanges lists a thread's top-level ranges in time order, leaving out
// library ranges (they never nest the user's phases) and ranges without
// an end: only top-level ranges define steps, as a range nested in another
// (an internal phase of a bigger one) would cut steps into slivers.
func (ix *Index) topRanges(t timeline.TrackID) []int32 {
	tl := ix.TL
	var out []int32
	outerEnd := int64(-1 << 62)
	for _, i := range tl.Tracks[t].Events {
		e := &tl.Events[i]
		if e.Kind != timeline.KindRange || e.Has(timeline.FlagOpenEnd) || e.End <= e.Start || e.Start < outerEnd {
			continue
		}
		if ix.isLibrary(e.Name) {
			continue
		}
		outerEnd = e.End
		out = append(out, i)
	}
	return out
}

// isLibrary is IsLibraryRange, evaluated once per name.
func (ix *Index) isLibrary(id timeline.NameID) bool {
	if ix.libName == nil {
		ix.libName = make([]uint8, ix.TL.NumNames())
	}
	if int(id) >= len(ix.libName) {
		return IsLibraryRange(ix.TL.Name(id))
	}
	if ix.libName[id] == 0 {
		ix.libName[id] = 2
		if IsLibraryRange(ix.TL.Name(id)) {
			ix.libName[id] = 1
		}
	}
	return ix.libName[id] == 1
}

// candidate picks, among one thread's top-level ranges, the name repeated
// at least minRepeats times whose cycles (occurrence to occurrence) launch
// GPU work on that thread in at least half the cycles, and whose first
// occurrence is the earliest (ties: the smaller name).
func (ix *Index) candidate(tops []int32, calls Calls) (timeline.NameID, bool) {
	tl := ix.TL
	occ := map[timeline.NameID][]int32{}
	for _, i := range tops {
		occ[tl.Events[i].Name] = append(occ[tl.Events[i].Name], i)
	}
	var pick timeline.NameID
	var pickFirst int64
	found := false
	for id, list := range occ {
		if len(list) < minRepeats || !launchesInCycles(tl, list, calls) {
			continue
		}
		first := tl.Events[list[0]].Start
		if !found || first < pickFirst || (first == pickFirst && tl.Name(id) < tl.Name(pick)) {
			pick, pickFirst, found = id, first, true
		}
	}
	return pick, found
}

// launchesInCycles reports whether at least half of the cycles that the
// occurrences cut (the last one runs to its own end) hold a launch call.
func launchesInCycles(tl *timeline.Timeline, occ []int32, calls Calls) bool {
	with := 0
	for k, i := range occ {
		end := tl.Events[i].End
		if k+1 < len(occ) {
			end = tl.Events[occ[k+1]].Start
		}
		if calls.AnyIn(tl.Events[i].Start, end) {
			with++
		}
	}
	return 2*with >= len(occ)
}

// repeatedSteps is rule 3: on the thread with a candidate and the most API
// calls, step k runs from occurrence k of the candidate to occurrence k+1;
// the last runs to the end of the last repeated range that starts within
// it (its own end when none does), extended to the end of the GPU work it
// launched.
func (ix *Index) repeatedSteps(apiCalls []int) picked {
	tl := ix.TL
	best := -1
	var bestName timeline.NameID
	var bestTops []int32
	for t := range tl.Tracks {
		if tl.Tracks[t].Kind != timeline.TrackHost {
			continue
		}
		tops := ix.topRanges(timeline.TrackID(t))
		if len(tops) < minRepeats {
			continue // no name can repeat often enough
		}
		calls := LaunchCalls(tl, timeline.TrackID(t))
		ix.launchCalls[timeline.TrackID(t)] = calls
		name, ok := ix.candidate(tops, calls)
		if ok && (best < 0 || apiCalls[t] > apiCalls[best]) {
			best, bestName, bestTops = t, name, tops
		}
	}
	if best < 0 {
		return picked{thread: -1}
	}
	steps, incomplete := ix.cutCycles(timeline.TrackID(best), bestTops, bestName)
	return picked{thread: best, steps: steps, repeated: true, lastIncomplete: incomplete,
		source: fmt.Sprintf("repeated range %q", tl.Name(bestName))}
}

// cutCycles cuts steps at the occurrences of name among a thread's
// top-level ranges, and says whether the last cycle lacks a repeated range
// that every other cycle holds (the loop's last, incomplete iteration).
func (ix *Index) cutCycles(thread timeline.TrackID, tops []int32, name timeline.NameID) ([]Step, bool) {
	tl := ix.TL
	counts := map[timeline.NameID]int{}
	var occ []int // positions in tops
	for k, i := range tops {
		counts[tl.Events[i].Name]++
		if tl.Events[i].Name == name {
			occ = append(occ, k)
		}
	}
	steps := make([]Step, len(occ))
	names := make([]map[timeline.NameID]bool, len(occ))
	for k, pos := range occ {
		e := &tl.Events[tops[pos]]
		steps[k] = Step{Start: e.Start, End: e.End, Name: tl.Name(name)}
		stop := len(tops)
		if k+1 < len(occ) {
			stop = occ[k+1]
			steps[k].End = tl.Events[tops[stop]].Start
		}
		names[k] = map[timeline.NameID]bool{}
		for _, i := range tops[pos:stop] {
			r := &tl.Events[i]
			if counts[r.Name] >= minRepeats {
				names[k][r.Name] = true
				if k+1 == len(occ) {
					steps[k].End = max(steps[k].End, r.End)
				}
			}
		}
	}
	last := &steps[len(steps)-1]
	last.End = ix.queuedWorkEnd(thread, last.Start, last.End)
	return steps, lacksCommonRange(names)
}

// lacksCommonRange reports whether the last cycle lacks a range name that
// every other cycle holds.
func lacksCommonRange(names []map[timeline.NameID]bool) bool {
	n := len(names)
	if n < minRepeats {
		return false
	}
	for id := range names[0] {
		inAll := true
		for k := 1; k < n-1 && inAll; k++ {
			inAll = names[k][id]
		}
		if inAll && !names[n-1][id] {
			return true
		}
	}
	return false
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
