package timeline

import (
	"fmt"
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
	for trial := range 20 {
		mk := func() *Builder { return randomBuilder(trial) }
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

// randomBuilder returns a builder of 3000 random events: in order for even
// trials, out of order only where parts meet for trials 2, 6, 10...
func randomBuilder(trial int) *Builder {
	sorted := trial%2 == 0
	names := []string{"cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize", "cudaGraphLaunch",
		"ncclKernel_AllReduce_RING_LL_Sum_float", "gemm_kernel", "cudaMalloc", "elementwise"}
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

// TestValidateInPartsFindsTheFirstViolation tampers with the track
// indexes and kinds of a built timeline, several violations at once, and
// requires the error of one pass in order whatever the number of parts.
func TestValidateInPartsFindsTheFirstViolation(t *testing.T) {
	defer func(n int) { forceParts = n }(forceParts)
	forceParts = 1
	tl, err := randomBuilder(0).Build()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		bad := &Timeline{Events: tl.Events, names: tl.names, Tracks: slices.Clone(tl.Tracks)}
		for ti := range bad.Tracks {
			bad.Tracks[ti].Events = slices.Clone(bad.Tracks[ti].Events)
		}
		for range 1 + rng.IntN(3) {
			tr := &bad.Tracks[rng.IntN(len(bad.Tracks))]
			j := rng.IntN(len(tr.Events))
			switch rng.IntN(5) {
			case 0: // out of order
				k := rng.IntN(len(tr.Events))
				tr.Events[j], tr.Events[k] = tr.Events[k], tr.Events[j]
			case 1: // out of range
				tr.Events[j] = int32(len(bad.Events) + rng.IntN(3))
			case 2: // another track's event
				o := bad.Tracks[rng.IntN(len(bad.Tracks))].Events
				tr.Events[j] = o[rng.IntN(len(o))]
			case 3: // one missing
				tr.Events = slices.Delete(tr.Events, j, j+1)
			case 4:
				tr.Kind = TrackKind(9)
			}
		}
		want := tracksInOrder(bad)
		if want == nil {
			continue // a swap of equal indexes
		}
		forceParts = 1
		whole := bad.Validate()
		for _, parts := range []int{1, 2, 3, 8} {
			forceParts = parts
			if got := bad.validateTracks(); got == nil || got.Error() != want.Error() {
				t.Fatalf("trial %d, %d parts: %v, one loop over the tracks: %v", trial, parts, got, want)
			}
			if got := bad.Validate(); got == nil || got.Error() != whole.Error() {
				t.Fatalf("trial %d, %d parts: Validate %v, in 1 part %v", trial, parts, got, whole)
			}
		}
	}
}

// tracksInOrder is the tracks' check as one loop (Validate before the
// checks ran in parts).
func tracksInOrder(tl *Timeline) error {
	n := 0
	for ti := range tl.Tracks {
		t := &tl.Tracks[ti]
		if t.Kind != TrackGPU && t.Kind != TrackHost {
			return fmt.Errorf("timeline: track %d: kind %d", ti, t.Kind)
		}
		prev := int32(-1)
		for _, i := range t.Events {
			if i <= prev || int(i) >= len(tl.Events) || tl.Events[i].Track != TrackID(ti) {
				return fmt.Errorf("timeline: track %d: bad event index %d", ti, i)
			}
			prev = i
		}
		n += len(t.Events)
	}
	if n != len(tl.Events) {
		return fmt.Errorf("timeline: tracks index %d of %d events", n, len(tl.Events))
	}
	return nil
}
