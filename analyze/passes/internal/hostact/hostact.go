// Package hostact tells what a host thread was doing over a time window:
// in a copy call, a synchronising call, an OS call, a data-loading range,
// another named range, or uninstrumented work. Analyzers use it to explain
// GPU idle gaps by the activity of the thread that launched the work that
// ended them.
package hostact

import (
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
	OSCall
	DataRange
	NamedRange
	Uninstrumented
	NumCauses
)

var causeNames = [NumCauses]string{"copy calls", "sync calls", "OS calls", "data loading", "named ranges", "uninstrumented host work"}

func (c Cause) String() string { return causeNames[c] }

// Thread holds one thread's activity sets, disjoint by priority.
type Thread struct {
	sets [NumCauses - 1]ivl.Set
	// names[c] is the most common event name of cause c, for reports.
	names [NumCauses - 1]string
	// ranges are the named ranges, for the innermost-name lookup.
	ranges []int32
	tl     *timeline.Timeline
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
	var raw [NumCauses - 1][]ivl.Interval
	counts := [NumCauses - 1]map[timeline.NameID]int{}
	for i := range counts {
		counts[i] = map[timeline.NameID]int{}
	}
	th := &Thread{tl: tl}
	for _, i := range tl.Tracks[t].Events {
		e := &tl.Events[i]
		cause := Cause(-1)
		switch e.Kind {
		case timeline.KindAPI:
			switch {
			case e.API.IsCopy():
				cause = CopyCall
			case e.API == timeline.APISync:
				cause = SyncCall
			}
		case timeline.KindOS:
			cause = OSCall
		case timeline.KindRange:
			switch {
			case e.Range == timeline.RangeStep:
			case c.ix.IsData(e):
				cause = DataRange
			default:
				cause = NamedRange
				th.ranges = append(th.ranges, i)
			}
		}
		if cause < 0 {
			continue
		}
		raw[cause] = append(raw[cause], ivl.Interval{Start: e.Start, End: e.End})
		counts[cause][e.Name] += int(e.Dur())
	}
	var taken ivl.Set
	for k := range raw {
		s := ivl.Union(raw[k]).Subtract(taken)
		th.sets[k] = s
		taken = taken.Union(s)
		best, bestN := timeline.NameID(0), -1
		for id, n := range counts[k] {
			if n > bestN || (n == bestN && tl.Name(id) < tl.Name(best)) {
				best, bestN = id, n
			}
		}
		th.names[k] = timeline.BaseAPIName(tl.Name(best))
	}
	c.m[t] = th
	return th
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

// Name returns the dominant event name of cause c on this thread (the
// one with the most time), or "".
func (th *Thread) Name(c Cause) string {
	if c >= Uninstrumented {
		return ""
	}
	return th.names[c]
}

// InnermostRange is the name of the innermost named range covering t, or
// "": of the ranges that cover t, the one that starts last. Cost: a binary
// search, then a walk back over at most maxWalk earlier ranges.
func (th *Thread) InnermostRange(t int64) string {
	const maxWalk = 4096
	ev := th.tl.Events
	i := sort.Search(len(th.ranges), func(k int) bool { return ev[th.ranges[k]].Start > t }) - 1
	for n := 0; i >= 0 && n < maxWalk; i, n = i-1, n+1 {
		if e := &ev[th.ranges[i]]; e.End > t {
			return th.tl.Name(e.Name)
		}
	}
	return ""
}
