package timeline

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestBuildInPartsMatchesInOrder builds random timelines (sorted or not,
// a declared track left empty, API calls of every class,
// communication kernels, graph launches and linked work) in 1 part and in
// several, and requires the same timeline.
func TestBuildInPartsMatchesInOrder(t *testing.T) {
	defer func(n int) { forceParts = n }(forceParts)
	names := []string{"cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize", "cudaGraphLaunch",
		"ncclKernel_AllReduce_RING_LL_Sum_float", "gemm_kernel", "cudaMalloc", "elementwise"}
	for trial := range 20 {
		sorted := trial%2 == 0
		mk := func() *Builder {
			rng := rand.New(rand.NewPCG(uint64(trial), 7))
			b := NewBuilder(Source{Path: "x"})
			ids := make([]NameID, len(names))
			for i, s := range names {
				ids[i] = b.Intern(s)
			}
			var gpu, host []TrackID
			for s := range 4 {
				gpu = append(gpu, b.GPUTrack(0, int64(s)))
				host = append(host, b.HostTrack(1, int64(s)))
			}
			b.HostTrack(2, 9) // never used: dropped
			var evs []Event
			for i := range 3000 {
				at := int64(rng.IntN(5000))
				corr := int64(1 + i/2)
				if i%2 == 0 {
					evs = append(evs, Event{Kind: KindAPI, Start: at, End: at + 5, Name: ids[rng.IntN(4)], Track: host[rng.IntN(len(host))], Corr: corr, Proc: 1})
				} else {
					name := ids[4+rng.IntN(2)]
					if rng.IntN(4) == 0 {
						name = ids[7]
					}
					evs = append(evs, Event{Kind: KindKernel, Start: at + 1, End: at + 3, Name: name, Track: gpu[rng.IntN(len(gpu))], Corr: corr, Proc: 1})
				}
			}
			if sorted {
				slices.SortStableFunc(evs, compareEvents)
			}
			if trial%4 == 2 { // out of order across the middle alone, where parts meet
				h := len(evs) / 2
				for compareEvents(evs[h-1], evs[h]) == 0 {
					h++
				}
				evs[h-1], evs[h] = evs[h], evs[h-1]
				evs = evs[2*(h-len(evs)/2):] // the pair in the middle
			}
			for _, e := range evs {
				b.Add(e)
			}
			return b
		}
		forceParts = 1
		want, err := mk().Build()
		if err != nil {
			t.Fatal(err)
		}
		for _, parts := range []int{2, 3, 8} {
			forceParts = parts
			got, err := mk().Build()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Events, want.Events) {
				t.Fatalf("trial %d, %d parts: events differ", trial, parts)
			}
			if !reflect.DeepEqual(got.Tracks, want.Tracks) {
				t.Fatalf("trial %d, %d parts: tracks differ", trial, parts)
			}
		}
		if len(want.Tracks) != 8 {
			t.Fatalf("trial %d: %d tracks, want 8 (the unused one dropped)", trial, len(want.Tracks))
		}
		comm, graph, linked := 0, 0, 0
		for i := range want.Events {
			e := &want.Events[i]
			if e.Has(FlagComm) {
				comm++
			}
			if e.Has(FlagGraph) {
				graph++
			}
			if e.Link >= 0 {
				linked++
			}
		}
		if comm == 0 || graph == 0 || linked == 0 {
			t.Fatalf("trial %d: %d comm, %d graph, %d linked events: the test covers too little", trial, comm, graph, linked)
		}
	}
}
