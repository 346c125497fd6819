package timeline

import (
	"math/rand"
	"slices"
	"testing"
)

// linkPacked must link exactly as the general path does: duplicate API
// rows, GPU work without its call, several processes reusing ids.
func TestLinkPackedMatchesGeneral(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	kinds := []Kind{KindAPI, KindAPI, KindKernel, KindMemcpy, KindMemset, KindOp, KindGPUSync}
	for trial := range 300 {
		n := r.Intn(400)
		ev := make([]Event, n)
		for i := range ev {
			ev[i] = Event{Kind: kinds[r.Intn(len(kinds))], Corr: r.Int63n(int64(1 + trial%40)), Proc: uint32(r.Intn(1 + trial%3)), Link: -1}
			if trial%7 == 0 {
				ev[i].Corr = r.Int63n(1 << 38)
				ev[i].Proc = uint32(r.Int63n(1 << 23))
			}
		}
		a, b := slices.Clone(ev), slices.Clone(ev)
		if !linkPacked(a) {
			t.Fatalf("trial %d: ids did not fit", trial)
		}
		linkGeneral(b)
		for i := range a {
			if a[i].Link != b[i].Link {
				t.Fatalf("trial %d: event %d (%+v) links %d, want %d", trial, i, ev[i], a[i].Link, b[i].Link)
			}
		}
	}
	// Ids that do not fit in 64 bits with the index take the general path.
	big := []Event{{Kind: KindAPI, Corr: 1 << 62, Link: -1}, {Kind: KindKernel, Corr: 1 << 62, Link: -1}}
	if linkPacked(big) {
		t.Error("62-bit correlation ids packed with an index")
	}
	linkCorrelations(big)
	if big[1].Link != 0 || big[0].Link != 1 {
		t.Errorf("links %d, %d", big[0].Link, big[1].Link)
	}
}
