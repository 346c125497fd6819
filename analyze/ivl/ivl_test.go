package ivl

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// bitmap is the obviously correct oracle: one bool per nanosecond.
func bitmap(s []Interval, n int) []bool {
	b := make([]bool, n)
	for _, iv := range s {
		for t := iv.Start; t < iv.End; t++ {
			if t >= 0 && t < int64(n) {
				b[t] = true
			}
		}
	}
	return b
}

func count(b []bool) (n int64) {
	for _, x := range b {
		if x {
			n++
		}
	}
	return
}

func randomSet(r *rand.Rand, n, span int) []Interval {
	var out []Interval
	for range n {
		a := r.IntN(span)
		out = append(out, Interval{int64(a), int64(a + r.IntN(20))})
	}
	return out
}

func TestAgainstBitmapOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	const span = 200
	for trial := range 500 {
		ra, rb := randomSet(r, r.IntN(12), span), randomSet(r, r.IntN(12), span)
		ba, bb := bitmap(ra, span+40), bitmap(rb, span+40)
		a, b := Union(append([]Interval(nil), ra...)), Union(append([]Interval(nil), rb...))
		for i := 1; i < len(a); i++ {
			if a[i].Start <= a[i-1].End {
				t.Fatalf("trial %d: union not disjoint: %v", trial, a)
			}
		}
		if a.Len() != count(ba) {
			t.Fatalf("trial %d: len %d want %d", trial, a.Len(), count(ba))
		}
		and, diff := make([]bool, len(ba)), make([]bool, len(ba))
		for i := range ba {
			and[i], diff[i] = ba[i] && bb[i], ba[i] && !bb[i]
		}
		or := make([]bool, len(ba))
		for i := range ba {
			or[i] = ba[i] || bb[i]
		}
		u := a.Union(b)
		if u.Len() != count(or) {
			t.Fatalf("trial %d: union %d want %d", trial, u.Len(), count(or))
		}
		for i := 1; i < len(u); i++ {
			if u[i].Start <= u[i-1].End {
				t.Fatalf("trial %d: merged union not disjoint: %v", trial, u)
			}
		}
		if got := a.OverlapLen(b); got != count(and) {
			t.Fatalf("trial %d: overlap %d want %d", trial, got, count(and))
		}
		if got := a.Intersect(b).Len(); got != count(and) {
			t.Fatalf("trial %d: intersect %d want %d", trial, got, count(and))
		}
		if got := a.Subtract(b).Len(); got != count(diff) {
			t.Fatalf("trial %d: subtract %d want %d (%v - %v = %v)", trial, got, count(diff), a, b, a.Subtract(b))
		}
		lo, hi := int64(r.IntN(span)), int64(r.IntN(span))
		var want int64
		for t := lo; t < hi; t++ {
			if ba[t] {
				want++
			}
		}
		if got := a.Covered(lo, hi); got != want {
			t.Fatalf("trial %d: covered(%d,%d) %d want %d", trial, lo, hi, got, want)
		}
		if got := a.Clip(lo, hi).Len(); got != want {
			t.Fatalf("trial %d: clip %d want %d", trial, got, want)
		}
		if hi > lo {
			if got := a.Gaps(lo, hi).Len(); got != (hi-lo)-want {
				t.Fatalf("trial %d: gaps %d want %d", trial, got, (hi-lo)-want)
			}
		}
		if lo < int64(len(ba)) && a.Contains(lo) != ba[lo] {
			t.Fatalf("trial %d: contains(%d)", trial, lo)
		}
	}
}

func TestUnionMergesTouching(t *testing.T) {
	s := Union([]Interval{{5, 10}, {0, 5}, {20, 20}, {12, 15}})
	want := Set{{0, 10}, {12, 15}}
	if len(s) != len(want) || s[0] != want[0] || s[1] != want[1] {
		t.Fatalf("got %v want %v", s, want)
	}
	if lo, hi := s.Bounds(); lo != 0 || hi != 15 {
		t.Fatalf("bounds %d %d", lo, hi)
	}
}

// randomWithEmpty is a random list of up to 14 intervals in [0, 120), a
// sixth of them empty or inverted.
func randomWithEmpty(r *rand.Rand) []Interval {
	ivs := randomSet(r, r.IntN(15), 100)
	for k := range ivs {
		if r.IntN(6) == 0 {
			ivs[k].End = ivs[k].Start - int64(r.IntN(3)) // empty or inverted
		}
	}
	return ivs
}

// TestSweepMatchesUnion feeds intervals sorted by start (ties in any order,
// empty and inverted ones included) to a Sweep and compares with Union.
func TestSweepMatchesUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for trial := range 2000 {
		ivs := randomWithEmpty(r)
		sorted := append([]Interval(nil), ivs...)
		slices.SortStableFunc(sorted, func(a, b Interval) int { return cmp.Compare(a.Start, b.Start) })
		var w Sweep
		for _, iv := range sorted {
			w.Add(iv)
		}
		u := Union(ivs)
		lo, hi, ok := w.Bounds()
		ulo, uhi := u.Bounds()
		if w.Len() != u.Len() || ok != (len(u) > 0) || (ok && (lo != ulo || hi != uhi)) {
			t.Fatalf("trial %d: sweep len %d [%d, %d] %v, union %v", trial, w.Len(), lo, hi, ok, u)
		}
	}
}

// TestLayersMatchesSubtract compares Layers with subtracting the union of
// the earlier sets from each set in turn, interval for interval.
func TestLayersMatchesSubtract(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for trial := range 3000 {
		sets := make([]Set, r.IntN(6))
		for k := range sets {
			sets[k] = Union(randomSet(r, r.IntN(12), 150))
		}
		got := Layers(sets...)
		if len(got) != len(sets) {
			t.Fatalf("trial %d: %d layers for %d sets", trial, len(got), len(sets))
		}
		var taken Set
		for k, s := range sets {
			want := s.Subtract(taken)
			taken = taken.Union(want)
			if !slices.Equal(got[k], want) {
				t.Fatalf("trial %d: layer %d = %v, want %v (sets %v)", trial, k, got[k], want, sets)
			}
			if cap(got[k]) != len(got[k]) {
				t.Fatalf("trial %d: layer %d has capacity %d for %d intervals", trial, k, cap(got[k]), len(got[k]))
			}
		}
	}
}

// TestUnionOfEmptyIsOther checks that Set.Union with an empty side returns
// the other side, and that appending to the result cannot write into it.
func TestUnionOfEmptyIsOther(t *testing.T) {
	base := make(Set, 2, 8)
	base[0], base[1] = Interval{0, 5}, Interval{10, 20}
	for _, u := range []Set{base.Union(nil), Set(nil).Union(base)} {
		if !slices.Equal(u, base) {
			t.Fatalf("union with empty = %v, want %v", u, base)
		}
		_ = append(u, Interval{30, 40})
		if base[:3][2] != (Interval{}) {
			t.Fatalf("append to the union wrote into the operand: %v", base[:3])
		}
	}
}

// TestDiffMatchesSubtract checks Diff against Subtract, and that it stops
// when asked.
func TestDiffMatchesSubtract(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 4))
	for trial := range 2000 {
		a, b := Union(randomSet(r, r.IntN(12), 150)), Union(randomSet(r, r.IntN(12), 150))
		got := slices.Collect(a.Diff(b))
		if want := a.Subtract(b); !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Fatalf("trial %d: Diff %v, Subtract %v", trial, got, want)
		}
		// A consumer that stops after the first piece is not called again.
		calls := 0
		a.Diff(b)(func(Interval) bool { calls++; return false })
		if calls > 1 || (calls == 0) != (len(got) == 0) {
			t.Fatalf("trial %d: yield called %d times after asking to stop (%d pieces)", trial, calls, len(got))
		}
	}
}

// BenchmarkLayers divides six sets of 100 k intervals by priority, the
// two-clock split's shape, with Layers and with the chain of Subtract and
// Union it replaces.
func BenchmarkLayers(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	sets := make([]Set, 6)
	for k := range sets {
		sets[k] = Union(randomSet(r, 100_000, 100_000_000))
	}
	b.Run("layers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Layers(sets...)
		}
	})
	b.Run("subtract-union", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var taken Set
			for _, s := range sets {
				out := s.Subtract(taken)
				taken = taken.Union(out)
			}
		}
	})
}

// TestCursorMatchesContains asks a Cursor about non-decreasing instants,
// some skipped, and compares with Contains.
func TestCursorMatchesContains(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 13))
	for trial := range 2000 {
		s := Union(randomSet(r, r.IntN(15), 200))
		c := s.Cursor()
		for at := int64(-5); at < 230; at += int64(r.IntN(4)) {
			if got, want := c.Contains(at), s.Contains(at); got != want {
				t.Fatalf("trial %d: Contains(%d) = %v, want %v (%v)", trial, at, got, want, s)
			}
		}
	}
}

// UnionOf merges sorted intervals into the set Union makes of them, and
// leaves its input as it was.
func TestUnionOfMatchesUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for trial := range 2000 {
		ivs := randomWithEmpty(r)
		slices.SortStableFunc(ivs, func(a, b Interval) int { return cmp.Compare(a.Start, b.Start) })
		before := slices.Clone(ivs)
		got := UnionOf(ivs)
		want := Union(slices.Clone(ivs))
		if !slices.Equal(got, want) || !slices.Equal(ivs, before) {
			t.Fatalf("trial %d: UnionOf(%v) = %v, input after %v; Union gives %v", trial, before, got, ivs, want)
		}
	}
}
