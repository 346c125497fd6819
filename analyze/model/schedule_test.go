package model_test

import (
	"path/filepath"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/internal/testing/testaudit"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// interpret runs schedule s on an ideal machine (GPU work takes its
// DurNS, calls their HostNS): a second, independent reading of the
// schedule's program, for the test that it holds the model's step. It
// runs passes of the window back to back and returns the main thread's
// mean step over the second half, or the busiest stream's or another
// thread's where that is longer (a program runs at its slowest thread's
// pace; the model's cycle is the main thread's).
func interpret(s *model.Schedule, passes int) int64 {
	n := len(s.Threads)
	ready := make([]int64, n)
	cursor := make([]int, n) // next call
	pass := make([]int, n)
	streamReady := make([]int64, s.Streams)
	busy := make([]int64, s.Streams)
	end := make([]int64, len(s.Work))
	queued := make([]int, len(s.Work)) // the pass that last queued it, +1
	mainStart := make([][]int64, passes)
	for p := range mainStart {
		mainStart[p] = make([]int64, len(s.Threads[s.Main].Calls))
		for k := range mainStart[p] {
			mainStart[p][k] = -1
		}
	}
	var pool struct{ free, taken []int64 }
	if s.Pool != nil {
		pool.free = make([]int64, s.Pool.Workers)
	}
	take := func(t int64) int64 {
		j := 0
		for i, f := range pool.free {
			if f < pool.free[j] {
				j = i
			}
		}
		start := pool.free[j]
		if q := len(pool.taken) - 2*s.Pool.Workers; q >= 0 {
			start = max(start, pool.taken[q])
		}
		pool.free[j] = start + s.Pool.BatchNS
		got := max(t, pool.free[j]) + s.Pool.HandoffNS
		pool.taken = append(pool.taken, got)
		return got
	}
	ends := make([][]int64, n) // per thread, where each pass ended
	for th := range ends {
		ends[th] = make([]int64, passes)
	}
	for {
		// The thread whose next call can start first; a call anchored to a
		// main-thread call not yet started waits for it.
		best, bestAt := -1, int64(0)
		for th := range n {
			if pass[th] >= passes {
				continue
			}
			calls := s.Threads[th].Calls
			if len(calls) == 0 {
				pass[th] = passes
				continue
			}
			cl := &calls[cursor[th]]
			at := ready[th] + cl.GapNS
			if cl.Anchor >= 0 && th != s.Main {
				a := mainStart[pass[th]][cl.Anchor]
				if a < 0 {
					continue
				}
				at = max(ready[th], a+cl.OffsetNS)
			}
			if best < 0 || at < bestAt {
				best, bestAt = th, at
			}
		}
		if best < 0 {
			break
		}
		th, p := best, pass[best]
		cl := &s.Threads[th].Calls[cursor[th]]
		start := bestAt
		if cl.Fetch && s.Pool != nil {
			start = take(ready[th]) + cl.GapNS
		}
		if th == s.Main {
			mainStart[p][cursor[th]] = start
		}
		for _, w := range cl.Work {
			wk := &s.Work[w]
			t := max(streamReady[wk.Stream], start+wk.LatNS)
			if wk.After >= 0 && queued[wk.After] == p+1 {
				t = max(t, end[wk.After])
			}
			end[w] = t + wk.DurNS
			streamReady[wk.Stream], queued[w] = end[w], p+1
			if p == passes-1 {
				busy[wk.Stream] += wk.DurNS
			}
		}
		e := start + cl.HostNS
		if cl.Wait >= 0 && queued[cl.Wait] == p+1 {
			e = max(e, end[cl.Wait]+cl.RetNS)
		}
		ready[th] = e
		cursor[th]++
		if cursor[th] == len(s.Threads[th].Calls) {
			ready[th] += s.Threads[th].TailNS
			ends[th][p] = ready[th]
			cursor[th] = 0
			pass[th]++
		}
	}
	// The main thread sets the pace; another thread that passes its
	// window slower falls ever further behind, and so does the GPU work it
	// launches, which a program's periodic sync then waits for.
	h := passes / 2
	var step int64
	for th := range n {
		if len(s.Threads[th].Calls) > 0 {
			step = max(step, (ends[th][passes-1]-ends[th][h-1])/int64((passes-h)*s.Steps))
		}
	}
	for _, b := range busy {
		step = max(step, b/int64(s.Steps))
	}
	return step
}

// programOrder lists the schedules whose program steps otherwise than the
// model, and why.
var programOrder = map[string]string{
	// Two threads launch onto one stream: the model keeps the traced
	// stream order, a program runs its work in the order it is launched,
	// which the fix changes.
	"k0_ddp_bucket1mb.rank1.pt.trace.json.gz fewer-collectives": "launch order",
}

// TestScheduleHoldsTheModelsStep: on the real traces, each schedule the
// replay can run, read by an independent interpreter, steps within 5 % of
// the model's simulated step with the same costs: the program the replay
// runs is the model's step.
func TestScheduleHoldsTheModelsStep(t *testing.T) {
	files := realTraces(t)
	if len(files) < 40 {
		testfix.Missing(t, "only %d real traces found", len(files))
	}
	cfg := analyze.DefaultConfig()
	cfg.KeepSchedules = true
	checked, off := 0, 0
	for _, f := range files {
		a := testaudit.FileWith(t, f, cfg)
		if !a.Model.Faithful() {
			continue
		}
		names := []string{model.Observed}
		for _, fx := range a.Model.Fixes {
			names = append(names, fx.Name)
		}
		for _, name := range names {
			s, ok := a.Model.Schedule(name)
			if !ok {
				continue
			}
			passes := max(3, (40+s.Steps-1)/s.Steps)
			got := interpret(s, passes)
			checked++
			if _, ok := programOrder[filepath.Base(f)+" "+name]; ok {
				continue
			}
			if r := float64(got) / float64(s.StepNS); r < 0.95 || r > 1.05 {
				off++
				t.Errorf("%s %s: the schedule steps in %d ns, the model in %d (%.3f)", filepath.Base(f), name, got, s.StepNS, r)
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d schedules checked", checked)
	}
	t.Logf("%d schedules, %d off", checked, off)
}

// eval-in-loop reads 16 MB of logits back with .cpu() four times an
// evaluation: its first copies of the trace wrote into pages fresh from
// the OS (11.3 ms, 1.4 GB/s) where the others ran at 13-14 GB/s. The
// schedule marks those, and only those, so that the replay copies them
// into fresh memory too.
func TestScheduleMarksFreshCopies(t *testing.T) {
	cfg := analyze.DefaultConfig()
	cfg.KeepSchedules = true
	a := testaudit.FileWith(t, testfix.Project(filepath.Join("step-model", "eval-in-loop.pt.trace.json.gz")), cfg)
	s, ok := a.Model.Schedule(model.Observed)
	if !ok {
		t.Fatal("no observed schedule")
	}
	fresh, big := 0, 0
	for _, w := range s.Work {
		if w.Kind != model.WorkDtoH || w.Bytes < 1<<20 {
			if w.Fresh {
				t.Errorf("work %+v: fresh, want only large device-to-host copies", w)
			}
			continue
		}
		big++
		gbps := float64(w.Bytes) / float64(w.DurNS)
		if w.Fresh != (gbps < 3) {
			t.Errorf("copy of %d bytes at %.1f GB/s: fresh %v", w.Bytes, gbps, w.Fresh)
		}
		fresh += b2i(w.Fresh)
	}
	if big < 4 || fresh < 1 || fresh >= big {
		t.Errorf("%d of %d large read-backs fresh: want some, not all", fresh, big)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// r0_baseline's main thread builds each batch itself and copies it, 192
// MiB of images and 512 bytes of labels a step: prefetch-workers' pool
// writes batches of that size, for the replay's producers to build with
// the memory traffic (and contention) real workers have.
func TestSchedulePoolBuildsTheCopiedBatch(t *testing.T) {
	cfg := analyze.DefaultConfig()
	cfg.KeepSchedules = true
	a := testaudit.FileWith(t, testfix.Project("r0_baseline.pt.trace.json.gz"), cfg)
	s, ok := a.Model.Schedule(model.PrefetchWorkers)
	if !ok || s.Pool == nil {
		t.Fatal("no prefetch-workers schedule with a pool")
	}
	if s.Pool.Bytes != 201_326_592+512 || s.Pool.Workers < 2 {
		t.Errorf("pool %+v: want batches of 201,327,104 bytes", *s.Pool)
	}
}

// workers-big's main thread builds each 25 MB batch under the profiler,
// which records 744 events a step in the build: the workers that take the
// build over run unprofiled, so the pool's batch takes the profiler's cost
// of those events out, and builds faster than the traced fetch.
func TestSchedulePoolBuildsWithoutTheProfiler(t *testing.T) {
	trace := testfix.Project(filepath.Join("step-model", "workers-big.pt.trace.json.gz"))
	pool := func(cfg *analyze.Config) (*model.Pool, *model.Model) {
		t.Helper()
		cfg.KeepSchedules = true
		a := testaudit.FileWith(t, trace, cfg)
		s, ok := a.Model.Schedule(model.PrefetchWorkers)
		if !ok || s.Pool == nil {
			t.Fatal("no prefetch-workers schedule with a pool")
		}
		return s.Pool, a.Model
	}
	raw := analyze.DefaultConfig()
	raw.ProfilerEventNS = -1
	traced, _ := pool(raw)
	given := analyze.DefaultConfig()
	given.UnprofiledStepNS = 50_765_000 // the loop timed without the profiler
	fit, m := pool(given)
	if m.ProfilerNS < 5_000_000 {
		t.Fatalf("profiler cost %d ns a step: want the fit to take out more than 5 ms", m.ProfilerNS)
	}
	if fit.BatchNS >= given.UnprofiledStepNS || traced.BatchNS-fit.BatchNS < m.ProfilerNS/2 {
		t.Errorf("batch %d ns with the profiler's cost out, %d ns traced, %d ns of profiler a step: "+
			"want the build faster by most of the profiler's cost", fit.BatchNS, traced.BatchNS, m.ProfilerNS)
	}
}

// eval-in-loop's host runs steps ahead of its GPU until each evaluation
// waits, and the trace ends with the host done and five 5 ms spin kernels
// still queued: the window's calls launch fewer kernels than its steps
// ran. The window keeps the work carried into it that its end lacks, one
// spin a step; and no-sync's read-backs, which no call waits for any more,
// run as the non-blocking pinned copies the schedule makes them.
func TestScheduleKeepsTheWorkCarriedIn(t *testing.T) {
	cfg := analyze.DefaultConfig()
	cfg.KeepSchedules = true
	a := testaudit.FileWith(t, testfix.Project(filepath.Join("step-model", "eval-in-loop.pt.trace.json.gz")), cfg)
	obs, ok := a.Model.Schedule(model.Observed)
	ns, ok2 := a.Model.Schedule(model.NoSync)
	if !ok || !ok2 {
		t.Fatal("no observed or no-sync schedule")
	}
	readback := func(s *model.Schedule) (n int, dur int64) {
		for _, w := range s.Work {
			if w.Kind == model.WorkDtoH && w.Bytes >= 1<<20 {
				n++
				dur += w.DurNS
			}
		}
		return n, dur
	}
	spins := 0
	for _, w := range obs.Work {
		if w.Kind == model.WorkKernel && w.DurNS >= 4_000_000 {
			spins++
		}
	}
	if spins != obs.Steps {
		t.Errorf("%d spin kernels in a window of %d steps: want one a step", spins, obs.Steps)
	}
	n, traced := readback(obs)
	n2, fixed := readback(ns)
	if n < 4 || n2 != n || fixed*5 > traced {
		t.Errorf("no-sync's %d read-backs take %d ns on the GPU, the traced %d took %d: want a fifth or less",
			n2, fixed, n, traced)
	}
}
