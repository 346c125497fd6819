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
