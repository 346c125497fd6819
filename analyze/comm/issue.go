package comm

import (
	"regexp"
	"slices"

	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/timeline"
)

// issueRange matches the host ranges and operators that issue a collective:
// PyTorch's c10d operators and record_param_comms, its nccl:* annotations,
// NCCL's and RCCL's own NVTX ranges (ncclAllReduce, ...).
var issueRange = regexp.MustCompile(`^(c10d::|nccl|rccl|record_param_comms)|ProcessGroupNCCL`)

// IssueTime is the host time that issues ops: per issuing thread, the
// outermost issue ranges that hold a collective's launch call, else the
// call itself, and each collective's part of it (its call's, or an equal
// share of the range that launched it with others). Cost: O(c log r) over
// the collectives and the threads' ranges.
func IssueTime(tl *timeline.Timeline, ops []*Op) (spans map[timeline.TrackID]ivl.Set, per []int64) {
	issue := map[timeline.TrackID]*thread{}
	var order []timeline.TrackID
	for _, o := range ops {
		e := &tl.Events[o.Event]
		if e.Link < 0 {
			continue
		}
		call := &tl.Events[e.Link]
		th := issue[call.Track]
		if th == nil {
			th = newThread(tl, call.Track)
			issue[call.Track] = th
			order = append(order, call.Track)
		}
		th.add(call)
	}
	spans = map[timeline.TrackID]ivl.Set{}
	for _, t := range order {
		th := issue[t]
		per = th.perCollective(per)
		spans[t] = ivl.Union(th.used)
	}
	return spans, per
}

// thread finds the issue ranges around one host thread's launch calls.
type thread struct {
	tl     *timeline.Timeline
	ranges []ivl.Interval // the thread's outermost issue ranges, in start order
	used   []ivl.Interval // the spans counted: issue ranges holding a collective launch, or the calls
	calls  []int64        // the durations of launch calls outside any issue range
	count  map[int]int    // collectives launched in each issue range, by index in ranges
}

func newThread(tl *timeline.Timeline, t timeline.TrackID) *thread {
	th := &thread{tl: tl, count: map[int]int{}}
	// The track's events are in start order: a range that starts inside
	// the current outermost one is nested in it (or, malformed, extends it);
	// ranges that only touch stay apart, one issue each.
	for _, i := range tl.Tracks[t].Events {
		e := &tl.Events[i]
		if (e.Kind != timeline.KindRange && e.Kind != timeline.KindOp) || e.End <= e.Start || !issueRange.MatchString(tl.Name(e.Name)) {
			continue
		}
		if n := len(th.ranges); n > 0 && e.Start < th.ranges[n-1].End {
			th.ranges[n-1].End = max(th.ranges[n-1].End, e.End)
			continue
		}
		th.ranges = append(th.ranges, ivl.Interval{Start: e.Start, End: e.End})
	}
	return th
}

// add counts call, the launch of one collective: in the issue range around
// it (the range counted once), else on its own.
func (th *thread) add(call *timeline.Event) {
	i, ok := slices.BinarySearchFunc(th.ranges, call.Start, func(iv ivl.Interval, t int64) int {
		switch {
		case iv.End <= t:
			return -1
		case iv.Start > t:
			return 1
		}
		return 0
	})
	if !ok {
		iv := ivl.Interval{Start: call.Start, End: call.End}
		th.used = append(th.used, iv)
		th.calls = append(th.calls, iv.Len())
		return
	}
	if th.count[i] == 0 {
		th.used = append(th.used, th.ranges[i])
	}
	th.count[i]++
}

// perCollective appends to per each counted collective's issue time: its
// call's, or an equal share of its issue range.
func (th *thread) perCollective(per []int64) []int64 {
	per = append(per, th.calls...)
	keys := make([]int, 0, len(th.count))
	for i := range th.count {
		keys = append(keys, i)
	}
	slices.Sort(keys)
	for _, i := range keys {
		n := th.count[i]
		share := th.ranges[i].Len() / int64(n)
		for range n {
			per = append(per, share)
		}
	}
	return per
}
