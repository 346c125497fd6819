package index

import (
	"cmp"
	"slices"
	"sort"

	"github.com/traceaudit/traceaudit/internal/hugepage"
	"github.com/traceaudit/traceaudit/timeline"
)

// launch is one piece of GPU work (kernel, copy, memset) that a host API
// call of the main process launched: when the call began, and when the work
// ran.
type launch struct {
	call       int64 // start of the launching API call
	start, end int64 // the GPU work
}

// launchTable lists the GPU work the main process launched, by call start.
type launchTable []launch

// mainLaunches collects the GPU work linked to API calls of the main
// thread's process. Cost: O(n log n).
func (ix *Index) mainLaunches() launchTable {
	if !ix.HasMain {
		return nil
	}
	tl := ix.TL
	pid := tl.Tracks[ix.Main].PID
	out := launchTable(hugepage.Make[launch](0, ix.Count[timeline.KindKernel]+ix.Count[timeline.KindMemcpy]+ix.Count[timeline.KindMemset]))
	for i := range tl.Events {
		e := &tl.Events[i]
		if !e.Kind.IsGPUWork() || e.Link < 0 {
			continue
		}
		c := &tl.Events[e.Link]
		if tl.Tracks[c.Track].PID != pid {
			continue
		}
		out = append(out, launch{call: c.Start, start: e.Start, end: e.End})
	}
	byCall := func(a, b launch) int {
		switch {
		case a.call != b.call:
			return cmp.Compare(a.call, b.call)
		case a.start != b.start:
			return cmp.Compare(a.start, b.start)
		}
		return cmp.Compare(a.end, b.end)
	}
	if !slices.IsSortedFunc(out, byCall) { // one stream's work is in call order already
		slices.SortFunc(out, byCall)
	}
	return out
}

// within returns the launches whose call began in [lo, hi).
func (lt launchTable) within(lo, hi int64) launchTable {
	i := sort.Search(len(lt), func(k int) bool { return lt[k].call >= lo })
	j := sort.Search(len(lt), func(k int) bool { return lt[k].call >= hi })
	return lt[i:j]
}

// span is the first start and last end of the work in lt; ok is false when
// lt is empty.
func (lt launchTable) span() (first, last int64, ok bool) {
	if len(lt) == 0 {
		return 0, 0, false
	}
	first, last = lt[0].start, lt[0].end
	for _, l := range lt[1:] {
		first, last = min(first, l.start), max(last, l.end)
	}
	return first, last, true
}

// firstWork is the earliest start of any launched work, or ok false.
func (lt launchTable) firstWork() (int64, bool) {
	f, _, ok := lt.span()
	return f, ok
}

// LaunchCalls returns the sorted start times of host track t's API calls
// that launched GPU work. Cost: O(k) for the k events of the track, one
// allocation.
func LaunchCalls(tl *timeline.Timeline, t timeline.TrackID) []int64 {
	evs := tl.Tracks[t].Events
	n := 0
	for _, i := range evs {
		if e := &tl.Events[i]; e.Kind == timeline.KindAPI && e.Link >= 0 {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := hugepage.Make[int64](0, n)
	for _, i := range evs {
		if e := &tl.Events[i]; e.Kind == timeline.KindAPI && e.Link >= 0 {
			out = append(out, e.Start) // a track's events are sorted by start
		}
	}
	return out
}

// anyIn reports whether sorted times holds a value in [lo, hi).
func anyIn(times []int64, lo, hi int64) bool {
	i := sort.Search(len(times), func(k int) bool { return times[k] >= lo })
	return i < len(times) && times[i] < hi
}
