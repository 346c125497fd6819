package index

import (
	"cmp"
	"slices"
	"sort"

	"github.com/traceaudit/traceaudit/internal/hugepage"
	"github.com/traceaudit/traceaudit/timeline"
)

// launchTable lists the GPU work (kernels, copies, memsets) the main
// process launched, by the start of the launching call: the work's index
// in the timeline's events (4 bytes a launch: the table is as long as the
// GPU work), its call being the work's Link.
type launchTable struct {
	tl *timeline.Timeline
	l  []int32
}

// mainLaunches collects the GPU work linked to API calls of the main
// thread's process. Cost: O(n log n).
func (ix *Index) mainLaunches() launchTable {
	tl := ix.TL
	if !ix.HasMain {
		return launchTable{tl: tl}
	}
	pid := tl.Tracks[ix.Main].PID
	out := hugepage.Make[int32](0, ix.Count[timeline.KindKernel]+ix.Count[timeline.KindMemcpy]+ix.Count[timeline.KindMemset])
	for i := range tl.Events {
		e := &tl.Events[i]
		if !e.Kind.IsGPUWork() || e.Link < 0 {
			continue
		}
		c := &tl.Events[e.Link]
		if tl.Tracks[c.Track].PID != pid {
			continue
		}
		out = append(out, int32(i))
	}
	// Only the order of the calls matters (within cuts by call; span takes
	// the extremes); ties keep the timeline's order.
	ev := tl.Events
	byCall := func(a, b int32) int {
		if c := cmp.Compare(ev[ev[a].Link].Start, ev[ev[b].Link].Start); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	if !slices.IsSortedFunc(out, byCall) { // one stream's work is in call order already
		slices.SortFunc(out, byCall)
	}
	return launchTable{tl: tl, l: out}
}

// len is the number of launches in lt.
func (lt launchTable) len() int { return len(lt.l) }

// within returns the launches whose call began in [lo, hi).
func (lt launchTable) within(lo, hi int64) launchTable {
	l, ev := lt.l, lt.tl.Events
	i := sort.Search(len(l), func(k int) bool { return ev[ev[l[k]].Link].Start >= lo })
	j := i + sort.Search(len(l)-i, func(k int) bool { return ev[ev[l[i+k]].Link].Start >= hi })
	return launchTable{tl: lt.tl, l: l[i:j]}
}

// span is the first start and last end of the work in lt; ok is false when
// lt is empty.
func (lt launchTable) span() (first, last int64, ok bool) {
	if len(lt.l) == 0 {
		return 0, 0, false
	}
	ev := lt.tl.Events
	first, last = ev[lt.l[0]].Start, ev[lt.l[0]].End
	for _, w := range lt.l[1:] {
		e := &ev[w]
		first, last = min(first, e.Start), max(last, e.End)
	}
	return first, last, true
}

// firstWork is the earliest start of any launched work, or ok false.
func (lt launchTable) firstWork() (int64, bool) {
	f, _, ok := lt.span()
	return f, ok
}

// LaunchCalls is LaunchCalls of track t, kept from New where New needed
// it (the threads with repeated ranges), computed otherwise.
func (ix *Index) LaunchCalls(t timeline.TrackID) []int64 {
	if c, ok := ix.launchCalls[t]; ok {
		return c
	}
	return LaunchCalls(ix.TL, t)
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
