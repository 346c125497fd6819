package model_test

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/internal/testing/testaudit"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline"
)

// stepModelTrace is one of fixtures/step-model/: real H200 loops, one per
// pattern the step model must capture (fixtures/README.md).
func stepModelTrace(t *testing.T, name string) *audit.Analysis {
	t.Helper()
	return testaudit.File(t, testfix.Project(filepath.Join("step-model", name+".pt.trace.json.gz")))
}

// A read-back's cost is more than its wait: 4 micro-batches, each with a
// loss.item() that drains the queue, so the host's launches of the next
// micro-batch run with an idle GPU. The model's no-sync overlaps them and
// promises more than removing the waits alone (the bound 1 / (1 - share)).
func TestPatternSyncCostsMoreThanItsWait(t *testing.T) {
	a := stepModelTrace(t, "accum-sync")
	f := finding(t, a, "sync-api")
	if f.EstimateSource != "model" || f.EstimatedSpeedup <= analyze.Speedup(f.Share) {
		t.Errorf("sync-api est. %.3fx (%s), share %.3f: want the model's, above the %.3fx of its waits alone",
			f.EstimatedSpeedup, f.EstimateSource, f.Share, analyze.Speedup(f.Share))
	}
}

// A loader that already has 2 workers (a tokenising pipeline): the stalls
// recur every other step, the advice and the model's pool are larger.
func TestPatternRunningWorkers(t *testing.T) {
	a := stepModelTrace(t, "text-workers")
	f := finding(t, a, "dataloader-wait")
	if f.Detail["running_workers"] != 2 {
		t.Fatalf("running workers %v, want the 2 the stalls show", f.Detail["running_workers"])
	}
	m := regexp.MustCompile(`num_workers=(\d+)`).FindStringSubmatch(f.Code)
	n := 0
	if m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	pw, _ := a.Model.Fix(model.PrefetchWorkers)
	if n <= 2 || pw.Workers != n || int(f.Detail["workers"]) != n {
		t.Errorf("code num_workers %d, detail %v, model %d: want one pool size above the 2 running", n, f.Detail["workers"], pw.Workers)
	}
}

// A loader that starts again every epoch (6 batches, persistent_workers
// off): a step asks it twice, and the stall every 6 steps is the restart,
// not 6 workers. The fix is persistent_workers, and the model's step with
// it is the loop's pace between restarts.
func TestPatternEpochRestarts(t *testing.T) {
	a := stepModelTrace(t, "respawn-workers")
	f := finding(t, a, "dataloader-wait")
	if f.Detail["epoch_steps"] != 6 || f.Detail["epoch_restart_ns"] <= 0 || f.Detail["running_workers"] != 0 {
		t.Errorf("detail %v: want epoch restarts every 6 steps, no workers read from them", f.Detail)
	}
	if !strings.Contains(f.Fix, "persistent_workers=True") || strings.Contains(f.Fix, "Raise num_workers") || !strings.Contains(f.Code, "persistent_workers=True") {
		t.Errorf("fix %q, code %q", f.Fix, f.Code)
	}
	pw, ok := a.Model.Fix(model.PersistentWorkers)
	if !ok || f.EstimatedSpeedup != pw.Speedup {
		t.Fatalf("model %+v: want persistent-workers as dataloader-wait's estimate", a.Model.Fixes)
	}
	if median := a.Steps.MedianNS; pw.StepNS < median/2 || pw.StepNS > median*13/10 {
		t.Errorf("persistent-workers step %d ns, the trace's median step %d ns: want the pace between restarts", pw.StepNS, median)
	}
}

// 200 small feature tensors copied one .to() at a time, each waited for:
// the drains name the copies, and packing them is the model's fix.
func TestPatternSmallCopies(t *testing.T) {
	a := stepModelTrace(t, "many-features")
	f := finding(t, a, "sync-api")
	pc, ok := a.Model.Fix(model.PackCopies)
	if f.Detail["small_copies_per_step"] != 200 || !strings.Contains(f.Fix, "one pinned buffer") || !ok || f.EstimatedSpeedup != pc.Speedup || pc.Speedup < 1.5 {
		t.Errorf("sync-api %q %v est. %.2fx; pack-copies %+v", f.Title, f.Detail, f.EstimatedSpeedup, pc)
	}
}

// The profiler's own cost comes out of every PyTorch profiler trace before
// judging, and --profiler-cost-us 0 keeps it.
func TestPatternProfilerCost(t *testing.T) {
	files, _ := filepath.Glob(testfix.Project("step-model/*.pt.trace.json.gz"))
	if len(files) < 8 {
		testfix.Missing(t, "fixtures/step-model holds %d traces", len(files))
	}
	for _, p := range files {
		a := testaudit.File(t, p)
		if a.Model == nil || a.Model.ProfilerNS <= 0 || a.Model.StepNS >= a.Steps.MeanNS {
			t.Errorf("%s: model %+v, mean step %d: want the profiler's cost taken out", filepath.Base(p), a.Model, a.Steps.MeanNS)
		}
	}
	tl, err := ingest.Open(files[0], ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := analyze.DefaultConfig()
	cfg.ProfilerEventNS = -1
	a, err := audit.RunWith(tl, cfg, suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	if a.Model.ProfilerNS != 0 {
		t.Errorf("cost kept: profiler_ns %d", a.Model.ProfilerNS)
	}
}

// The same tokenising loader traced again: its stalls alternate, but run
// from 23 to 48 ms and the first steps are still settling. The pattern
// holds once they have settled, and the model sizes the pool from it.
func TestPatternRunningWorkersSettling(t *testing.T) {
	a := stepModelTrace(t, "text-workers-settling")
	f := finding(t, a, "dataloader-wait")
	pw, ok := a.Model.Fix(model.PrefetchWorkers)
	if f.Detail["running_workers"] != 2 || f.Detail["running_workers_unknown"] != 0 || !ok || pw.Workers <= 2 || f.EstimateSource != "model" {
		t.Errorf("detail %v, model %+v: want 2 workers read from the settled stalls and the model's pool", f.Detail, a.Model.Fixes)
	}
}

// Metrics computed on the host from logits read back each step (.cpu(),
// then numpy): the read's own sync is part of the read, so the host work
// after it is what no-sync moves to the GPU, and the fixed step is the
// GPU's, not the host's.
func TestPatternReadBackWork(t *testing.T) {
	a := stepModelTrace(t, "host-metrics")
	ns, ok := a.Model.Fix(model.NoSync)
	if !ok || ns.Speedup < 2.5 {
		t.Errorf("no-sync %+v of a %d ns step: want the host's metric work gone (2.5x or more)", ns, a.Model.StepNS)
	}
}

// A metric ranked on the host after a read-back that barely waits (rank 1
// of c0_cpu_straggler: 256 KB of logits to the host, then 56 ms of numpy in
// "log metrics" each step): sync-api's cost is the work on the values, not
// the read's 0.36 ms wait, gpu-idle names that work as its cause, and the model's
// no-sync is within a quarter of the real fix (c1_cpu_fixed, 3.93x; the
// job takes the same figure for its straggler). The nsys export's window
// ends inside that work: its tail goes with the read too.
func TestPatternMetricAfterRead(t *testing.T) {
	for _, file := range []string{"c0_cpu_straggler.rank1.pt.trace.json.gz", "c0_cpu_straggler.nsys.sqlite"} {
		path := testfix.Project(file)
		tl, err := ingest.Open(path, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if procs := tl.GPUProcesses(); len(procs) == 2 {
			tl = tl.ForProcess(procs[1].PID) // rank 1, as the job orders ranks by device
		}
		a, err := audit.RunWith(tl, analyze.DefaultConfig(), suite.Default)
		if err != nil {
			t.Fatal(err)
		}
		f := finding(t, a, "sync-api")
		if f.Severity != analyze.SeverityError || f.EstimateSource != "model" || f.EstimatedSpeedup < 3.93*0.75 || f.EstimatedSpeedup > 3.93*1.25 {
			t.Errorf("%s: sync-api %s, est. %.2fx (%s): want an error whose model estimate is within a quarter of the real 3.93x",
				file, f.Severity, f.EstimatedSpeedup, f.EstimateSource)
		}
		if !strings.Contains(f.Fix, `"log metrics"`) {
			t.Errorf("%s: sync-api fix %q: want the range of the work named", file, f.Fix)
		}
		if g := finding(t, a, "gpu-idle"); g.Detail["gap_share_work_on_values_read_back"] < 0.5 {
			t.Errorf("%s: gpu-idle causes %v: want the work on values read back first", file, g.Detail)
		}
	}
}

// Step edges: a loop whose GPU runs behind its host (an evaluation's
// queued work every 8 steps) is cut by the GPU work each host step
// launched, so each steady step starts where its first GPU work does and
// the model reproduces the mean step.
func TestPatternStepEdges(t *testing.T) {
	a := stepModelTrace(t, "eval-in-loop")
	if !strings.Contains(a.Steps.Source, "GPU-paced") || !a.Model.Faithful() {
		t.Fatalf("steps from %q, model %+v: want GPU-paced steps the model reproduces", a.Steps.Source, a.Model)
	}
	starts := map[int64]bool{}
	for _, e := range a.Timeline.Events {
		if e.Kind == timeline.KindKernel || e.Kind == timeline.KindMemcpy || e.Kind == timeline.KindMemset {
			starts[e.Start] = true
		}
	}
	for k, s := range a.Index.Steady {
		if !starts[s.Start] {
			t.Errorf("steady step %d starts at %d, where no GPU work starts", k, s.Start)
		}
	}
}

// A step the user timed without the profiler (--unprofiled-step) gives
// the profiler's cost per event: the one whose removal simulates that step.
// A given step no shorter than the traced one takes nothing out.
func TestUnprofiledStepFitsTheProfilerCost(t *testing.T) {
	path := testfix.Project(filepath.Join("step-model", "many-features.pt.trace.json.gz"))
	tl, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(given int64) *model.Model {
		cfg := analyze.DefaultConfig()
		cfg.UnprofiledStepNS = given
		a, err := audit.RunWith(tl, cfg, suite.Default)
		if err != nil {
			t.Fatal(err)
		}
		return a.Model
	}
	def := run(0)
	given := def.StepNS * 85 / 100
	m := run(given)
	if m.EventNS <= def.EventNS || m.EventNS > 20_000 || m.StepNS < given*98/100 || m.StepNS > given*102/100 {
		t.Errorf("given %d ns: step %d ns at %d ns an event (default %d ns at %d): want the given step, at more than the default",
			given, m.StepNS, m.EventNS, def.StepNS, def.EventNS)
	}
	if m := run(def.StepNS * 2); m.EventNS != 0 || m.ProfilerNS != 0 {
		t.Errorf("a given step twice the trace's: %d ns an event taken out, want none", m.EventNS)
	}
}

// Where no cost per recorded event up to 20 µs reaches the step the user
// timed (a host that ran slower throughout under the profiler), a share of
// all host time is taken out instead, as the replay does.
func TestUnprofiledStepTakesAShareOfTheHost(t *testing.T) {
	path := testfix.Project(filepath.Join("step-model", "host-metrics.pt.trace.json.gz"))
	tl, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := analyze.DefaultConfig()
	a, err := audit.RunWith(tl, cfg, suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	given := a.Model.StepNS * 7 / 10
	cfg.UnprofiledStepNS = given
	if a, err = audit.RunWith(tl, cfg, suite.Default); err != nil {
		t.Fatal(err)
	}
	m := a.Model
	if m.HostShare <= 0 || m.EventNS != 0 || m.StepNS < given*98/100 || m.StepNS > given*102/100 {
		t.Errorf("given %d ns: step %d ns, %d ns an event, host share %.3f: want the given step from a share of the host",
			given, m.StepNS, m.EventNS, m.HostShare)
	}
}

// Reads off the disk on the main thread (fixtures/storage: an HDF5 data
// set whose pages are dropped from the cache each epoch): cache-data
// serves them at memory speed, and spares the host the slower work after
// each read that slept on the disk. Its step lies within 10 % above what
// the same loop, file cached, shows in its own trace (6.9 ms; without the
// wakes it would be 1.24x that; docs/step-model.md gives the real steps).
func TestCacheDataServesReadsFromMemory(t *testing.T) {
	cold := testaudit.File(t, testfix.Project("storage/s0_cold.nsys.sqlite"))
	warm := testaudit.File(t, testfix.Project("storage/s1_warm.nsys.sqlite"))
	f := finding(t, cold, "storage-read")
	fx, ok := cold.Model.Fix(model.CacheData)
	if !ok || f.EstimateSource != "model" || f.EstimatedSpeedup != fx.Speedup {
		t.Fatalf("storage-read est. %.3fx (%s), cache-data %+v: want the model's cache-data", f.EstimatedSpeedup, f.EstimateSource, fx)
	}
	if w := warm.Model.StepNS; fx.StepNS < w || float64(fx.StepNS) > 1.1*float64(w) {
		t.Errorf("cache-data step %d ns: want between the warm trace's %d ns and 1.1x it", fx.StepNS, w)
	}
}

// Given the cold storage loop's step timed without nsys (its mean step
// in fixtures/storage/steps.jsonl), the model takes Nsight Systems'
// cost out as it does torch.profiler's, and cache-data lands within 20 %
// of the cached loop's step timed the same way.
func TestUnprofiledStepOfAnNsysTrace(t *testing.T) {
	cfg := analyze.DefaultConfig()
	cfg.UnprofiledStepNS = 12_350_000
	a := testaudit.FileWith(t, testfix.Project("storage/s0_cold.nsys.sqlite"), cfg)
	m := a.Model
	if m.StepNS < 12_100_000 || m.StepNS > 12_600_000 || m.ProfilerNS <= 0 {
		t.Fatalf("step %d ns, %d ns a step taken out: want the given 12.35 ms", m.StepNS, m.ProfilerNS)
	}
	fx, ok := m.Fix(model.CacheData)
	if real := 5_590_000.0; !ok || float64(fx.StepNS) < 0.8*real || float64(fx.StepNS) > 1.2*real {
		t.Errorf("cache-data %+v: want within 20 %% of the real cached step (%.0f ns)", fx, real)
	}
}
