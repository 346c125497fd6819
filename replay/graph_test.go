package replay

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/internal/testing/testaudit"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// graphPlan is the plan of a step-model trace with the model's schedules
// kept, its variants chosen.
func graphPlan(t *testing.T, name, variants string) *Plan {
	t.Helper()
	cfg := analyze.DefaultConfig()
	cfg.KeepSchedules = true
	p, err := Build(testaudit.FileWith(t, stepModelTrace(name), cfg), suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Select(variants); err != nil {
		t.Fatal(err)
	}
	return p
}

// countFrom is how many of the fake's ops from index from on are of kind,
// pinned or not (nil: either).
func countFrom(f *Fake, from int, kind string, pinned *bool) (n int) {
	for _, o := range f.Ops[from:] {
		if o.Kind == kind && (pinned == nil || o.Pinned == *pinned) {
			n++
		}
	}
	return n
}

// copies counts schedule s's copies of kind, pageable and pinned, and its
// main thread's host time a step.
func copies(s *model.Schedule, kind model.WorkKind) (pageable, pinned int, host int64) {
	for _, w := range s.Work {
		if w.Kind != model.WorkKernel && w.Bytes == 0 {
			continue // packed into another copy: never queued
		}
		if w.Kind == kind && w.Pinned {
			pinned++
		} else if w.Kind == kind {
			pageable++
		}
	}
	for _, cl := range s.Threads[s.Main].Calls {
		host += cl.GapNS + cl.HostNS
	}
	return pageable, pinned, (host + s.Threads[s.Main].TailNS) / int64(s.Steps)
}

// TestGraphEngineRunsTheSchedule: the graph engine runs a schedule call by
// call: host-metrics' observed loop reads its logits back with a pageable
// copy each step and no-sync into pinned memory; many-features' 200
// pageable copies a step become one pinned copy with pack-copies. Each pass issues
// every copy of the window, and takes at least the main thread's host
// time.
func TestGraphEngineRunsTheSchedule(t *testing.T) {
	no, yes := false, true
	for _, tc := range []struct {
		trace, fix string
		kind       model.WorkKind
		op         string
	}{
		{"host-metrics", NoSync, model.WorkDtoH, "dtoh"},
		{"many-features", PackCopies, model.WorkHtoD, "htod"},
	} {
		p := graphPlan(t, tc.trace, Observed+","+tc.fix)
		for _, name := range []string{Observed, tc.fix} {
			s, ok := p.schedule(name)
			if !ok {
				t.Fatalf("%s: no schedule for %s", tc.trace, name)
			}
			pageable, pinned, host := copies(s, tc.kind)
			if name == Observed && pageable < s.Steps || name == tc.fix && (pinned < s.Steps || pageable > 0) {
				t.Fatalf("%s %s: %d pageable and %d pinned %s copies in %d steps", tc.trace, name, pageable, pinned, tc.op, s.Steps)
			}
			f := newFake()
			wall, err := runSchedule(context.Background(), f, s, Options{Steps: 2}, 0, func() {})
			if err != nil {
				t.Fatalf("%s %s: %v", tc.trace, name, err)
			}
			passes := len(wall) + 1
			if got, want := countFrom(f, 0, tc.op, &no), passes*pageable; got != want {
				t.Errorf("%s %s: %d pageable %s copies, want %d", tc.trace, name, got, tc.op, want)
			}
			if got, want := countFrom(f, 0, tc.op, &yes), passes*pinned; got != want {
				t.Errorf("%s %s: %d pinned %s copies, want %d", tc.trace, name, got, tc.op, want)
			}
			if m := mean(wall); m < host*95/100 {
				t.Errorf("%s %s: %d ns a step, below the schedule's host time of %d", tc.trace, name, m, host)
			}
		}
		// The variants through Run: both by the graph engine.
		p.Engine = EngineGraph
		_, ms, err := Run(context.Background(), newFake(), p, Options{Steps: 2})
		if err != nil {
			t.Fatalf("%s: %v", tc.trace, err)
		}
		if len(ms) != 2 || ms[0].Engine != EngineGraph || ms[1].Engine != EngineGraph || len(ms[1].StepSamplesNS) < 2 {
			t.Errorf("%s: engines %q and %q, %d passes: want both graph, two passes measured", tc.trace, ms[0].Engine, ms[1].Engine, len(ms[1].StepSamplesNS))
		}
	}
}

// TestPackCopiesScheduleCopiesOnce: pack-copies' schedule of many-features
// queues one pinned copy a step, of the bytes of the 200 it replaces.
func TestPackCopiesScheduleCopiesOnce(t *testing.T) {
	p := graphPlan(t, "many-features", Observed+","+PackCopies)
	obs, _ := p.schedule(Observed)
	s, ok := p.schedule(PackCopies)
	if !ok {
		t.Fatal("no pack-copies schedule")
	}
	bytes := func(s *model.Schedule) (n int, b int64) {
		for _, th := range s.Threads {
			for _, cl := range th.Calls {
				for _, w := range cl.Work {
					if s.Work[w].Kind == model.WorkHtoD {
						n, b = n+1, b+s.Work[w].Bytes
					}
				}
			}
		}
		return n, b
	}
	on, ob := bytes(obs)
	n, b := bytes(s)
	if on < 150*obs.Steps || n != s.Steps || b != ob {
		t.Errorf("observed %d copies of %d bytes in %d steps, pack-copies %d of %d: want one a step, the same bytes", on, ob, obs.Steps, n, b)
	}
}

// TestGraphEngineQueuesEveryWork: m1_reuse's schedule holds work the
// model holds past its launch (queued by its stream's launcher) and a
// second thread that follows the main one; text-workers' prefetch-workers
// has a pool of producers. Every pass queues each piece of work once.
func TestGraphEngineQueuesEveryWork(t *testing.T) {
	for _, tc := range []struct {
		path, name string
		pool       bool
	}{
		{testfix.Project("m1_reuse.pt.trace.json.gz"), Observed, false},
		{stepModelTrace("text-workers"), PrefetchWorkers, true},
	} {
		cfg := analyze.DefaultConfig()
		cfg.KeepSchedules = true
		p, err := Build(testaudit.FileWith(t, tc.path, cfg), suite.Default)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := p.schedule(tc.name)
		if !ok {
			t.Fatalf("%s: no %s schedule", tc.path, tc.name)
		}
		held, anchored := 0, 0
		for _, w := range s.Work {
			if w.LatNS >= heldNS {
				held++
			}
		}
		for _, th := range s.Threads {
			for _, cl := range th.Calls {
				if cl.Anchor >= 0 {
					anchored++
				}
			}
		}
		if anchored == 0 || len(s.Threads) < 2 || tc.pool != (s.Pool != nil) || !tc.pool && held == 0 {
			t.Fatalf("%s %s: %d held, %d anchored calls, %d threads, pool %v: not the schedule this test is for",
				tc.path, tc.name, held, anchored, len(s.Threads), s.Pool != nil)
		}
		f := newFake()
		wall, err := runSchedule(context.Background(), f, s, Options{Steps: 1}, 0, func() {})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		queued := 0
		for _, o := range f.Ops {
			if o.Kind == "compute" || o.Kind == "htod" || o.Kind == "dtoh" {
				queued++
			}
		}
		if want := (len(wall) + 1) * len(s.Work); queued != want {
			t.Errorf("%s %s: %d pieces of work queued in %d passes, want %d", tc.path, tc.name, queued, len(wall)+1, want)
		}
	}
}

// TestVariantWithoutScheduleRunsByPhases: cuda-graph has no schedule; with
// the graph engine it runs by phases, and the result says so.
func TestVariantWithoutScheduleRunsByPhases(t *testing.T) {
	p := graphPlan(t, "many-features", Observed+","+CUDAGraph)
	p.Engine = EngineGraph
	box, ms, err := Run(context.Background(), newFake(), p, Options{Steps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].Engine != EngineGraph || ms[1].Engine != EnginePhases || ms[1].Speedup <= 0 {
		t.Fatalf("engines %q, %q, cuda-graph speedup %.2f: want graph, then phases with a speedup", ms[0].Engine, ms[1].Engine, ms[1].Speedup)
	}
	r := NewResult(p, "fake GPU", ms, 2, box)
	wantNote(t, r, "cuda-graph ran by phases, against the observed step run by phases")
	if r.Schedule == nil || !slices.Equal(r.Schedule.ByPhases, []string{CUDAGraph}) {
		t.Errorf("schedule %+v: want cuda-graph by phases", r.Schedule)
	}
}

// TestGraphEngineCopiesIntoFreshMemory: eval-in-loop's read-backs that
// the trace shows writing fresh pages (model.Work.Fresh) are copied into
// memory mapped for each copy; the others into the one pageable buffer
// the engine reuses.
func TestGraphEngineCopiesIntoFreshMemory(t *testing.T) {
	p := graphPlan(t, "eval-in-loop", Observed)
	s, ok := p.schedule(Observed)
	if !ok {
		t.Fatal("no observed schedule")
	}
	fresh := 0
	for _, w := range s.Work {
		if w.Fresh {
			fresh++
		}
	}
	if fresh == 0 {
		t.Fatal("no fresh copy in the schedule")
	}
	f := newFake()
	wall, err := runSchedule(context.Background(), f, s, Options{Steps: 2}, 0, func() {})
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[*byte]int{}
	for _, op := range f.Ops {
		if op.Kind == "dtoh" && !op.Pinned && op.Bytes >= 1<<20 {
			hosts[op.Host]++
		}
	}
	reused := 0
	for _, n := range hosts {
		reused = max(reused, n)
	}
	passes := len(wall) + 1
	var all int
	for _, n := range hosts {
		all += n
	}
	if got := all - reused; got != passes*fresh {
		t.Errorf("%d large read-backs in %d passes, %d into fresh memory: want %d (%d a pass)", all, passes, got, passes*fresh, fresh)
	}
}

// TestGraphEnginePrimesThePool: the producers fill their two batches each
// ahead before the main thread starts, so that the measured passes see
// the pool's steady pace. Two producers of 100 ms batches and a main
// thread that takes one a step with 0.5 ms of host work: primed, the
// three passes take six of the batches made ahead (about 0.5 ms a step);
// started cold, the third pass would wait for a third batch, 100 ms
// after the first two.
func TestGraphEnginePrimesThePool(t *testing.T) {
	s := &model.Schedule{Name: "prefetch-workers", Steps: 1, Streams: 1, StepNS: 1_000_000,
		Threads: []model.Thread{{Calls: []model.Call{{GapNS: 500_000, Fetch: true, Anchor: -1, Wait: -1, Kind: model.CallLaunch, HostNS: 5_000, Work: []int32{0}}}}},
		Work:    []model.Work{{Stream: 0, Kind: model.WorkKernel, DurNS: 100_000, After: -1}},
		Pool:    &model.Pool{Workers: 2, BatchNS: 100_000_000}}
	start := time.Now()
	wall, err := runSchedule(context.Background(), newFake(), s, Options{Steps: 2}, 0, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("the run took %v: want the pool's two batches a producer (200 ms) made first", d)
	}
	if len(wall) != 2 || slices.Max(wall) > 25_000_000 {
		t.Errorf("measured passes %v ns a step: want each from batches made ahead, well under a batch's 100 ms", wall)
	}
}
