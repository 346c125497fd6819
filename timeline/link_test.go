package timeline

import (
	"math/rand"
	"slices"
	"testing"
)

// linkPacked must link exactly as the general path does: duplicate API
// rows, GPU work without its call, several processes reusing ids, in one
// part or several.
func TestLinkPackedMatchesGeneral(t *testing.T) {
	defer func(n int) { forceParts = n }(forceParts)
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
		if trial%2 == 0 {
			// Ids in call order, as in real traces (no sort needed).
			for i := range ev {
				ev[i].Corr = int64(i/3 + 1)
				if r.Intn(5) == 0 {
					ev[i].Corr = int64(r.Intn(i + 1))
				}
			}
		}
		forceParts = 1 + trial%4 // in parts at once as for a large timeline
		a, b, c := slices.Clone(ev), slices.Clone(ev), slices.Clone(ev)
		var made, freed [][]int32
		alloc := func(n int) []int32 { s := make([]int32, n); made = append(made, s); return s }
		free := func(s []int32) { freed = append(freed, s) }
		if !linkPacked(a, nil, nil) || !linkPacked(c, alloc, free) {
			t.Fatalf("trial %d: ids did not fit", trial)
		}
		// The scratch memory is handed back, once, after its last use.
		if len(made) != len(freed) || len(made) > 0 && &made[0][0] != &freed[0][0] {
			t.Fatalf("trial %d: %d slices made, %d freed", trial, len(made), len(freed))
		}
		linkGeneral(b)
		for i := range a {
			if a[i].Link != b[i].Link || c[i].Link != b[i].Link {
				t.Fatalf("trial %d: event %d (%+v) links %d (%d), want %d", trial, i, ev[i], a[i].Link, c[i].Link, b[i].Link)
			}
		}
	}
	// Calls in id order within each part but not across them.
	forceParts = 2
	two := []Event{{Kind: KindAPI, Corr: 5, Link: -1}, {Kind: KindKernel, Corr: 5, Link: -1},
		{Kind: KindAPI, Corr: 1, Link: -1}, {Kind: KindKernel, Corr: 1, Link: -1}}
	if !linkPacked(two, nil, nil) || two[0].Link != 1 || two[1].Link != 0 || two[2].Link != 3 || two[3].Link != 2 {
		t.Errorf("calls out of order across parts: links %d, %d, %d, %d", two[0].Link, two[1].Link, two[2].Link, two[3].Link)
	}
	// Ids that do not fit in 64 bits with the index take the general path.
	big := []Event{{Kind: KindAPI, Corr: 1 << 62, Link: -1}, {Kind: KindKernel, Corr: 1 << 62, Link: -1},
		{Kind: KindKernel, Proc: 1, Corr: 1 << 62, Link: -1}}
	if linkPacked(big, nil, nil) {
		t.Error("63-bit correlation ids packed with a 2-bit index and a process")
	}
	linkCorrelations(big, nil, nil)
	if big[1].Link != 0 || big[0].Link != 1 || big[2].Link != -1 {
		t.Errorf("links %d, %d, %d", big[0].Link, big[1].Link, big[2].Link)
	}
}

func TestGallop(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for trial := range 2000 {
		keys := make([]uint64, r.Intn(50))
		for i := range keys {
			keys[i] = uint64(r.Intn(60))
		}
		slices.Sort(keys)
		want := uint64(r.Intn(70))
		exp, _ := slices.BinarySearch(keys, want)
		if got := gallop(keys, want, r.Intn(len(keys)+3)-1); got != exp {
			t.Fatalf("trial %d: gallop(%v, %d) = %d, want %d", trial, keys, want, got, exp)
		}
	}
}
