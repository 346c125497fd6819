package replay

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/traceaudit/traceaudit/timeline"
)

// tiny is a small hand-made plan for executing variants quickly: a 1 MiB
// pageable batch and a 128 KiB result, batches from batches (main, workers
// or reused), a sync each step.
func tiny(batches string) *Plan {
	p := &Plan{File: "tiny", ObservedStepNS: 2_000_000, ObservedStepMeanNS: 2_000_000, ObservedGPUNS: 500_000, Step: Phases{
		DataNS: 1_000_000, OtherNS: 50_000, ComputeNS: 300_000, Sync: true, Batches: batches, OSObserved: true,
		Copies: []Copy{{Dir: timeline.CopyHtoD, Bytes: 1 << 20, Pageable: true, ObservedNS: 150_000}, {Dir: timeline.CopyDtoH, Bytes: 128 << 10, Pageable: true}},
	}}
	if batches == BatchesWorkers {
		p.Step.Munmaps, p.Step.MunmapBytes = 1, 1<<20
		p.Step.DataNS = 100_000
	}
	p.Variants = []Variant{{Name: Observed, Plan: observedSetup(p), PredictedSpeedup: 1}}
	return p
}

// counts counts what the rig's hooks see.
type counts struct {
	mapped, shared atomic.Int32
	built          atomic.Int32
	mu             sync.Mutex
	unmap, pin     map[string]int
	producers      map[int]bool
}

func (c *counts) hook(r *rig) {
	c.unmap, c.pin, c.producers = map[string]int{}, map[string]int{}, map[int]bool{}
	r.hooks.mapped = func(shared bool) {
		c.mapped.Add(1)
		if shared {
			c.shared.Add(1)
		}
	}
	r.hooks.unmap = func(where string) { c.mu.Lock(); c.unmap[where]++; c.mu.Unlock() }
	r.hooks.pin = func(where string) { c.mu.Lock(); c.pin[where]++; c.mu.Unlock() }
	r.hooks.produce = func(w int) { c.mu.Lock(); c.producers[w] = true; c.mu.Unlock() }
	r.hooks.built = func() { c.built.Add(1) }
}

func (c *counts) unmapped() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.unmap {
		n += v
	}
	return n
}

// runVariant runs the named variant of p for 1 warm-up and steps
// measured steps on a fake and checks what every run must do: one wall
// and one GPU time per measured step, no event left, every mapping
// unmapped.
func runVariant(t *testing.T, p *Plan, name string, steps int) (*Fake, *counts) {
	t.Helper()
	if name != Observed {
		if err := p.Select(name); err != nil {
			t.Fatal(err)
		}
	}
	f := newFake()
	r, err := newRig(f, p)
	if err != nil {
		t.Fatal(err)
	}
	var c counts
	c.hook(r)
	v := p.Variants[len(p.Variants)-1]
	wall, gpu, err := r.measure(context.Background(), v.Plan, Options{Steps: steps, Warmup: 1}, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if len(wall) != steps || len(gpu) != steps {
		t.Fatalf("%d wall, %d gpu samples for %d steps", len(wall), len(gpu), steps)
	}
	for _, g := range gpu {
		if g <= 0 {
			t.Fatalf("gpu time %d", g)
		}
	}
	if n := f.LiveEvents(); n != 0 {
		t.Errorf("%d events leaked", n)
	}
	if m, u := int(c.mapped.Load()), c.unmapped(); m != u {
		t.Errorf("%d mappings made, %d unmapped: leaked", m, u)
	}
	if a, fr := f.Count("alloc-pinned", nil), f.Count("free-pinned", nil); a != fr {
		t.Errorf("%d pinned allocations, %d freed", a, fr)
	}
	return f, &c
}

var yes, no = true, false

// TestObservedWorkersBatches: batches from the trace's DataLoader workers
// arrive in shared memory; the main loop copies each from pageable memory
// and unmaps it after the copy, as the m0 trace shows.
func TestObservedWorkersBatches(t *testing.T) {
	f, c := runVariant(t, tiny(BatchesWorkers), Observed, 4)
	if f.Count("htod", &no) != 5 || f.Count("htod", &yes) != 0 {
		t.Errorf("htod pageable %d pinned %d, want 5 pageable", f.Count("htod", &no), f.Count("htod", &yes))
	}
	if f.Count("compute", nil) != 5 || f.Count("dtoh", nil) != 5 || f.Count("alloc-pinned", nil) != 0 {
		t.Errorf("compute %d dtoh %d alloc-pinned %d", f.Count("compute", nil), f.Count("dtoh", nil), f.Count("alloc-pinned", nil))
	}
	// Each of the 5 steps unmaps its batch's view on the main thread; each
	// batch made was written through a producer's own view, unmapped there.
	// How many batches the feeders had made ahead when the loop ended is
	// the scheduler's business: only its consistency is checked.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unmap["main"] != 5 {
		t.Errorf("%d munmaps by the main loop for 5 steps", c.unmap["main"])
	}
	if int(c.shared.Load()) != 2*c.unmap["producer"] || c.mapped.Load() != c.shared.Load() {
		t.Errorf("%d shared views for %d batches written, %d mappings", c.shared.Load(), c.unmap["producer"], c.mapped.Load())
	}
	if len(c.pin) != 0 {
		t.Errorf("pinning %v in a pageable loop", c.pin)
	}
}

// TestObservedMainBatches: the main thread builds each batch; at or above
// glibc's largest mmap threshold each lives in a fresh private mapping
// unmapped on the main thread after its copy, whether or not the trace
// recorded OS calls (nsys does not see glibc's own munmap).
func TestObservedMainBatches(t *testing.T) {
	for _, os := range []bool{false, true} {
		p := tiny(BatchesMain)
		p.Step.OSObserved = os
		p.Step.Copies[0].Bytes = MmapThreshold
		p.Step.DataNS = 20_000_000
		_, c := runVariant(t, p, Observed, 2)
		if c.mapped.Load() != 3 || c.shared.Load() != 0 || c.unmap["main"] != 3 {
			t.Errorf("OS calls observed %v: %d mappings (%d shared), %v unmapped, want 3 private ones unmapped on the main thread",
				os, c.mapped.Load(), c.shared.Load(), c.unmap)
		}
	}
	// Below the threshold the batch buffer is reused, and rebuilt each step.
	_, c := runVariant(t, tiny(BatchesMain), Observed, 2)
	if c.mapped.Load() != 0 || c.built.Load() != 3 {
		t.Errorf("%d mappings, %d builds for 3 steps of a batch under the mmap threshold", c.mapped.Load(), c.built.Load())
	}
}

// TestObservedReusedBatch: a batch the trace reuses (its data phase is too
// short to have built it) is written once and never unmapped, however big.
func TestObservedReusedBatch(t *testing.T) {
	p := tiny(BatchesReused)
	p.Step.OSObserved = false
	p.Step.Copies[0].Bytes = MmapThreshold
	p.Step.DataNS = 10_000
	f, c := runVariant(t, p, Observed, 4)
	if c.mapped.Load() != 0 || c.built.Load() != 1 || f.Count("htod", &no) != 5 {
		t.Errorf("%d mappings, %d builds, %d pageable copies for 5 steps of a reused batch", c.mapped.Load(), c.built.Load(), f.Count("htod", &no))
	}
}

// TestPinnedVariantPinsWhereTheBatchIs: with workers the pin goroutine
// pins and frees the shared memory (the main thread unmaps nothing); when
// the main thread builds, it pins; a slot is refilled only after waiting
// for the event of its last copy.
func TestPinnedVariantPinsWhereTheBatchIs(t *testing.T) {
	f, c := runVariant(t, tiny(BatchesWorkers), Pinned, 8)
	if f.Count("htod", &yes) != 9 || f.Count("htod", &no) != 0 {
		t.Errorf("htod pinned %d pageable %d", f.Count("htod", &yes), f.Count("htod", &no))
	}
	c.mu.Lock()
	if c.unmap["main"] != 0 || c.pin["thread"] < 9 || c.pin["main"] != 0 || c.unmap["pin"] != c.pin["thread"] {
		t.Errorf("unmaps %v, pins %v: the pin thread pins and unmaps", c.unmap, c.pin)
	}
	c.mu.Unlock()
	if n := f.Count("alloc-pinned", nil); n != PinSlots+1 { // 1 HtoD buffer per slot, 1 pinned result buffer
		t.Errorf("alloc-pinned %d", n)
	}
	f, c = runVariant(t, tiny(BatchesMain), Pinned, 8)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pin["main"] != 9 || c.pin["thread"] != 0 {
		t.Errorf("pins %v, want 9 on the main thread", c.pin)
	}
	// 9 pins into 4 slots: every pin after the first 4 reuses a slot and
	// waits for the event of the copy that last read it.
	if n := f.Count("hostwait", nil); n != 9-PinSlots {
		t.Errorf("%d host waits for %d slot reuses", n, 9-PinSlots)
	}
}

func TestPinnedCopyStreamVariant(t *testing.T) {
	f, _ := runVariant(t, tiny(BatchesMain), PinnedCopyStream, 4)
	htod, compute := f.Streams("htod"), f.Streams("compute")
	if len(htod) != 1 || len(compute) != 1 {
		t.Fatalf("streams htod %v compute %v", htod, compute)
	}
	for s := range htod {
		if compute[s] {
			t.Errorf("copies share the compute stream %d", s)
		}
	}
	// 1 prefetch before the loop + one per step, all pinned; the compute
	// waits for each batch's arrival.
	if f.Count("htod", &yes) != 6 || f.Count("wait", nil) < 5 {
		t.Errorf("htod pinned %d waits %d", f.Count("htod", &yes), f.Count("wait", nil))
	}
}

func TestPrefetchWorkersVariant(t *testing.T) {
	p := tiny(BatchesMain)
	p.Step.DataNS = 3_000_000
	_, c := runVariant(t, p, PrefetchWorkers, 4)
	want := min(Workers(&p.Step, p.ObservedStepNS), runtime.NumCPU())
	if want < 2 {
		t.Fatalf("workers %d", want)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.producers) != want {
		t.Errorf("%d of %d producers made batches", len(c.producers), want)
	}
	// Workers hand batches over in shared memory; with pin_memory, as the
	// loader's advice writes it, the pin thread copies each into pinned
	// memory and unmaps it, and the main loop copies from pinned memory.
	if c.unmap["pin"] < 5 || c.unmap["main"] != 0 || c.shared.Load() == 0 || c.pin["thread"] < 5 {
		t.Errorf("unmaps %v, pins %v, %d shared views", c.unmap, c.pin, c.shared.Load())
	}
}

func TestReuseBuffersVariant(t *testing.T) {
	_, c := runVariant(t, tiny(BatchesWorkers), ReuseBuffers, 4)
	if c.mapped.Load() != 0 || c.unmapped() != 0 {
		t.Errorf("reuse-buffers mapped %d and unmapped %d buffers", c.mapped.Load(), c.unmapped())
	}
}

func TestAllVariant(t *testing.T) {
	f, c := runVariant(t, tiny(BatchesWorkers), All, 4)
	if n := c.mapped.Load(); f.Count("htod", &no) != 0 || n != 0 || len(f.Streams("htod")) != 1 {
		t.Errorf("all: pageable %d mappings %d", f.Count("htod", &no), n)
	}
}

// launchPlan is tiny with 50 launch-bound kernels of 5 µs launched every
// 20 µs, no copies.
func launchPlan() *Plan {
	p := tiny("")
	p.Step.Copies = nil
	p.Step.Launches = &Launches{Kernels: 50, KernelNS: 5_000, IntervalNS: 20_000}
	p.Variants = []Variant{{Name: Observed, Plan: observedSetup(p), PredictedSpeedup: 1}}
	return p
}

// TestCUDAGraphVariant: observed launches each kernel on its own at the
// observed pace; cuda-graph captures them once and launches one graph per
// step; the rest of the compute stays one kernel either way. Before either,
// the rig times the kernels back to back: a graph of the step's 50 kernels
// empty (the floor), then one of them as replayed, each launched 4 times
// behind a lead kernel.
func TestCUDAGraphVariant(t *testing.T) {
	const calGraphs, calLaunches = 2, 8
	f, _ := runVariant(t, launchPlan(), Observed, 4)
	if n := f.Count("compute", nil); n != 5*(50+1)+calLaunches || f.Count("graph", nil) != calGraphs {
		t.Errorf("observed: %d kernels, %d graphs; want 5 steps × (50 + 1) and the calibration's", n, f.Count("graph", nil))
	}
	f, _ = runVariant(t, launchPlan(), CUDAGraph, 4)
	if f.Count("graph", nil) != 1+calGraphs || f.Count("graph-launch", nil) != 5+calLaunches || f.Count("graph-destroy", nil) != 1+calGraphs ||
		f.Count("compute", nil) != 5+calLaunches {
		t.Errorf("cuda-graph: %d captures, %d launches, %d destroyed, %d other kernels",
			f.Count("graph", nil), f.Count("graph-launch", nil), f.Count("graph-destroy", nil), f.Count("compute", nil))
	}
}

// TestKernelsTimedBackToBack: a launch-bound kernel's GPU time is its
// share of a graph of the step's kernels, and each replayed step counts it
// once per kernel, less the gap between kernels. The fake's kernels cost
// what they spin plus 2 µs each: an empty one 2 µs (the floor), 0.8 µs of
// it the gap (GraphGapShare), so the trace's 5 µs kernels spin 3.8 µs and
// take 5.8 µs back to back, 5 µs as a profiler shows them, as in the
// trace, where a spin of the whole 5 µs took 7.
func TestKernelsTimedBackToBack(t *testing.T) {
	p := launchPlan()
	f := newFake()
	r, err := newRig(f, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.kernelFloor != kernelOverhead || r.kernelGap != 800*time.Nanosecond || r.kernelSpin != 3800*time.Nanosecond ||
		r.kernelGPU != 5800*time.Nanosecond || r.kernelBusy() != 5*time.Microsecond {
		t.Errorf("kernel floor %v, gap %v, spin %v, GPU time %v, busy %v; want %v, 800ns, 3.8µs, 5.8µs, 5µs",
			r.kernelFloor, r.kernelGap, r.kernelSpin, r.kernelGPU, r.kernelBusy(), kernelOverhead)
	}
	if f.Count("graph-destroy", nil) != 2 || f.LiveEvents() != 0 {
		t.Errorf("the timing graphs were not destroyed (%d) or events leaked (%d)", f.Count("graph-destroy", nil), f.LiveEvents())
	}
	before := len(f.Ops)
	_, gpu, err := r.measure(context.Background(), p.Variants[0].Plan, Options{Steps: 2, Warmup: 1}, func() {})
	if err != nil {
		t.Fatal(err)
	}
	rest := p.Step.ComputeNS - p.Step.LaunchComputeNS()
	for _, g := range gpu {
		if want := 50*5_000 + rest; g != want {
			t.Errorf("step GPU time %d ns, want 50 kernels of 5µs and %d ns of other compute", g, rest)
		}
	}
	spins := map[time.Duration]int{}
	for _, o := range f.Ops[before:] {
		if o.Kind == "compute" {
			spins[o.Dur]++
		}
	}
	if spins[r.kernelSpin] != 3*50 || spins[5*time.Microsecond] != 0 {
		t.Errorf("kernels launched by spin: %v; want 3 steps × 50 of %v", spins, r.kernelSpin)
	}
}

// TestKernelsUnderTheFloor: kernels no longer than the part of the GPU's
// floor a profiler counts in a kernel (the fake's 2 µs less the 0.8 µs
// gap) replay as empty kernels, observed and in the graph; the rig times
// only the empty graph, and the report says the trace's kernels are
// shorter than any kernel runs here.
func TestKernelsUnderTheFloor(t *testing.T) {
	p := launchPlan()
	p.Step.Launches.KernelNS = 900
	p.Step.ComputeNS = 50*900 + 100_000
	f := newFake()
	r, err := newRig(f, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.kernelSpin != 0 || r.kernelGPU != kernelOverhead || f.Count("graph", nil) != 1 {
		t.Fatalf("spin %v, GPU %v, %d timing graphs; want empty kernels of %v timed once", r.kernelSpin, r.kernelGPU, f.Count("graph", nil), kernelOverhead)
	}
	q := launchPlan()
	q.Step = p.Step
	box, m, err := Run(context.Background(), f, q, Options{Steps: 2, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if box.KernelFloorNS != kernelOverhead.Nanoseconds() || box.KernelNS != kernelOverhead.Nanoseconds() {
		t.Errorf("box %+v, want floor and kernel %v", box, kernelOverhead)
	}
	empty := 0
	for _, o := range f.Ops {
		if o.Kind == "compute" && o.Dur == 0 {
			empty++
		}
	}
	if empty != 3*50 {
		t.Errorf("%d empty kernels launched, want 3 steps × 50", empty)
	}
	rep := NewResult(q, "fake", m, 2, box)
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "an empty kernel takes 1.20 µs here") }) {
		t.Errorf("notes %q do not say the trace's kernels are under the floor", rep.Notes)
	}
}

// TestNoSyncVariant: observed waits for the GPU after every step; no-sync
// every SyncEvery steps (and after the warm-up and the last step).
func TestNoSyncVariant(t *testing.T) {
	const steps = 2 * SyncEvery
	f, _ := runVariant(t, tiny(BatchesMain), Observed, steps)
	// A barrier syncs both streams; the loop's close adds one.
	if n := f.Count("sync", nil); n != 2*(steps+1)+2 {
		t.Errorf("observed: %d stream syncs for %d steps", n, steps+1)
	}
	f, _ = runVariant(t, tiny(BatchesMain), NoSync, steps)
	if n := f.Count("sync", nil); n != 2*3+2 {
		t.Errorf("no-sync: %d stream syncs, want 3 barriers (warm-up, 2 groups of %d) and close", n, SyncEvery)
	}
}

func TestRunFillsVariantsAndRefusesHugePlans(t *testing.T) {
	p := tiny(BatchesMain)
	if err := p.Select("pinned,reuse-buffers,no-sync"); err != nil {
		t.Fatal(err)
	}
	f := newFake()
	box, measured, err := Run(context.Background(), f, p, Options{Steps: 3, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(measured) != len(p.Variants) {
		t.Fatalf("%d measurements of %d variants", len(measured), len(p.Variants))
	}
	rep := NewResult(p, f.Device(), measured, 3, box)
	for _, v := range rep.Variants {
		if v.StepNSMedian <= 0 || v.StepNSMean <= 0 || v.GPUNSMedian <= 0 || v.GPUNSMean <= 0 || v.Speedup <= 0 ||
			len(v.StepSamplesNS) != 3 || len(v.GPUSamplesNS) != 3 {
			t.Errorf("%s not measured: %+v", v.Name, v.Measured)
		}
		if v.StepNSMean != mean(v.StepSamplesNS) {
			t.Errorf("%s mean %d of samples %v", v.Name, v.StepNSMean, v.StepSamplesNS)
		}
	}
	if measured[0].Speedup != 1 {
		t.Errorf("observed speedup %v", measured[0].Speedup)
	}
	// The box's bandwidths are the fake's: 6 GB/s pageable, 55 pinned.
	if box == nil || box.Bytes != 1<<20 || box.PageableGBps < 5.5 || box.PageableGBps > 6.5 || box.PinnedGBps < 50 || box.PinnedGBps > 60 {
		t.Errorf("box %+v", box)
	}
	if rep.Fidelity == nil || rep.Fidelity.Step <= 0 || rep.Fidelity.GPU <= 0 || rep.Box != box || rep.StepStat != "mean" {
		t.Errorf("report %+v", rep)
	}
	small := newFake()
	small.Free = 2 << 20
	if _, _, err := Run(context.Background(), small, tiny(BatchesMain), Options{Steps: 1}); err == nil {
		t.Error("a plan larger than half the free memory must be refused")
	}
	if err := p.Select("nope"); err == nil {
		t.Error("unknown variant accepted")
	}
	if err := p.Select(" , ,"); err == nil || !strings.Contains(err.Error(), "names no variant") {
		t.Errorf("a list naming no variant: %v", err)
	}
	if err := p.Select("observed"); err != nil || len(p.Variants) != 1 {
		t.Errorf("observed alone: %v, %d variants", err, len(p.Variants))
	}
}

func TestSelectPlansObservedWhenMissing(t *testing.T) {
	p := launchPlan()
	p.Variants = nil
	if err := p.Select("cuda-graph"); err != nil {
		t.Fatal(err)
	}
	if len(p.Variants) != 2 || p.Variants[0].Name != Observed || p.Variants[0].Plan.SyncEvery != 1 || !p.Variants[1].Plan.CUDAGraph {
		t.Errorf("variants %+v", p.Variants)
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Run(ctx, newFake(), tiny(BatchesMain), Options{Steps: 2}); err == nil {
		t.Error("a cancelled run must stop with an error")
	}
}

func TestExecutorFailuresStopTheRun(t *testing.T) {
	for _, kind := range []string{"htod", "compute", "dtoh", "sync", "graph", "alloc-pinned"} {
		p := launchPlan()
		p.Step.Copies = tiny(BatchesMain).Step.Copies
		if err := p.Select("cuda-graph,pinned"); err != nil {
			t.Fatal(err)
		}
		f := newFake()
		f.FailOn = kind
		if _, _, err := Run(context.Background(), f, p, Options{Steps: 2, Warmup: 1}); err == nil || !strings.Contains(err.Error(), kind) {
			t.Errorf("failing %s: %v", kind, err)
		}
		if n := f.LiveEvents(); n != 0 {
			t.Errorf("failing %s: %d events leaked", kind, n)
		}
	}
}

// TestPacedLaunches checks the observed launch phase keeps the trace's
// pace: 50 launches 20 µs apart take at least 1 ms of host time.
func TestPacedLaunches(t *testing.T) {
	p := launchPlan()
	f := newFake()
	r, err := newRig(f, p)
	if err != nil {
		t.Fatal(err)
	}
	l, err := newLoop(context.Background(), r, p.Variants[0].Plan)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	t0 := time.Now()
	if err := l.launchPhase(p.Step.Launches); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 50*20*time.Microsecond {
		t.Errorf("50 paced launches took %v", d)
	}
}
