// Package ivl is interval arithmetic on the nanosecond clock: unions,
// intersections, differences and coverage queries over sorted, disjoint
// interval sets. Every operation is a linear merge or a binary search, so
// analyzers built on it run in O(n log n) overall.
package ivl

import (
	"cmp"
	"iter"
	"math"
	"slices"
	"sort"

	"github.com/traceaudit/traceaudit/internal/hugepage"
)

// Interval is the half-open time range [Start, End) in nanoseconds.
type Interval struct{ Start, End int64 }

// Len is the interval's length in nanoseconds (0 when empty or inverted).
func (iv Interval) Len() int64 {
	if iv.End > iv.Start {
		return iv.End - iv.Start
	}
	return 0
}

// Set is a sorted list of disjoint, non-touching, non-empty intervals.
type Set []Interval

// Union sorts ivs in place and merges overlapping or touching intervals
// into a Set. Empty intervals are dropped. Cost: O(n log n), O(n) when ivs
// is already in order of start (intervals collected from events usually
// are: the sort is skipped).
func Union(ivs []Interval) Set {
	byStart := func(a, b Interval) int { return cmp.Compare(a.Start, b.Start) }
	if !slices.IsSortedFunc(ivs, byStart) {
		slices.SortFunc(ivs, byStart)
	}
	out := ivs[:0]
	for _, iv := range ivs {
		if iv.End <= iv.Start {
			continue
		}
		if n := len(out); n > 0 && iv.Start <= out[n-1].End {
			if iv.End > out[n-1].End {
				out[n-1].End = iv.End
			}
			continue
		}
		out = append(out, iv)
	}
	return Set(out)
}

// UnionOf is Union of ivs, sorted by start, left as they are: the merged
// intervals are counted first and the set allocated at its size. Cost:
// O(n).
func UnionOf(ivs []Interval) Set {
	merge := func(emit func(Interval)) {
		var cur Interval
		open := false
		for _, iv := range ivs {
			switch {
			case iv.End <= iv.Start:
			case open && iv.Start <= cur.End:
				cur.End = max(cur.End, iv.End)
			default:
				if open {
					emit(cur)
				}
				cur, open = iv, true
			}
		}
		if open {
			emit(cur)
		}
	}
	n := 0
	merge(func(Interval) { n++ })
	out := newSet(n)
	merge(func(iv Interval) { out = append(out, iv) })
	return out
}

// Union returns s ∪ o by a linear merge. Cost: O(len(s) + len(o)); when
// one of them is empty the result is the other itself, not a copy (with
// its capacity cut to its length, so that an append to it copies).
func (s Set) Union(o Set) Set {
	switch {
	case len(o) == 0:
		return s[:len(s):len(s)]
	case len(s) == 0:
		return o[:len(o):len(o)]
	}
	out := newSet(len(s) + len(o))
	i, j := 0, 0
	for i < len(s) || j < len(o) {
		var iv Interval
		if j >= len(o) || (i < len(s) && s[i].Start <= o[j].Start) {
			iv, i = s[i], i+1
		} else {
			iv, j = o[j], j+1
		}
		if n := len(out); n > 0 && iv.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, iv.End)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// Sweep measures the union of intervals given in order of start without
// building it: Len and Bounds are those of Union's result. Cost: O(1) per
// interval, no memory.
type Sweep struct {
	cur          Interval
	have         bool
	total, first int64
}

// Add adds iv, whose start is no earlier than any added before.
func (w *Sweep) Add(iv Interval) {
	if iv.End <= iv.Start {
		return
	}
	switch {
	case !w.have:
		w.cur, w.have, w.first = iv, true, iv.Start
	case iv.Start <= w.cur.End:
		w.cur.End = max(w.cur.End, iv.End)
	default:
		w.total += w.cur.End - w.cur.Start
		w.cur = iv
	}
}

// Len is the union's length in nanoseconds.
func (w *Sweep) Len() int64 {
	if !w.have {
		return 0
	}
	return w.total + w.cur.End - w.cur.Start
}

// Bounds is the union's first start and last end; ok is false when it is
// empty.
func (w *Sweep) Bounds() (lo, hi int64, ok bool) { return w.first, w.cur.End, w.have }

// Len is the total length of the set in nanoseconds.
func (s Set) Len() int64 {
	var n int64
	for _, iv := range s {
		n += iv.End - iv.Start
	}
	return n
}

// Bounds returns the first start and the last end (0, 0 for an empty set).
func (s Set) Bounds() (int64, int64) {
	if len(s) == 0 {
		return 0, 0
	}
	return s[0].Start, s[len(s)-1].End
}

// Intersect returns s ∩ o. Cost: O(len(s) + len(o)); the result is
// counted first and allocated once at its size (not at the larger
// operand's).
func (s Set) Intersect(o Set) Set {
	n := 0
	s.meet(o, func(Interval) { n++ })
	out := newSet(n)
	s.meet(o, func(iv Interval) { out = append(out, iv) })
	return out
}

// meet calls emit for each interval of s ∩ o, in order.
func (s Set) meet(o Set, emit func(Interval)) {
	i, j := 0, 0
	for i < len(s) && j < len(o) {
		a, b := s[i], o[j]
		if lo, hi := max(a.Start, b.Start), min(a.End, b.End); lo < hi {
			emit(Interval{lo, hi})
		}
		if a.End < b.End {
			i++
		} else {
			j++
		}
	}
}

// OverlapLen is the length of s ∩ o, without building it. Cost:
// O(len(s) + len(o)).
func (s Set) OverlapLen(o Set) int64 {
	var n int64
	i, j := 0, 0
	for i < len(s) && j < len(o) {
		a, b := s[i], o[j]
		if lo, hi := max(a.Start, b.Start), min(a.End, b.End); lo < hi {
			n += hi - lo
		}
		if a.End < b.End {
			i++
		} else {
			j++
		}
	}
	return n
}

// Subtract returns s \ o. Cost: O(len(s) + len(o)); the result is
// counted first and allocated once (growing it by appends cost a quarter
// of an nsys analysis in copies and fresh memory).
func (s Set) Subtract(o Set) Set {
	n := 0
	s.diff(o, func(Interval) { n++ })
	out := newSet(n)
	s.diff(o, func(iv Interval) { out = append(out, iv) })
	return out
}

// Diff yields the intervals of s \ o in order, as Subtract would return
// them, without building the set. Cost: O(len(s) + len(o)), no memory.
func (s Set) Diff(o Set) iter.Seq[Interval] {
	return func(yield func(Interval) bool) {
		stop := false
		s.diff(o, func(iv Interval) {
			if !stop && !yield(iv) {
				stop = true
			}
		})
	}
}

// diff calls emit for each interval of s \ o, in order.
func (s Set) diff(o Set, emit func(Interval)) {
	j := 0
	for _, a := range s {
		cur := a.Start
		for j < len(o) && o[j].End <= cur {
			j++
		}
		k := j
		for k < len(o) && o[k].Start < a.End {
			if o[k].Start > cur {
				emit(Interval{cur, o[k].Start})
			}
			if o[k].End > cur {
				cur = o[k].End
			}
			k++
		}
		if cur < a.End {
			emit(Interval{cur, a.End})
		}
	}
}

// Layers divides the union of sets by priority: out[k] is sets[k] minus
// every earlier set, so the layers are disjoint and together cover the
// union of sets (out[0] is sets[0] itself). It is the same as subtracting
// the union of the earlier sets from each in turn, without building those
// unions: one sweep over all sets, with each layer counted first and
// allocated once. Cost: O(n·len(sets)) for n intervals in all.
func Layers(sets ...Set) []Set {
	out := make([]Set, len(sets))
	if len(sets) == 0 {
		return out
	}
	out[0] = sets[0][:len(sets[0]):len(sets[0])]
	counts := make([]int, len(sets))
	sweepLayers(sets, func(k int, _ Interval) { counts[k]++ })
	for k := 1; k < len(sets); k++ {
		out[k] = newSet(counts[k])
	}
	sweepLayers(sets, func(k int, iv Interval) { out[k] = append(out[k], iv) })
	return out
}

// sweepLayers calls emit, in order of time for each layer k >= 1, with the
// intervals of Layers' out[k]; touching pieces are merged.
func sweepLayers(sets []Set, emit func(k int, iv Interval)) {
	idx := make([]int, len(sets))
	pending := make([]Interval, len(sets))
	have := make([]bool, len(sets))
	t := int64(math.MinInt64)
	for {
		// The first set active at t is the layer t belongs to; the next
		// boundary is its interval's end or an earlier set's next start,
		// whichever comes first (later sets cannot change the layer).
		top, next := -1, int64(math.MaxInt64)
		for k, s := range sets {
			i := idx[k]
			for i < len(s) && s[i].End <= t {
				i++
			}
			idx[k] = i
			if i == len(s) {
				continue
			}
			if s[i].Start <= t {
				top, next = k, min(next, s[i].End)
				break
			}
			next = min(next, s[i].Start)
		}
		if next == math.MaxInt64 {
			break
		}
		if top > 0 {
			switch {
			case have[top] && pending[top].End == t:
				pending[top].End = next
			default:
				if have[top] {
					emit(top, pending[top])
				}
				pending[top], have[top] = Interval{t, next}, true
			}
		}
		t = next
	}
	for k := 1; k < len(sets); k++ {
		if have[k] {
			emit(k, pending[k])
		}
	}
}

// newSet returns an empty set with room for n intervals; a large one is
// huge-page memory (internal/hugepage: fresh 4 kB pages cost about 10 ms
// per MB to fault in on the machines measured).
func newSet(n int) Set { return hugepage.Make[Interval](0, n) }

// Clip returns s ∩ [lo, hi). Cost: O(log n + k) for k intervals kept.
func (s Set) Clip(lo, hi int64) Set {
	var out Set
	for i := s.first(lo); i < len(s) && s[i].Start < hi; i++ {
		a, b := max(s[i].Start, lo), min(s[i].End, hi)
		if a < b {
			out = append(out, Interval{a, b})
		}
	}
	return out
}

// Covered is the length of s ∩ [lo, hi) in nanoseconds. Cost: O(log n + k).
func (s Set) Covered(lo, hi int64) int64 {
	var n int64
	for i := s.first(lo); i < len(s) && s[i].Start < hi; i++ {
		a, b := max(s[i].Start, lo), min(s[i].End, hi)
		if a < b {
			n += b - a
		}
	}
	return n
}

// Contains reports whether instant t lies in s.
func (s Set) Contains(t int64) bool {
	i := s.first(t)
	return i < len(s) && s[i].Start <= t && t < s[i].End
}

// Gaps returns [lo, hi) \ s: the holes of s inside the window.
func (s Set) Gaps(lo, hi int64) Set {
	if hi <= lo {
		return nil
	}
	return Set{{lo, hi}}.Subtract(s.Clip(lo, hi))
}

// Cursor answers Contains for instants that never decrease (events taken
// in time order) by walking the set once instead of a binary search per
// instant.
type Cursor struct {
	s Set
	i int
}

// Cursor returns a Cursor at the start of s.
func (s Set) Cursor() Cursor { return Cursor{s: s} }

// Contains is s.Contains(t), for t no smaller than the last one asked.
func (c *Cursor) Contains(t int64) bool {
	for c.i < len(c.s) && c.s[c.i].End <= t {
		c.i++
	}
	return c.i < len(c.s) && c.s[c.i].Start <= t
}

// first is the index of the first interval that ends after t.
func (s Set) first(t int64) int {
	return sort.Search(len(s), func(i int) bool { return s[i].End > t })
}
