package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
	tt "github.com/traceaudit/traceaudit/timeline/timelinetest"
)

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
		b, u, err := buildOnce([]int64{1 << 20, 64 << 10}, mode, 1)
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
		// The munmap is measured for real: on a loaded machine it can take
		// longer than the whole other phase, which then burns nothing.
		if r.unmapNS <= 0 || int64(r.otherBurn) != max(p.Step.OtherNS-r.unmapNS, 0) {
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

// workersTimeline is 6 steps of 20 ms: the main thread waits wait ns for
// the next batch inside the DataLoader's multiprocessing iterator (named
// iter), copies a 40 MiB pinned batch, computes 10 ms and syncs. pin adds
// the DataLoader's pin thread (pt_data_pin) with an OS call per step.
func workersTimeline(t *testing.T, iter string, wait int64, pin bool) *timeline.Timeline {
	const us, ms = tt.Us, tt.Ms
	b := tt.New()
	h := b.Thread(1, 1, "python")
	var p timeline.TrackID
	if pin {
		p = b.Thread(1, 2, "pt_data_pin")
	}
	s := b.Stream(0, 7)
	for i := range 6 {
		t0 := int64(i) * 20 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+20*ms)
		b.Range(h, iter, t0, t0+wait)
		at := t0 + wait
		b.Memcpy(h, s, tt.Pinned(40<<20), at, at+20*us, at+20*us, at+800*us)
		b.Launch(h, s, "step", at+30*us, at+40*us, at+800*us, at+10_800*us)
		b.API(h, "cudaStreamSynchronize", at+50*us, at+10_810*us)
		if pin {
			b.OS(p, "munmap", t0+ms, t0+2*ms)
		}
	}
	return b.Build(t)
}

// TestWorkersInTheTrace: batches come from DataLoader workers wherever the
// trace shows them (their iterator, the pin thread), however long the main
// thread waits; a single-process iterator that long builds its batches.
// A loop that waits for its workers runs at their pace: the mean step.
func TestWorkersInTheTrace(t *testing.T) {
	const multi, single = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
	cases := []struct {
		iter    string
		wait    int64
		pin     bool
		batches string
		paced   bool
	}{
		{multi, 8 * tt.Ms, false, BatchesWorkers, true},
		{multi, 50 * tt.Us, false, BatchesWorkers, false},
		{"get batch", 8 * tt.Ms, true, BatchesWorkers, true},
		{single, 8 * tt.Ms, false, BatchesMain, false},
	}
	for _, c := range cases {
		p, _ := buildPlan(t, workersTimeline(t, c.iter, c.wait, c.pin))
		st := p.Step
		if st.Batches != c.batches || (st.PaceNS > 0) != c.paced || (c.paced && st.PaceNS != p.ObservedStepMeanNS) {
			t.Errorf("%s waiting %d ns (pin thread %v): batches %q, pace %d ns (mean step %d)", c.iter, c.wait, c.pin, st.Batches, st.PaceNS, p.ObservedStepMeanNS)
		}
		obs := p.Variants[0].Plan
		if c.batches == BatchesWorkers && (obs.Feeders != Feeders || obs.PinOn != PinOnThread) {
			t.Errorf("%s: observed %+v, want the trace's workers and their pin thread", c.iter, obs)
		}
	}
}

// TestPacedProducers: where the trace's workers set the pace, each
// producer (feeders and prefetch workers alike) takes Feeders × the pace
// per batch, staggered; the main thread waits for them instead of burning
// the observed wait. Unpaced, feeders only move memory, workers burn the
// data phase, and the main thread keeps the trace's wait.
func TestPacedProducers(t *testing.T) {
	p := tiny(BatchesWorkers)
	r, err := newRig(newFake(), p)
	if err != nil {
		t.Fatal(err)
	}
	obs := p.Variants[0].Plan
	if pr := producerOf(r, obs, 1, Feeders); pr != (producer{}) {
		t.Errorf("unpaced feeder %+v", pr)
	}
	if pr := producerOf(r, Setup{Workers: 3}, 1, 3); pr.extra != r.dataBurn || pr.every != 0 {
		t.Errorf("unpaced worker %+v, data burn %v", pr, r.dataBurn)
	}
	l := &loop{r: r, s: obs}
	if l.observedWait() != time.Duration(p.Step.DataNS) {
		t.Errorf("unpaced feeders: wait %v", l.observedWait())
	}
	p.Step.PaceNS = 2 * tt.Ms
	every := time.Duration(Feeders) * 2 * time.Millisecond
	for _, s := range []Setup{obs, {Workers: 6}} {
		n := s.Workers + s.Feeders
		for w := range n {
			pr := producerOf(r, s, w, n)
			if pr.every != every || pr.extra != 0 || pr.delay != every*time.Duration(w)/time.Duration(n) {
				t.Errorf("paced producer %d of %d: %+v", w, n, pr)
			}
		}
		if l := (&loop{r: r, s: s}); l.observedWait() != 0 {
			t.Errorf("paced %+v: the main thread burns %v", s, l.observedWait())
		}
	}
	// The paced producers of a run keep their period: each one's batches
	// are at least Feeders × the pace apart.
	p.Step.PaceNS = 500 * tt.Us
	every = time.Duration(Feeders) * 500 * time.Microsecond
	for _, name := range []string{Observed, Pinned} {
		q := tiny(BatchesWorkers)
		q.Step.PaceNS = p.Step.PaceNS
		if name != Observed {
			if err := q.Select(name); err != nil {
				t.Fatal(err)
			}
		}
		r, err := newRig(newFake(), q)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		made := map[int][]time.Time{}
		r.hooks.produce = func(w int) { mu.Lock(); made[w] = append(made[w], time.Now()); mu.Unlock() }
		if _, _, err := r.measure(context.Background(), q.Variants[len(q.Variants)-1].Plan, Options{Steps: 8, Warmup: 1}, func() {}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		for w, ts := range made {
			for i := 1; i < len(ts); i++ {
				if d := ts[i].Sub(ts[i-1]); d < every {
					t.Errorf("%s: producer %d made batches %v apart, paced at %v", name, w, d, every)
				}
			}
		}
		mu.Unlock()
	}
}

// TestRunReportsWhatTheBoxMeasured: the box carries the back-to-back
// kernel time of a launch-bound plan (no copies: no bandwidths), and the
// report says when it is well above the trace's kernels; a batch's build
// and munmap here come with the bandwidths.
func TestRunReportsWhatTheBoxMeasured(t *testing.T) {
	p := launchPlan()
	box, m, err := Run(context.Background(), newFake(), p, Options{Steps: 2, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if box == nil || box.KernelNS != 5_800 || box.KernelFloorNS != kernelOverhead.Nanoseconds() || box.KernelGapNS != 800 || box.Bytes != 0 || box.PageableGBps != 0 {
		t.Fatalf("box %+v, want kernel 5800 ns, floor %v, gap 800 ns and no copies", box, kernelOverhead)
	}
	rep := NewResult(p, "fake", m, 2, box)
	for _, n := range rep.Notes {
		if strings.Contains(n, "launch-bound kernel takes") || strings.HasPrefix(n, "cuda-graph:") {
			t.Errorf("kernels replayed at the trace's duration, no graph variant, noted: %q", n)
		}
	}
	// With the cuda-graph variant the report says what its graph cannot match.
	g := launchPlan()
	if err := g.Select("cuda-graph"); err != nil {
		t.Fatal(err)
	}
	if box, m, err = Run(context.Background(), newFake(), g, Options{Steps: 2, Warmup: 1}); err != nil {
		t.Fatal(err)
	}
	want := "cuda-graph: each of the 50 replayed kernels takes 5.80 µs back to back here: the trace's 5.00 µs plus the GPU's gap between " +
		"kernels in a graph, which a trace of kernels launched one by one cannot show, taken as 800 ns (40 % of the 2.00 µs"
	if rep := NewResult(g, "fake", m, 2, box); !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
		t.Errorf("notes %q lack %q", rep.Notes, want)
	}
	if n := kernelNote(&Box{KernelNS: 7_000, KernelFloorNS: 2_000}, p.Step.Launches); !strings.Contains(n, "launch-bound kernel takes 7.00 µs here") || strings.Contains(n, "empty kernel") {
		t.Errorf("a kernel 40 %% above the trace's, over the floor: note %q", n)
	}
	if n := kernelNote(&Box{KernelNS: 5_500}, p.Step.Launches); n != "" {
		t.Errorf("a kernel 10 %% above the trace's noted: %q", n)
	}
	if n := kernelNote(&Box{KernelNS: 7_000, KernelFloorNS: 2_000, KernelGapNS: 800}, p.Step.Launches); !strings.Contains(n, "takes 6.20 µs here") {
		t.Errorf("a kernel of 7 µs back to back, 0.8 of it the gap: note %q, want it at 6.2 µs", n)
	}
	if n := kernelNote(&Box{KernelNS: 5_800, KernelFloorNS: 2_000, KernelGapNS: 800}, p.Step.Launches); n != "" {
		t.Errorf("a kernel of the trace's 5 µs plus the gap noted: %q", n)
	}
	q := tiny(BatchesMain)
	q.Step.Copies[0].Bytes = MmapThreshold
	q.Step.DataNS = 20_000_000
	box, _, err = Run(context.Background(), newFake(), q, Options{Steps: 1, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if box == nil || box.BuildNS <= 0 || box.UnmapNS <= 0 || box.KernelNS != 0 || box.PageableGBps <= 0 {
		t.Errorf("box %+v, want a fresh batch's build and munmap and the bandwidths", box)
	}
}

// TestProfilerNote: a trace that records thousands of CPU operators and
// API calls per step on the main thread is said to carry the profiler's
// overhead; a few hundred in a long step are not.
func TestProfilerNote(t *testing.T) {
	p, _ := buildPlan(t, launchBoundTimeline(t, true))
	// Per step: pin_memory, the copy call, 200 launches and the sync.
	if p.HostEventsPerStep != 1+1+200+1 {
		t.Errorf("%d operators and API calls per step, want 203", p.HostEventsPerStep)
	}
	q := &Plan{ObservedStepMeanNS: 73_784_367, HostEventsPerStep: 25_850}
	if n := profilerNote(q); !strings.Contains(n, "25850 CPU operators and API calls per step") || !strings.Contains(n, "25.9 ms") {
		t.Errorf("note %q", n)
	}
	q.HostEventsPerStep = 794 // workers-big: 0.8 ms of a 53 ms step
	if n := profilerNote(q); n != "" {
		t.Errorf("note %q for 794 operators in a 74 ms step", n)
	}
}

// TestPhasesSplitTheStep: each measured variant says where its main
// thread's step went; the phases are parts of the measured steps.
func TestPhasesSplitTheStep(t *testing.T) {
	p := tiny(BatchesMain)
	p.Step.Copies[0].Bytes = MmapThreshold // fresh, unmapped after its copy
	p.Step.DataNS = 20_000_000
	if err := p.Select("pinned-copy-stream"); err != nil {
		t.Fatal(err)
	}
	_, measured, err := Run(context.Background(), newFake(), p, Options{Steps: 3, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range NewResult(p, "fake", measured, 3, nil).Variants {
		var sum int64
		for _, d := range v.PhasesNS {
			sum += d
		}
		if sum <= 0 || sum > v.StepNSMean {
			t.Errorf("%s: phases %v add up to %d ns of a %d ns mean step", v.Name, v.PhasesNS, sum, v.StepNSMean)
		}
		want := []string{PhaseData, PhaseOther, PhaseLaunch, PhaseSync}
		if v.Name == Observed {
			want = append(want, PhaseCopy, PhaseRelease)
		}
		for _, ph := range want {
			if _, ok := v.PhasesNS[ph]; !ok {
				t.Errorf("%s: no %s phase in %v", v.Name, ph, v.PhasesNS)
			}
		}
	}
}

// TestPrefetchWorkersKeepUpWithThePace: where the trace's workers set the
// pace, the prefetch-workers pool is at least what keeps up with their
// per-batch time (Feeders × the pace), whatever a smaller recommendation.
func TestPrefetchWorkersKeepUpWithThePace(t *testing.T) {
	p := tiny(BatchesWorkers)
	p.ObservedStepMeanNS, p.Step.DataNS, p.workers = 27_200_000, 1_560_000, 2
	if n := p.prefetchWorkers(); n != 2 {
		t.Errorf("unpaced: %d workers, want the recommended 2", n)
	}
	p.Step.PaceNS = 27_200_000
	// 4 × 27.2 ms per batch over the 25.6 ms the step leaves: 5 + 1.
	if n := p.prefetchWorkers(); n != 6 {
		t.Errorf("paced: %d workers, want 6", n)
	}
}

// TestBuildWritesEveryByte: build leaves every byte of the batch at
// seed+5 (written, then read and written again), whatever the buffer's
// alignment and at lengths that are not a multiple of a word, a vector
// loop's 16 words, a page or its 256 KiB chunks; with the vector loops
// where the machine has them and with the word loops.
func TestBuildWritesEveryByte(t *testing.T) {
	modes := []bool{false}
	if vecWords {
		modes = append(modes, true)
		t.Cleanup(func() { vecWords = true })
	}
	for _, vec := range modes {
		vecWords = vec
		t.Run(fmt.Sprintf("vector=%v", vec), testBuildWritesEveryByte)
	}
}

func testBuildWritesEveryByte(t *testing.T) {
	mem := make([]byte, 5<<20+64)
	for _, off := range []int{0, 1, 3, 8} {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 127, 128, 135, 4095, 4097, 256<<10 + 8, 3<<20 + 12345, 5 << 20} {
			for _, seed := range []byte{7, 200} {
				b := mem[off : off+n]
				for i := range mem {
					mem[i] = 0xAA
				}
				build(b, seed)
				for i, v := range b {
					if v != seed+5 {
						t.Fatalf("offset %d, %d bytes, seed %d: byte %d is %#x, want %#x", off, n, seed, i, v, seed+5)
					}
				}
				if off > 0 && mem[off-1] != 0xAA || mem[off+n] != 0xAA {
					t.Fatalf("offset %d, %d bytes: build wrote outside the buffer", off, n)
				}
			}
		}
	}
}

// TestWordsSplitsAtTheBoundaries: the head ends at the first 8-byte
// boundary, the words are whole, the tail is what is left, and the three
// cover the buffer in order.
func TestWordsSplitsAtTheBoundaries(t *testing.T) {
	mem := make([]uint64, 8) // 8-aligned
	all := unsafe.Slice((*byte)(unsafe.Pointer(&mem[0])), 64)
	for _, c := range []struct{ off, n, head, words, tail int }{
		{0, 64, 0, 8, 0}, {1, 63, 7, 7, 0}, {3, 20, 5, 1, 7}, {5, 10, 10, 0, 0}, {2, 3, 3, 0, 0}, {8, 0, 0, 0, 0},
	} {
		b := all[c.off : c.off+c.n]
		h, w, tl := words(b)
		if len(h) != c.head || len(w) != c.words || len(tl) != c.tail {
			t.Errorf("offset %d, %d bytes: head %d, words %d, tail %d; want %d, %d, %d", c.off, c.n, len(h), len(w), len(tl), c.head, c.words, c.tail)
			continue
		}
		if len(w) > 0 && uintptr(unsafe.Pointer(&w[0])) != uintptr(unsafe.Pointer(&b[len(h)])) {
			t.Errorf("offset %d: the words do not start after the head", c.off)
		}
	}
}

// TestReuseNoteSaysWhatTheGainRestsOn: a loop that builds its batches into
// fresh pages has the same batch also timed into warm pages here, and with
// the reuse-buffers variant the report says the variant's gain is that
// difference, this machine's; a loop that reuses its pages is timed once,
// and no note comes without the variant.
func TestReuseNoteSaysWhatTheGainRestsOn(t *testing.T) {
	p := tiny(BatchesMain)
	p.Step.Copies[0].Bytes = MmapThreshold
	if err := p.Select("reuse-buffers"); err != nil {
		t.Fatal(err)
	}
	box, m, err := Run(context.Background(), newFake(), p, Options{Steps: 2, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if box.BuildNS <= 0 || box.BuildWarmNS <= 0 {
		t.Fatalf("box %+v: want the fresh and the warm build timed", box)
	}
	rep := NewResult(p, "fake", m, 2, box)
	want := fmt.Sprintf("reuse-buffers: a batch built here took %s into fresh pages and %s into reused ones", units.Dur(box.BuildNS), units.Dur(box.BuildWarmNS))
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
		t.Errorf("notes %q lack %q", rep.Notes, want)
	}
	q := tiny(BatchesMain)
	q.Step.Copies[0].Bytes = MmapThreshold
	if box, _, err = Run(context.Background(), newFake(), q, Options{Steps: 2, Warmup: 1}); err != nil {
		t.Fatal(err)
	}
	if n := reuseNote(box, q.Variants); box.BuildWarmNS <= 0 || n != "" {
		t.Errorf("observed only: warm build %d ns, note %q", box.BuildWarmNS, n)
	}
	w := tiny(BatchesMain)
	if err := w.Select("reuse-buffers"); err != nil {
		t.Fatal(err)
	}
	if box, _, err = Run(context.Background(), newFake(), w, Options{Steps: 2, Warmup: 1}); err != nil {
		t.Fatal(err)
	}
	if box.BuildWarmNS != 0 || reuseNote(box, w.Variants) != "" {
		t.Errorf("a 1 MiB batch in warm pages: warm build %d ns timed again, or noted", box.BuildWarmNS)
	}
}
