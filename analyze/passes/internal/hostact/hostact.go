// Package hostact tells what a host thread was doing over a time window:
// in a copy call, a synchronising call, a memory allocation call, an OS
// call, a data-loading range, a file read, another named range, a host operator
// (cpu_op, python_function), or uninstrumented work. Analyzers use it to
// explain GPU idle gaps by the activity of the thread that launched the
// work that ended them.
package hostact

import (
	"cmp"
	"slices"
	"sort"

	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/timeline"
)

// Cause is what a host thread did, in priority order (innermost cause
// first: time a data range spends in a copy call is copy time).
type Cause int

// Causes.
const (
	CopyCall Cause = iota
	SyncCall
	// AllocCall is a device or pinned memory allocation or free
	// (cudaMalloc, cudaFree, hipFree, cuMemAlloc, cudaHostAlloc).
	AllocCall
	// OSCall is an OS call that manages host memory (munmap, madvise,
	// brk, mmap, mprotect: index.IsMemoryOSCall), as the step split's os
	// bucket counts.
	OSCall
	DataRange
	// FileRead is a file read (timeline.IsFileRead: read, pread64,
	// io_uring_enter) outside a data range: the input coming off storage
	// on the thread itself (storage-read's time).
	FileRead
	// ReadWork is host time after a read-back (.item(), .cpu(): a
	// device-to-host copy into memory not pinned, and its wait) until the
	// thread's next CUDA call, within the named range that holds the read
	// ("log metrics"): work on the values read back, which the GPU has
	// nothing queued for (the sync-api analyzer's cost beyond the wait).
	// Outside such a range the trace does not say whose work it is.
	ReadWork
	NamedRange
	// OSWait is any other OS call (sem_clockwait, poll, read, ioctl)
	// outside a data or named range: inside one, the range names what the
	// thread waits for (a DataLoader worker's batch in "get batch").
	OSWait
	// HostOp is a host operator outside any named range: a cpu_op or a
	// python_function (PyTorch profiler traces).
	HostOp
	Uninstrumented
	NumCauses
)

var causeNames = [NumCauses]string{"copy calls", "sync calls", "allocation calls", "OS calls", "data loading", "file reads",
	"work on values read back", "named ranges", "OS waits",
	"host operators", "uninstrumented host work"}

func (c Cause) String() string { return causeNames[c] }

// Thread holds one thread's activity sets, disjoint by priority.
type Thread struct {
	sets [NumCauses - 1]ivl.Set
	// named[c] are the events of cause c (sorted by start) with the
	// running maximum of their ends, to name what a window held.
	named [NumCauses - 1]namedList
	// ranges are the named ranges and ops the host operators, for the
	// innermost-name lookups, with the index in the same list of each
	// one's enclosing event (-1: none).
	ranges, ops           []int32
	rangeParent, opParent []int32
	// launches are the thread's API calls that launched GPU work.
	launches index.Calls
	tl       *timeline.Timeline
}

// Split is time per cause in nanoseconds.
type Split [NumCauses]int64

// Top returns the cause with the most time.
func (s Split) Top() Cause {
	best := Cause(0)
	for c := Cause(1); c < NumCauses; c++ {
		if s[c] > s[best] {
			best = c
		}
	}
	return best
}

// Cache builds Threads on first use.
type Cache struct {
	ix *index.Index
	m  map[timeline.TrackID]*Thread
}

// NewCache returns an empty cache.
func NewCache(ix *index.Index) *Cache {
	return &Cache{ix: ix, m: map[timeline.TrackID]*Thread{}}
}

// Thread returns track t's activity. Cost: O(k log k) for the k events of
// the thread, once.
func (c *Cache) Thread(t timeline.TrackID) *Thread {
	if th := c.m[t]; th != nil {
		return th
	}
	tl := c.ix.TL
	evs := tl.Tracks[t].Events
	// Count first, so that each list is allocated once at its size.
	var n [NumCauses - 1]int
	nRanges, nOps := 0, 0
	for _, i := range evs {
		e := &tl.Events[i]
		switch cause, isCopy := c.cause(e); {
		case isCopy:
			n[CopyCall]++
			n[SyncCall] += 2
		case cause >= 0:
			n[cause]++
			nRanges += b2i(cause == NamedRange)
			nOps += b2i(cause == HostOp)
		}
	}
	var raw [NumCauses - 1][]ivl.Interval
	var names [NumCauses - 1][]timeline.NameID
	for k := range raw {
		raw[k] = make([]ivl.Interval, 0, n[k])
		names[k] = make([]timeline.NameID, 0, n[k])
	}
	th := &Thread{tl: tl, launches: c.ix.LaunchCalls(t), ranges: make([]int32, 0, nRanges), ops: make([]int32, 0, nOps)}
	var reads readWork
	for _, i := range evs {
		e := &tl.Events[i]
		cause, isCopy := c.cause(e)
		if cause == NamedRange {
			reads.open(e)
		}
		if e.Kind == timeline.KindAPI {
			if iv, name, ok := reads.call(tl, e); ok {
				raw[ReadWork] = append(raw[ReadWork], iv)
				names[ReadWork] = append(names[ReadWork], name)
			}
		}
		switch {
		case isCopy:
			// The call's waits for queued work (before its transfer) or
			// for completion (after it) are sync time, as in the
			// two-clock split: pinning would not remove them.
			part, waits := index.SplitCopyCall(tl, e)
			raw[CopyCall] = append(raw[CopyCall], part)
			names[CopyCall] = append(names[CopyCall], e.Name)
			for _, w := range waits {
				raw[SyncCall] = append(raw[SyncCall], w)
				names[SyncCall] = append(names[SyncCall], e.Name)
			}
			continue
		case cause < 0:
			continue
		case cause == HostOp:
			th.ops = append(th.ops, i)
		case cause == NamedRange:
			th.ranges = append(th.ranges, i)
		}
		raw[cause] = append(raw[cause], ivl.Interval{Start: e.Start, End: e.End})
		names[cause] = append(names[cause], e.Name)
	}
	var unions [NumCauses - 1]ivl.Set
	for k := range raw {
		th.named[k] = newNamedList(raw[k], names[k])
		unions[k] = ivl.UnionOf(th.named[k].ivs)
	}
	// Disjoint by priority: each cause less the causes before it.
	copy(th.sets[:], ivl.Layers(unions[:]...))
	th.rangeParent, th.opParent = parents(tl, th.ranges), parents(tl, th.ops)
	c.m[t] = th
	return th
}

// cause is the cause host event e counts for (-1: none), or isCopy for a
// copy call, whose time divides between CopyCall and SyncCall.
func (c *Cache) cause(e *timeline.Event) (cause Cause, isCopy bool) {
	switch e.Kind {
	case timeline.KindAPI:
		switch {
		case e.API.IsCopy():
			return -1, true
		case e.API == timeline.APISync:
			return SyncCall, false
		case e.API == timeline.APIAlloc:
			return AllocCall, false
		}
	case timeline.KindOp:
		return HostOp, false
	case timeline.KindOS:
		switch name := c.ix.TL.Name(e.Name); {
		case index.IsMemoryOSCall(name):
			return OSCall, false
		case timeline.IsFileRead(name):
			return FileRead, false
		}
		return OSWait, false
	case timeline.KindRange:
		switch {
		case e.Range == timeline.RangeStep:
		case c.ix.IsData(e):
			return DataRange, false
		default:
			return NamedRange, false
		}
	}
	return -1, false
}

// readWork follows a thread's named ranges and CUDA calls in time order
// to find the host time after each read-back until the next call, as the
// step model's graph reads its calls (a call nested in the previous one is
// skipped), within the innermost named range that holds the read.
type readWork struct {
	ranges   []*timeline.Event // the named ranges open, outermost first
	last     *timeline.Event   // the previous call
	lastRead bool              // whether it read back (or waited for a read-back)
	end      int64             // the latest end of the calls so far
	readEnd  int64             // where the last read-back's wait ended
	ctxEnd   int64             // and where the range that holds it ends (0: none)
	readName timeline.NameID   // the read's call
}

// open takes the thread's next named range.
func (r *readWork) open(e *timeline.Event) {
	r.pop(e.Start)
	r.ranges = append(r.ranges, e)
}

// pop closes the ranges that end by t.
func (r *readWork) pop(t int64) {
	for len(r.ranges) > 0 && r.ranges[len(r.ranges)-1].End <= t {
		r.ranges = r.ranges[:len(r.ranges)-1]
	}
}

// call takes the thread's next CUDA call e and returns the host time
// between a read-back and e, if e follows one, named for the read.
func (r *readWork) call(tl *timeline.Timeline, e *timeline.Event) (ivl.Interval, timeline.NameID, bool) {
	if r.last != nil && e.Start < r.end && e.Link < 0 {
		return ivl.Interval{}, 0, false
	}
	read := index.ReadsBack(tl, e, r.last, r.lastRead)
	var iv ivl.Interval
	name, ok := r.readName, false
	if end := min(e.Start, r.ctxEnd); !read && r.lastRead && end > r.readEnd {
		iv, ok = ivl.Interval{Start: r.readEnd, End: end}, true
	}
	r.last, r.lastRead, r.end = e, read, max(r.end, e.End)
	if read {
		r.pop(e.Start)
		r.readEnd, r.readName, r.ctxEnd = e.End, e.Name, 0
		if n := len(r.ranges); n > 0 {
			r.ctxEnd = r.ranges[n-1].End
		}
	}
	return iv, name, ok
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parents returns, for each event of list (sorted by start, enclosing
// events first), the position in list of the innermost event that
// encloses it, or -1. Cost: O(len(list)).
func parents(tl *timeline.Timeline, list []int32) []int32 {
	out := make([]int32, len(list))
	var stack []int32
	for k, i := range list {
		e := &tl.Events[i]
		for len(stack) > 0 && tl.Events[list[stack[len(stack)-1]]].End < e.End {
			stack = stack[:len(stack)-1]
		}
		out[k] = -1
		if len(stack) > 0 {
			out[k] = stack[len(stack)-1]
		}
		stack = append(stack, int32(k))
	}
	return out
}

// Split says how [lo, hi) divides among the causes on this thread.
func (th *Thread) Split(lo, hi int64) Split {
	var s Split
	rest := hi - lo
	for k := range th.sets {
		s[k] = th.sets[k].Covered(lo, hi)
		rest -= s[k]
	}
	s[Uninstrumented] = max(rest, 0)
	return s
}

// NameIn returns the name of the events of cause c with the most time in
// [lo, hi) (API names without their version suffix; ties: the outer of
// nested events, then the smaller name), or "": what this window held,
// not the thread's whole trace (a gap in a cudaMemcpyAsync's wait is
// named for it, not for the trace's one cudaDeviceSynchronize). Cost:
// O(log n + the events overlapping).
func (th *Thread) NameIn(c Cause, lo, hi int64) string {
	if c >= Uninstrumented {
		return ""
	}
	l := &th.named[c]
	type time struct {
		ivs   []ivl.Interval
		in    int64
		first int64
	}
	by := map[timeline.NameID]*time{}
	for k := sort.Search(len(l.ivs), func(k int) bool { return l.ivs[k].Start >= hi }) - 1; k >= 0 && l.maxEnd[k] > lo; k-- {
		if s, e := max(l.ivs[k].Start, lo), min(l.ivs[k].End, hi); e > s {
			t := by[l.names[k]]
			if t == nil {
				t = &time{}
				by[l.names[k]] = t
			}
			t.ivs = append(t.ivs, ivl.Interval{Start: s, End: e})
			t.first = l.ivs[k].Start // k descends: the earliest start last
		}
	}
	best, bt := "", &time{}
	for id, t := range by {
		t.in = ivl.Union(t.ivs).Len() // nested events of one name count once
		n := timeline.BaseAPIName(th.tl.Name(id))
		// Ties (nested ranges): the outer one, which starts first.
		if best == "" || t.in > bt.in || (t.in == bt.in && (t.first < bt.first || (t.first == bt.first && n < best))) {
			best, bt = n, t
		}
	}
	return best
}

// namedList is a cause's events, sorted by start, with their names and
// the running maximum of their ends.
type namedList struct {
	ivs    []ivl.Interval
	names  []timeline.NameID
	maxEnd []int64
}

// It keeps ivs and names, which a thread's events in time order give
// already sorted, and sorts copies of them otherwise.
func newNamedList(ivs []ivl.Interval, names []timeline.NameID) namedList {
	byStart := func(a, b ivl.Interval) int { return cmp.Compare(a.Start, b.Start) }
	l := namedList{ivs: ivs, names: names, maxEnd: make([]int64, len(ivs))}
	if !slices.IsSortedFunc(ivs, byStart) {
		idx := make([]int32, len(ivs))
		for i := range idx {
			idx[i] = int32(i)
		}
		slices.SortStableFunc(idx, func(a, b int32) int { return byStart(ivs[a], ivs[b]) })
		l.ivs, l.names = make([]ivl.Interval, len(ivs)), make([]timeline.NameID, len(ivs))
		for k, i := range idx {
			l.ivs[k], l.names[k] = ivs[i], names[i]
		}
	}
	for k, iv := range l.ivs {
		l.maxEnd[k] = iv.End
		if k > 0 {
			l.maxEnd[k] = max(l.maxEnd[k], l.maxEnd[k-1])
		}
	}
	return l
}

// RangeLaunches reports whether ranges of that name on this thread
// launch GPU work (a forward pass does; a "log metrics" range does not).
func (th *Thread) RangeLaunches(name string) bool { return th.launchesIn(th.ranges, name) }

// OpLaunches reports whether host operators of that name on this thread
// launch GPU work (aten::cudnn_convolution does; a preprocessing function
// in Python does not).
func (th *Thread) OpLaunches(name string) bool { return th.launchesIn(th.ops, name) }

// launchesIn reports whether an event of list with that name holds a
// launch call.
func (th *Thread) launchesIn(list []int32, name string) bool {
	for _, i := range list {
		e := &th.tl.Events[i]
		if th.tl.Name(e.Name) != name {
			continue
		}
		if th.launches.AnyIn(e.Start, e.End) {
			return true
		}
	}
	return false
}

// InnermostRange is the name of the innermost named range covering t, or
// "".
func (th *Thread) InnermostRange(t int64) string {
	name, _ := innermost(th.tl, th.ranges, th.rangeParent, t, t, t+1)
	return name
}

// InnermostOp is the name of the innermost host operator (cpu_op,
// python_function) that covers at least half of [lo, hi), or "": what the
// host was running through most of a gap, at the deepest level that still
// spans it (a preprocessing function rather than the interpreter's main).
func (th *Thread) InnermostOp(lo, hi int64) string {
	name, _ := th.InnermostOpIn(lo, hi)
	return name
}

// InnermostOpIn is InnermostOp with the time the operator covers of
// [lo, hi) (0 with "").
func (th *Thread) InnermostOpIn(lo, hi int64) (string, int64) {
	return innermost(th.tl, th.ops, th.opParent, lo+(hi-lo)/2, lo, hi)
}

// innermost returns the name of the innermost event of list (sorted by
// start, nested, with parent links) that covers t and at least half of
// [lo, hi), and the time it covers of [lo, hi). Cost: a binary search,
// then a walk up the enclosing events.
func innermost(tl *timeline.Timeline, list, parent []int32, t, lo, hi int64) (string, int64) {
	ev := tl.Events
	k := int32(sort.Search(len(list), func(k int) bool { return ev[list[k]].Start > t }) - 1)
	for ; k >= 0; k = parent[k] {
		e := &ev[list[k]]
		if in := min(e.End, hi) - max(e.Start, lo); e.End > t && 2*in >= hi-lo {
			return tl.Name(e.Name), in
		}
	}
	return "", 0
}
