package replay

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testaudit"
	"github.com/traceaudit/traceaudit/internal/testfix"
)

func planOf(t *testing.T, path string) *Plan {
	t.Helper()
	p, err := Build(testaudit.File(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func names(p *Plan) []string {
	var out []string
	for _, v := range p.Variants {
		out = append(out, v.Name)
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPlansOfRealTraces(t *testing.T) {
	cases := []struct {
		path     string
		variants []string
		pageable bool
		munmaps  bool
	}{
		{testfix.Shared(t, "h200", "r0_baseline.nsys.sqlite"), []string{"observed", "pinned", "prefetch-workers", "all"}, true, false},
		{testfix.Project("r0_baseline.pt.trace.json.gz"), []string{"observed", "pinned", "pinned-copy-stream", "prefetch-workers", "all"}, true, false},
		{testfix.Project("b0_pageable_sync.nsys.sqlite"), []string{"observed", "pinned", "pinned-copy-stream", "all"}, true, false},
		{testfix.Project("m0_munmap.nsys.sqlite"), []string{"observed", "pinned", "pinned-copy-stream", "reuse-buffers", "all"}, true, true},
		{testfix.Project("r3_streams.pt.trace.json.gz"), []string{"observed"}, false, false},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			p := planOf(t, c.path)
			if got := names(p); !equal(got, c.variants) {
				t.Fatalf("variants %v, want %v", got, c.variants)
			}
			st := p.Step
			if p.ObservedStepNS <= 0 || p.ObservedGPUNS <= 0 || st.ComputeNS <= 0 {
				t.Fatalf("plan %+v", p)
			}
			if len(st.Copies) == 0 || st.Copies[0].Dir != "HtoD" || st.Copies[0].Pageable != c.pageable {
				t.Fatalf("copies %+v", st.Copies)
			}
			if (st.Munmaps > 0) != c.munmaps {
				t.Errorf("munmaps %d", st.Munmaps)
			}
			// The plan's phases add up to about the observed step.
			var copyNS int64
			for _, cp := range st.Copies {
				copyNS += cp.ObservedNS
			}
			sum := st.DataNS + st.OtherNS + st.ComputeNS + copyNS
			if ratio := float64(sum) / float64(p.ObservedStepNS); ratio < 0.6 || ratio > 1.4 {
				t.Errorf("phases sum to %d ns, %.2f of the observed step %d ns", sum, ratio, p.ObservedStepNS)
			}
			for _, v := range p.Variants {
				if v.PredictedSpeedup < 1 {
					t.Errorf("%s predicted %v", v.Name, v.PredictedSpeedup)
				}
			}
		})
	}
}

func TestR0PlanFigures(t *testing.T) {
	p := planOf(t, testfix.Shared(t, "h200", "r0_baseline.nsys.sqlite"))
	if p.Step.BatchBytes() != 201326592 {
		t.Errorf("batch bytes %d, want the 201 MB images batch", p.Step.BatchBytes())
	}
	if !p.Step.Sync {
		t.Error("r0 synchronises every step")
	}
	for _, v := range p.Variants {
		if v.Name == PrefetchWorkers && (v.Plan.Workers < 2 || v.FixFor == nil || *v.FixFor != "dataloader-wait") {
			t.Errorf("prefetch-workers %+v", v)
		}
	}
}

// tiny is a small hand-made plan for executing variants quickly.
func tiny(munmaps int) *Plan {
	p := &Plan{File: "tiny", ObservedStepNS: 2_000_000, ObservedGPUNS: 500_000, Step: Step{
		DataNS: 1_000_000, OtherNS: 50_000, ComputeNS: 300_000, Sync: true, Munmaps: munmaps, MunmapBytes: 1 << 20,
		Copies: []Copy{{Dir: "HtoD", Bytes: 1 << 20, Pageable: true, ObservedNS: 150_000}, {Dir: "DtoH", Bytes: 128 << 10, Pageable: true}},
	}}
	p.Variants = []Variant{{Name: Observed, PredictedSpeedup: 1}}
	return p
}

func runVariant(t *testing.T, p *Plan, name string, setup func(*rig)) (*Fake, *rig) {
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
	if setup != nil {
		setup(r)
	}
	v := p.Variants[len(p.Variants)-1]
	wall, gpu, err := r.measure(context.Background(), v.Plan, Options{Steps: 4, Warmup: 1}, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if len(wall) != 4 || len(gpu) != 4 {
		t.Fatalf("%d wall, %d gpu samples", len(wall), len(gpu))
	}
	for _, g := range gpu {
		if g <= 0 {
			t.Fatalf("gpu time %d", g)
		}
	}
	if n := f.LiveEvents(); n != 0 {
		t.Errorf("%d events leaked", n)
	}
	return f, r
}

var yes, no = true, false

func TestObservedVariant(t *testing.T) {
	var c mapCounts
	f, _ := runVariant(t, tiny(1), Observed, c.hook)
	if f.Count("htod", &no) != 5 || f.Count("htod", &yes) != 0 {
		t.Errorf("htod pageable %d pinned %d, want 5 pageable", f.Count("htod", &no), f.Count("htod", &yes))
	}
	if f.Count("compute", nil) != 5 || f.Count("dtoh", nil) != 5 || f.Count("alloc-pinned", nil) != 0 {
		t.Errorf("compute %d dtoh %d alloc-pinned %d", f.Count("compute", nil), f.Count("dtoh", nil), f.Count("alloc-pinned", nil))
	}
	// What the variant promises: each of the 5 steps (1 warm-up + 4)
	// copies from a fresh mapping that the main loop really unmaps after
	// the copy (the device-to-host result needs no batch buffer), and
	// every mapping made is unmapped by the end. How many batches the
	// feeders had prefetched when the loop ended is the scheduler's
	// business, so it is not counted.
	if got := c.step.Load(); got != 5 {
		t.Errorf("%d munmaps by the main loop for 5 steps of one batch buffer", got)
	}
	if m, u := c.mapped.Load(), c.step.Load()+c.drained.Load(); m != u {
		t.Errorf("%d mappings made, %d unmapped: leaked", m, u)
	}
}

// mapCounts counts batch mappings through the rig's hooks.
type mapCounts struct{ mapped, step, drained atomic.Int32 }

func (c *mapCounts) hook(r *rig) {
	r.hooks.mapped = func() { c.mapped.Add(1) }
	r.hooks.unmap = func(step bool) {
		if step {
			c.step.Add(1)
		} else {
			c.drained.Add(1)
		}
	}
}

func TestPinnedVariant(t *testing.T) {
	f, _ := runVariant(t, tiny(0), Pinned, nil)
	if f.Count("htod", &yes) != 5 || f.Count("htod", &no) != 0 {
		t.Errorf("htod pinned %d pageable %d", f.Count("htod", &yes), f.Count("htod", &no))
	}
	if f.Count("alloc-pinned", nil) != 6 { // 3 slots × 2 copies
		t.Errorf("alloc-pinned %d", f.Count("alloc-pinned", nil))
	}
	if f.Count("free-pinned", nil) != 6 {
		t.Errorf("free-pinned %d: pinned slots must be given back when the variant ends", f.Count("free-pinned", nil))
	}
}

func TestPinnedCopyStreamVariant(t *testing.T) {
	f, _ := runVariant(t, tiny(0), PinnedCopyStream, nil)
	htod, compute := f.Streams("htod"), f.Streams("compute")
	if len(htod) != 1 || len(compute) != 1 {
		t.Fatalf("streams htod %v compute %v", htod, compute)
	}
	for s := range htod {
		if compute[s] {
			t.Errorf("copies share the compute stream %d", s)
		}
	}
	// 1 prefetch before the loop + one per step, all pinned.
	if f.Count("htod", &yes) != 6 || f.Count("wait", nil) < 5 {
		t.Errorf("htod pinned %d waits %d", f.Count("htod", &yes), f.Count("wait", nil))
	}
}

func TestPrefetchWorkersVariant(t *testing.T) {
	p := tiny(0)
	p.Step.DataNS = 3_000_000
	var mu sync.Mutex
	seen := map[int]bool{}
	_, r := runVariant(t, p, PrefetchWorkers, func(r *rig) {
		r.hooks.produce = func(w int) { mu.Lock(); seen[w] = true; mu.Unlock() }
	})
	want := min(Workers(&p.Step, p.ObservedStepNS), runtime.NumCPU())
	_ = r
	if want < 2 {
		t.Fatalf("workers %d", want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != want {
		t.Errorf("%d of %d producers made batches", len(seen), want)
	}
}

func TestReuseBuffersVariant(t *testing.T) {
	var c mapCounts
	runVariant(t, tiny(1), ReuseBuffers, c.hook)
	if c.mapped.Load() != 0 || c.step.Load()+c.drained.Load() != 0 {
		t.Errorf("reuse-buffers mapped %d and unmapped %d buffers", c.mapped.Load(), c.step.Load()+c.drained.Load())
	}
}

func TestAllVariant(t *testing.T) {
	var c mapCounts
	f, _ := runVariant(t, tiny(1), All, c.hook)
	if n := c.mapped.Load(); f.Count("htod", &no) != 0 || n != 0 || len(f.Streams("htod")) != 1 {
		t.Errorf("all: pageable %d mappings %d", f.Count("htod", &no), n)
	}
}

func TestRunFillsVariantsAndRefusesHugePlans(t *testing.T) {
	p := tiny(0)
	if err := p.Select("pinned,reuse-buffers"); err != nil {
		t.Fatal(err)
	}
	f := newFake()
	if err := Run(context.Background(), f, p, Options{Steps: 3, Warmup: 1}); err != nil {
		t.Fatal(err)
	}
	for _, v := range p.Variants {
		if v.StepNSMedian <= 0 || v.GPUNSMedian <= 0 || v.Speedup <= 0 {
			t.Errorf("%s not measured: %+v", v.Name, v)
		}
	}
	if p.Variants[0].Speedup != 1 {
		t.Errorf("observed speedup %v", p.Variants[0].Speedup)
	}
	rep := NewReport(p, f.Device(), true, 3)
	if rep.Fidelity == nil || rep.Fidelity.Step <= 0 || rep.Fidelity.GPU <= 0 {
		t.Errorf("fidelity %+v", rep.Fidelity)
	}
	small := newFake()
	small.Free = 2 << 20
	if err := Run(context.Background(), small, tiny(0), Options{Steps: 1}); err == nil {
		t.Error("a plan larger than half the free memory must be refused")
	}
	if err := p.Select("nope"); err == nil {
		t.Error("unknown variant accepted")
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, newFake(), tiny(0), Options{Steps: 2}); err == nil {
		t.Error("a cancelled run must stop with an error")
	}
}
