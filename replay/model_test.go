package replay

import "testing"

// TestBuildModeFollowsTheLoop: the build that calibrate times, and takes
// out of the observed data phase, is the one the observed loop does: warm
// pages for a main thread that reuses its batch buffer (under 32 MiB),
// fresh pages above it, a worker's shared memory when workers make the
// batches. A reused batch's warm build never maps memory.
func TestBuildModeFollowsTheLoop(t *testing.T) {
	cases := []struct {
		batches string
		bytes   int64
		want    int
	}{
		{BatchesMain, 1 << 20, buildWarm},
		{BatchesMain, 25 << 20, buildWarm},
		{BatchesMain, MmapThreshold, buildFresh},
		{BatchesWorkers, 1 << 20, buildShared},
		{BatchesReused, MmapThreshold, buildWarm},
	}
	for _, c := range cases {
		p := tiny(c.batches)
		p.Step.Copies[0].Bytes = c.bytes
		if got := buildMode(observedSetup(p), &p.Step); got != c.want {
			t.Errorf("%s batches of %d bytes: build mode %d, want %d", c.batches, c.bytes, got, c.want)
		}
	}
	for _, mode := range []int{buildWarm, buildFresh, buildShared} {
		b, u, err := buildOnce([]int64{1 << 20, 64 << 10}, make([]byte, 1<<20), mode, 1)
		if err != nil || b <= 0 {
			t.Fatalf("mode %d: build %d ns, %v", mode, b, err)
		}
		if mode == buildWarm && u != 0 {
			t.Errorf("a warm build unmapped something (%d ns)", u)
		}
	}
}

// TestOtherBurnLeavesOutTheRealMunmap: where the replay unmaps a fresh
// batch on the main thread and the trace shows no munmap stalls, the
// munmap was other-bucket time in the trace: the other phase's burn is
// shorter by the munmap measured here, in an nsys trace too.
func TestOtherBurnLeavesOutTheRealMunmap(t *testing.T) {
	for _, os := range []bool{false, true} {
		p := tiny(BatchesMain)
		p.Step.OSObserved = os
		p.Step.Copies[0].Bytes = MmapThreshold
		p.Step.DataNS, p.Step.OtherNS = 20_000_000, 50_000_000
		r, err := newRig(newFake(), p)
		if err != nil {
			t.Fatal(err)
		}
		if r.unmapNS <= 0 || int64(r.otherBurn) != p.Step.OtherNS-r.unmapNS {
			t.Errorf("OS calls observed %v: other burn %v, munmap %d ns of %d ns other work", os, r.otherBurn, r.unmapNS, p.Step.OtherNS)
		}
	}
	// A reused batch is never unmapped: the other phase burns in full.
	p := tiny(BatchesMain)
	p.Step.OtherNS = 5_000_000
	r, err := newRig(newFake(), p)
	if err != nil {
		t.Fatal(err)
	}
	if int64(r.otherBurn) != p.Step.OtherNS {
		t.Errorf("other burn %v of %d ns with nothing unmapped", r.otherBurn, p.Step.OtherNS)
	}
}
