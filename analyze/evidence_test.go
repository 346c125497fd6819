package analyze

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopMatchesTopEvidence offers random candidates (many ties in weight
// and start) to a Top and compares its evidence with TopEvidence over all
// of them.
func TestTopMatchesTopEvidence(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	for trial := range 3000 {
		n := r.IntN(7)
		all := make([]Candidate, r.IntN(40))
		top := NewTop(n)
		for k := range all {
			all[k] = Candidate{Weight: int64(r.IntN(8)) * int64(1+r.IntN(200)), Evidence: Evidence{StartNS: int64(r.IntN(10)), What: string(rune('a' + k))}}
			if top.Wants(all[k].Weight, all[k].StartNS) != (len(top.kept) < n || top.rankBefore(all[k])) {
				t.Fatalf("trial %d: Wants disagrees with the ranking", trial)
			}
			top.Add(all[k])
		}
		want := TopEvidence(slices.Clone(all), n)
		if got := top.Evidence(); !slices.Equal(got, want) {
			t.Fatalf("trial %d (n %d): got %v, want %v", trial, n, got, want)
		}
	}
	var zero Top
	if zero.Wants(1, 0) || len(zero.Evidence()) != 0 {
		t.Fatal("the zero Top keeps candidates")
	}
}

// rankBefore reports whether c ranks before the last kept candidate.
func (t *Top) rankBefore(c Candidate) bool {
	if len(t.kept) == 0 {
		return false
	}
	last := t.kept[len(t.kept)-1]
	return c.Weight > last.Weight || (c.Weight == last.Weight && c.StartNS < last.StartNS)
}
