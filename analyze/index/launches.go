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
func (ix *Index) LaunchCalls(t timeline.TrackID) Calls {
	if c, ok := ix.launchCalls[t]; ok {
		return c
	}
	return LaunchCalls(ix.TL, t)
}

// Calls lists the API calls of one host thread that launched GPU work,
// in order of start: their indexes in the timeline's events (4 bytes a
// call; a thread may make hundreds of thousands).
type Calls struct {
	tl *timeline.Timeline
	ev []int32
}

// Len is the number of calls.
func (c Calls) Len() int { return len(c.ev) }

// AnyIn reports whether one of the calls starts in [lo, hi). Cost:
// O(log n).
func (c Calls) AnyIn(lo, hi int64) bool {
	ev := c.tl.Events
	i := sort.Search(len(c.ev), func(k int) bool { return ev[c.ev[k]].Start >= lo })
	return i < len(c.ev) && ev[c.ev[i]].Start < hi
}

// LaunchCalls returns host track t's API calls that launched GPU work.
// Cost: O(k) for the k events of the track, one allocation.
func LaunchCalls(tl *timeline.Timeline, t timeline.TrackID) Calls {
	evs := tl.Tracks[t].Events
	n := 0
	for _, i := range evs {
		if e := &tl.Events[i]; e.Kind == timeline.KindAPI && e.Link >= 0 {
			n++
		}
	}
	if n == 0 {
		return Calls{tl: tl}
	}
	out := hugepage.Make[int32](0, n)
	for _, i := range evs {
		if e := &tl.Events[i]; e.Kind == timeline.KindAPI && e.Link >= 0 {
			out = append(out, i) // a track's events are sorted by start
		}
	}
	return Calls{tl: tl, ev: out}
}
