package replay

import (
	"fmt"
	"slices"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/passes/launchbound"
	"github.com/traceaudit/traceaudit/analyze/passes/syncapi"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline"
	tt "github.com/traceaudit/traceaudit/timeline/timelinetest"
)

func names(p *Plan) []string {
	var out []string
	for _, v := range p.Variants {
		out = append(out, v.Name)
	}
	return out
}

func variant(p *Plan, name string) *Variant {
	for i := range p.Variants {
		if p.Variants[i].Name == name {
			return &p.Variants[i]
		}
	}
	return nil
}

func TestPlansOfRealTraces(t *testing.T) {
	cases := []struct {
		path     string
		variants []string
		pageable bool
		munmaps  bool
		batches  string
		sync     bool
	}{
		{testfix.Shared(t, "h200", "r0_baseline.nsys.sqlite"), []string{"observed", "pinned", "prefetch-workers", "all"}, true, false, BatchesMain, true},
		{testfix.Project("r0_baseline.pt.trace.json.gz"), []string{"observed", "pinned", "pinned-copy-stream", "prefetch-workers", "no-sync", "all"}, true, false, BatchesMain, true},
		{testfix.Project("b0_pageable_sync.nsys.sqlite"), []string{"observed", "pinned", "pinned-copy-stream", "all"}, true, false, BatchesReused, true},
		{testfix.Project("m0_munmap.nsys.sqlite"), []string{"observed", "pinned", "pinned-copy-stream", "reuse-buffers", "all"}, true, true, BatchesWorkers, true},
		{testfix.Project("m0_munmap.pt.trace.json.gz"), []string{"observed", "pinned", "pinned-copy-stream", "all"}, true, false, BatchesWorkers, true},
		{testfix.Project("m1_reuse.nsys.sqlite"), []string{"observed", "pinned-copy-stream"}, false, false, BatchesWorkers, false},
		{testfix.Project("r3_streams.pt.trace.json.gz"), []string{"observed"}, false, false, BatchesWorkers, true},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			p := planOf(t, c.path)
			if got := names(p); !slices.Equal(got, c.variants) {
				t.Fatalf("variants %v, want %v", got, c.variants)
			}
			st := p.Step
			if p.ObservedStepNS <= 0 || p.ObservedStepMeanNS <= 0 || p.ObservedGPUNS <= 0 || st.ComputeNS <= 0 {
				t.Fatalf("plan %+v", p)
			}
			if len(st.Copies) == 0 || st.Copies[0].Dir != timeline.CopyHtoD || st.Copies[0].Pageable != c.pageable {
				t.Fatalf("copies %+v", st.Copies)
			}
			if (st.Munmaps > 0) != c.munmaps || st.Batches != c.batches || st.Sync != c.sync {
				t.Errorf("munmaps %d, batches %q, sync %v", st.Munmaps, st.Batches, st.Sync)
			}
			// The trace's bandwidth is that of its kind of copies: pageable
			// copies ran at 5 to 7 GB/s on the H200, pinned ones at 55.
			g := p.TraceGBps
			if (c.pageable && (g.Pageable < 4 || g.Pageable > 8 || g.Pinned != 0)) || (!c.pageable && (g.Pinned < 45 || g.Pageable != 0)) {
				t.Errorf("trace bandwidth %+v", g)
			}
			// The plan's phases add up to about the trace's mean step.
			var copyNS int64
			for _, cp := range st.Copies {
				copyNS += cp.ObservedNS
			}
			sum := st.DataNS + st.OtherNS + st.ComputeNS + copyNS + st.PinNS
			if ratio := float64(sum) / float64(p.ObservedStepMeanNS); ratio < 0.6 || ratio > 1.4 {
				t.Errorf("phases sum to %d ns, %.2f of the mean step %d ns", sum, ratio, p.ObservedStepMeanNS)
			}
			obs := p.Variants[0].Plan
			if obs.Pinned == c.pageable || (obs.SyncEvery == 1) != c.sync || (obs.Feeders > 0) != (c.batches == BatchesWorkers) {
				t.Errorf("observed setup %+v", obs)
			}
			for _, v := range p.Variants {
				if v.PredictedSpeedup < 1 {
					t.Errorf("%s predicted %v", v.Name, v.PredictedSpeedup)
				}
				if v.Name != Observed && v.Name != All && (v.FixFor == nil || !verifies(*v.FixFor, v.Name)) {
					t.Errorf("%s fixes %v", v.Name, v.FixFor)
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
	v := variant(p, PrefetchWorkers)
	if v == nil || v.Plan.Workers < 2 || v.FixFor == nil || *v.FixFor != "dataloader-wait" {
		t.Fatalf("prefetch-workers %+v", v)
	}
	// The pool size is the dataloader-wait finding's recommendation.
	tlr := report(t, testfix.Shared(t, "h200", "r0_baseline.nsys.sqlite"))
	for _, f := range tlr.Findings {
		if f.ID == "dataloader-wait" && f.Detail["workers"] != float64(v.Plan.Workers) {
			t.Errorf("prefetch-workers runs %d workers, the finding recommends %v", v.Plan.Workers, f.Detail["workers"])
		}
	}
	// Pinning what the main thread builds happens on the main thread; in
	// all, the workers' batches are pinned by the pin thread.
	if v := variant(p, Pinned); v.Plan.PinOn != PinOnMain {
		t.Errorf("pinned %+v", v.Plan)
	}
	if v := variant(p, All); v.Plan.PinOn != PinOnThread || v.Plan.Workers == 0 || !v.Plan.Pinned {
		t.Errorf("all %+v", v.Plan)
	}
}

func report(t *testing.T, path string) *audit.Analysis {
	t.Helper()
	return auditOf(t, path)
}

// verifies says whether analyzer id names variant among its fixes.
func verifies(id, variant string) bool {
	for _, a := range suite.Default {
		if a.ID == id && slices.Contains(a.VerifyWith, variant) {
			return true
		}
	}
	return false
}

// TestVariantLinks checks the one source of truth between analyzers and
// replay: every variant an analyzer names exists, and every fix variant is
// named by an analyzer.
func TestVariantLinks(t *testing.T) {
	for _, a := range suite.Default {
		for _, v := range a.VerifyWith {
			if !slices.Contains(Names(), v) {
				t.Errorf("%s verifies with %q, which the replay does not know (%v)", a.ID, v, Names())
			}
		}
	}
	for _, f := range fixes {
		n := 0
		for _, a := range suite.Default {
			if slices.Contains(a.VerifyWith, f.name) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("variant %s is named by no analyzer", f.name)
		}
	}
	p := &Plan{fixIDs: fixIDs(suite.Default)}
	if p.FixFor(CUDAGraph) != launchbound.Analyzer.ID || p.FixFor(NoSync) != syncapi.Analyzer.ID || p.FixFor(All) != "" {
		t.Errorf("cuda-graph fixes %q, no-sync %q, all %q", p.FixFor(CUDAGraph), p.FixFor(NoSync), p.FixFor(All))
	}
}

// launchBoundTimeline is 4 steps of 10 ms: 200 kernels of 5 µs each
// launched every 20 µs, then a pinning operator, a pinned copy of 8 MiB
// and a synchronisation that drains the queue.
func launchBoundTimeline(t *testing.T, pin bool) *timeline.Timeline {
	return launchTimeline(t, pin, func(int) int64 { return 20 * tt.Us })
}

// launchTimeline is launchBoundTimeline with launch k+1 made every(k)
// after launch k (its call lasting that long, its kernel after it).
func launchTimeline(t *testing.T, pin bool, every func(k int) int64) *timeline.Timeline {
	const us, ms = tt.Us, tt.Ms
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	for i := range 4 {
		t0 := int64(i) * 10 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+10*ms)
		at := t0
		if pin {
			b.Op(h, "aten::pin_memory", at, at+500*us)
			b.Memcpy(h, s, tt.Pinned(8<<20), at+500*us, at+520*us, at+520*us, at+670*us)
			at += 700 * us
		}
		c := at
		for k := range 200 {
			d := every(k)
			b.Launch(h, s, "tiny", c, c+d, c+d, c+d+5*us)
			c += d
		}
		end := c + 5*us
		b.API(h, "cudaDeviceSynchronize", end, end+500*us)
	}
	return b.Build(t)
}

func buildPlan(t *testing.T, tl *timeline.Timeline) (*Plan, *audit.Analysis) {
	t.Helper()
	r, err := audit.RunWith(tl, analyze.DefaultConfig(), suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(r, suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

func TestLaunchBoundPlansCUDAGraph(t *testing.T) {
	p, r := buildPlan(t, launchBoundTimeline(t, false))
	l := p.Step.Launches
	if l == nil || l.Kernels != 200 || l.KernelNS != 5*tt.Us || l.IntervalNS != 20*tt.Us {
		t.Fatalf("launches %+v", l)
	}
	v := variant(p, CUDAGraph)
	if v == nil || !v.Plan.CUDAGraph || v.FixFor == nil || *v.FixFor != "launch-bound" {
		t.Fatalf("variants %v", names(p))
	}
	if p.Variants[0].Plan.CUDAGraph {
		t.Error("observed replays a graph")
	}
	// The paced launch phase replays the launch gaps: they leave the other
	// phase (199 gaps of 15 µs and the tail of the last kernel are other
	// time in the trace; the launch phase stands for 200 × 15 µs of it).
	gaps := int64(200) * (20 - 5) * tt.Us
	if p.Step.OtherNS < 0 || p.Step.OtherNS > r.Steps.BreakdownNS[index.Other]+r.Steps.BreakdownNS[index.Sync]-gaps+tt.Us {
		t.Errorf("other %d, trace other %d + sync %d", p.Step.OtherNS, r.Steps.BreakdownNS[index.Other], r.Steps.BreakdownNS[index.Sync])
	}
	// Sync-api at any severity plans no-sync.
	if v := variant(p, NoSync); v == nil || v.Plan.SyncEvery != SyncEvery || p.Variants[0].Plan.SyncEvery != 1 {
		t.Errorf("no-sync %+v, observed %+v", v, p.Variants[0].Plan)
	}
}

// TestLaunchPaceIsTheMean: launches mostly 20 µs apart, every fourth 30
// µs, are paced at their mean (22.46 µs: 150 of 20 µs and 49 of 30 µs a
// step; the gaps between steps, over 10 times the median, left out), not
// at the median, so that the slow ones stay in the launch phase, which a
// CUDA graph removes, rather than in other host work.
func TestLaunchPaceIsTheMean(t *testing.T) {
	const us = tt.Us
	p, r := buildPlan(t, launchTimeline(t, false, func(k int) int64 {
		if k%4 == 3 {
			return 30 * us
		}
		return 20 * us
	}))
	f := fixFinding(r, CUDAGraph, analyze.SeverityInfo)
	if f == nil {
		t.Fatal("no launch-bound finding")
	}
	d, _ := launchbound.DetailOf(f)
	if d.LaunchIntervalNS != 20*us || d.LaunchIntervalMeanNS != (150*20+49*30)*us/199 {
		t.Errorf("intervals: median %d, mean %d; want 20 µs and %d", d.LaunchIntervalNS, d.LaunchIntervalMeanNS, (150*20+49*30)*us/199)
	}
	if l := p.Step.Launches; l == nil || l.IntervalNS != d.LaunchIntervalMeanNS {
		t.Errorf("launches %+v, want paced at the mean %d", l, d.LaunchIntervalMeanNS)
	}
}

func TestPinningOnTheMainThread(t *testing.T) {
	p, _ := buildPlan(t, launchBoundTimeline(t, true))
	if p.Step.PinNS != 500*tt.Us {
		t.Errorf("pin %d ns, want 500 µs per step", p.Step.PinNS)
	}
	obs := p.Variants[0].Plan
	if !obs.Pinned || obs.PinOn != PinOnMain {
		t.Errorf("observed %+v: the trace pins on the main thread", obs)
	}
}
