package analyze

import (
	"cmp"
	"slices"
)

// MaxEvidence is how many evidence ranges a finding lists.
const MaxEvidence = 5

// Candidate is a possible piece of evidence with its weight (usually the
// wasted nanoseconds it shows). Describe, when set, writes What for the
// candidates that are kept, so that thousands of candidates cost no text.
type Candidate struct {
	Evidence
	Weight   int64
	Describe func() string
}

// TopEvidence returns the n heaviest candidates, heaviest first (ties:
// earlier first), leaving out those under 1 % of the heaviest: a handful of
// tiny ranges next to large ones show nothing. Cost: O(k log k).
func TopEvidence(c []Candidate, n int) []Evidence {
	slices.SortStableFunc(c, func(a, b Candidate) int {
		if x := cmp.Compare(b.Weight, a.Weight); x != 0 {
			return x
		}
		return cmp.Compare(a.StartNS, b.StartNS)
	})
	out := make([]Evidence, 0, min(n, len(c)))
	for i := 0; i < len(c) && i < n && c[i].Weight*100 >= c[0].Weight; i++ {
		e := c[i].Evidence
		if e.What == "" && c[i].Describe != nil {
			e.What = c[i].Describe()
		}
		out = append(out, e)
	}
	return out
}

// Top collects candidates and keeps only the n that TopEvidence would list
// out of all of them, in the same order: an analyzer with a candidate per
// event or gap holds n of them, not all. Wants tells, before a candidate
// is built, whether it would be kept, so that the Describe closures of
// the others are never made. The zero Top keeps none.
type Top struct {
	n    int
	kept []Candidate // at most n, in TopEvidence's order
}

// NewTop returns a Top that keeps n candidates.
func NewTop(n int) *Top { return &Top{n: n, kept: make([]Candidate, 0, max(n, 0))} }

// Wants reports whether a candidate of that weight starting at startNS
// would be kept now: it ranks before the last kept one (ties with it rank
// after, as in TopEvidence's stable order), or fewer than n are kept.
func (t *Top) Wants(weight, startNS int64) bool {
	if len(t.kept) < t.n {
		return true
	}
	if t.n <= 0 {
		return false
	}
	last := &t.kept[len(t.kept)-1]
	return weight > last.Weight || (weight == last.Weight && startNS < last.StartNS)
}

// Add offers c; it is kept when Wants says so.
func (t *Top) Add(c Candidate) {
	if !t.Wants(c.Weight, c.StartNS) {
		return
	}
	i := len(t.kept)
	for i > 0 && (c.Weight > t.kept[i-1].Weight || (c.Weight == t.kept[i-1].Weight && c.StartNS < t.kept[i-1].StartNS)) {
		i--
	}
	if len(t.kept) < t.n {
		t.kept = append(t.kept, Candidate{})
	}
	copy(t.kept[i+1:], t.kept[i:len(t.kept)-1])
	t.kept[i] = c
}

// Evidence is TopEvidence of all the candidates offered.
func (t *Top) Evidence() []Evidence { return TopEvidence(t.kept, t.n) }
