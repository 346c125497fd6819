package audit

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/timeline"
	tt "github.com/traceaudit/traceaudit/timeline/timelinetest"
)

const ms, us = tt.Ms, tt.Us

func run(t *testing.T, tl *timeline.Timeline) *Analysis {
	t.Helper()
	r, err := RunWith(tl, analyze.DefaultConfig(), suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func finding(r *Analysis, id string) *analyze.Finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id {
			return &r.Findings[i]
		}
	}
	return nil
}

func notObservable(r *Analysis, id string) string {
	for _, n := range r.NotObservable {
		if n.ID == id {
			return n.Why
		}
	}
	return ""
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f, want %.4f ± %.4f", what, got, want, tol)
	}
}

// inputBound builds n ProfilerSteps of 100 ms: 60 ms in DataLoader
// __next__, a 10 ms pageable copy, then 30 ms of kernels.
func inputBound(n int) *tt.Builder {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	for i := range n {
		t0 := int64(i) * 100 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+100*ms)
		b.Range(h, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0, t0+60*ms)
		b.Memcpy(h, s, tt.Pageable(64<<20), t0+60*ms, t0+70*ms, t0+60*ms+10*us, t0+70*ms)
		for k := range 3 {
			ks := t0 + 70*ms + int64(k)*10*ms
			b.Launch(h, s, "gemm", ks-5*us, ks-1*us, ks, ks+10*ms)
		}
	}
	return b
}

func TestInputBoundSteps(t *testing.T) {
	r := run(t, inputBound(5).Build(t))
	if r.Steps.Count != 5 || r.Steps.StartupExcluded != 0 || r.Steps.Source != "ProfilerStep" {
		t.Fatalf("steps %+v", r.Steps)
	}
	if r.Steps.MedianNS != 100*ms || r.SteadyWindowNS != 500*ms {
		t.Fatalf("median %d steady %d", r.Steps.MedianNS, r.SteadyWindowNS)
	}
	b := r.Steps.BreakdownNS
	// The copy call waits 10 µs before its transfer starts: a wait (sync),
	// not copy time.
	if b[index.Compute] != 30*ms || b[index.Copy] != 10*ms-10*us || b[index.Data] != 60*ms || b[index.Sync] != 10*us || b[index.OS] != 0 || b[index.Other] != 0 {
		t.Fatalf("breakdown %+v", b)
	}
	if !strings.HasPrefix(r.Verdict, "input-bound: 60 % of each step waits for data") {
		t.Errorf("verdict %q", r.Verdict)
	}
	dl := finding(r, "dataloader-wait")
	if dl == nil || dl.Severity != analyze.SeverityError || dl.WastedNS != 60*ms {
		t.Fatalf("dataloader-wait %+v", dl)
	}
	near(t, "dataloader share", dl.Share, 0.6, 1e-9)
	// The step model: 4 workers (with pin_memory, as the advice has it),
	// sized for workers at half the main thread's speed (a 120 ms batch
	// every 30 ms); at its speed the stream sets the pace: the 64 MiB
	// copy at 25 GB/s (2.68 ms) and 30 ms of kernels, 32.68 ms.
	near(t, "dataloader speedup", dl.EstimatedSpeedup, 3.06, 1e-9)
	if dl.EstimateSource != "model" || dl.Detail["workers"] != 4 || !strings.Contains(dl.Code, "num_workers=4") {
		t.Errorf("source %q, workers %v, code %q", dl.EstimateSource, dl.Detail["workers"], dl.Code)
	}
	sm := finding(r, "sync-memcpy")
	if sm == nil || sm.Severity != analyze.SeverityError || sm.WastedNS != 10*ms {
		t.Fatalf("sync-memcpy %+v", sm)
	}
	idle := finding(r, "gpu-idle")
	if idle == nil || idle.Severity != analyze.SeverityError || idle.WastedNS != 70*ms {
		t.Fatalf("gpu-idle %+v", idle)
	}
	if len(idle.Evidence) == 0 || !strings.Contains(idle.Evidence[0].What, "data loading") {
		t.Errorf("gpu-idle evidence %+v", idle.Evidence)
	}
	if r.Findings[0].ID != "gpu-idle" || r.Findings[1].ID != "dataloader-wait" {
		t.Errorf("order %s %s", r.Findings[0].ID, r.Findings[1].ID)
	}
	cs := finding(r, "copy-compute-serial")
	if cs == nil || cs.WastedNS != 10*ms-10*us {
		t.Errorf("copy-compute-serial %+v", cs)
	}
	// OS calls are traced, but a 64 MiB pageable batch copied each step with
	// no munmap in sight is what glibc's free() unmaps where nsys cannot
	// see: munmap-stall says it cannot judge rather than "no stall".
	if why := notObservable(r, "munmap-stall"); !strings.Contains(why, "inside glibc's free()") {
		t.Errorf("munmap-stall on 64 MiB pageable batches without a munmap: %q", why)
	}
}

func TestHealthyPipelineRaisesNothing(t *testing.T) {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	compute, side := b.Stream(0, 7), b.Stream(0, 13)
	for i := range 6 {
		t0 := int64(i) * 10 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+10*ms)
		b.Range(h, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", t0, t0+100*us)
		// The next batch's pinned copy overlaps this step's kernels.
		b.Memcpy(h, side, tt.Pinned(32<<20), t0+100*us, t0+120*us, t0+1*ms, t0+2*ms)
		b.Launch(h, compute, "gemm", t0+120*us, t0+130*us, t0+200*us, t0+9900*us)
	}
	r := run(t, b.Build(t))
	for _, f := range r.Findings {
		if f.Severity >= analyze.SeverityWarning {
			t.Errorf("unexpected %s %s: %s", f.Severity, f.ID, f.Title)
		}
	}
	if !strings.HasPrefix(r.Verdict, "compute-bound") {
		t.Errorf("verdict %q", r.Verdict)
	}
	near(t, "compute busy", r.GPU.ComputeBusyShare, 0.97, 1e-9)
}

func TestStartupStepExcluded(t *testing.T) {
	b := inputBound(0)
	h := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	// A 400 ms start-up step with a huge pageable copy, then 4 healthy steps.
	b.Range(h, "ProfilerStep#0", 0, 400*ms)
	b.Memcpy(h, s, tt.Pageable(1<<30), 10*ms, 300*ms, 11*ms, 300*ms)
	for i := 1; i <= 4; i++ {
		t0 := 400*ms + int64(i-1)*10*ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+10*ms)
		b.Launch(h, s, "gemm", t0, t0+10*us, t0+20*us, t0+10*ms)
	}
	r := run(t, b.Build(t))
	if r.Steps.Count != 5 || r.Steps.StartupExcluded != 1 || r.Steps.StartupNS != 400*ms || r.SteadyWindowNS != 40*ms {
		t.Fatalf("steps %+v steady %d", r.Steps, r.SteadyWindowNS)
	}
	if !r.Steps.PerStep[0].Startup || r.Steps.PerStep[0].BreakdownNS[index.Copy] == 0 {
		t.Errorf("start-up step not reported on its own: %+v", r.Steps.PerStep[0])
	}
	if f := finding(r, "sync-memcpy"); f != nil {
		t.Errorf("start-up copy counted: %+v", f)
	}
}

func TestNoStepsIsOneWindow(t *testing.T) {
	b := tt.New()
	h := b.Thread(1, 1, "")
	s := b.Stream(0, 7)
	b.Launch(h, s, "k", 0, 10*us, 20*us, 1*ms)
	b.API(h, "cudaDeviceSynchronize", 20*us, 1*ms)
	b.Launch(h, s, "k", 3*ms, 3*ms+10*us, 3*ms+20*us, 4*ms)
	b.OS(h, "ioctl", 5*ms, 6*ms) // after the last GPU work: not judged
	r := run(t, b.Build(t))
	// One step: the span of GPU activity, from the first kernel to the last.
	if r.Steps.Count != 1 || r.Steps.Source != "window" || r.SteadyWindowNS != 4*ms-20*us {
		t.Fatalf("steps %+v", r.Steps)
	}
	// 2.02 ms of host work after the sync returns at 1 ms, capped at the
	// 980 µs the host was blocked: only that much could have overlapped.
	sa := finding(r, "sync-api")
	if sa == nil || sa.WastedNS != 980*us {
		t.Fatalf("sync-api %+v", sa)
	}
	if why := notObservable(r, "dataloader-wait"); why == "" {
		t.Error("dataloader-wait should be not observable without data ranges")
	}
}

func TestOnlyCPUEvents(t *testing.T) {
	b := tt.New()
	b.B.Observed = timeline.Observed{HostOps: true}
	h := b.Thread(1, 1, "python")
	b.Op(h, "aten::add", 0, 10*us)
	b.Op(h, "aten::mul", 20*us, 30*us)
	r := run(t, b.Build(t))
	for _, id := range []string{"gpu-idle", "copy-compute-serial", "sync-memcpy", "munmap-stall"} {
		if notObservable(r, id) == "" {
			t.Errorf("%s should be not observable on a CPU-only trace", id)
		}
	}
	if len(r.Findings) != 0 || !strings.Contains(r.Verdict, "no GPU kernels") {
		t.Errorf("findings %+v verdict %q", r.Findings, r.Verdict)
	}
}

func TestSeveralProcessesAndDevices(t *testing.T) {
	b := tt.New()
	main := b.Thread(1, 1, "rank0")
	other := b.Thread(2, 2, "rank1")
	d0, d1 := b.Stream(0, 7), b.Stream(1, 7)
	for i := range 4 {
		t0 := int64(i) * 10 * ms
		b.Range(main, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+10*ms)
		b.Launch(main, d0, "k0", t0, t0+10*us, t0+5*ms, t0+10*ms) // device 0 idle half the step
		b.Launch(other, d1, "k1", t0, t0+10*us, t0, t0+10*ms)     // device 1 always busy
	}
	r := run(t, b.Build(t))
	idle := finding(r, "gpu-idle")
	if idle == nil || idle.WastedNS != 5*ms {
		t.Fatalf("gpu-idle must follow the main process's device only: %+v", idle)
	}
	near(t, "compute busy", r.GPU.ComputeBusyShare, 0.5, 1e-9)
}

func TestOverlappingStreamsCountOnce(t *testing.T) {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s1, s2 := b.Stream(0, 7), b.Stream(0, 8)
	for i := range 3 {
		t0 := int64(i) * 10 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+10*ms)
		b.Launch(h, s1, "a", t0, t0+10*us, t0+1*ms, t0+6*ms)
		b.Launch(h, s2, "b", t0+10*us, t0+20*us, t0+4*ms, t0+8*ms)
	}
	r := run(t, b.Build(t))
	if got := r.Steps.BreakdownNS[index.Compute]; got != 7*ms {
		t.Fatalf("compute %d, want the union 7 ms", got)
	}
	if f := finding(r, "gpu-idle"); f == nil || f.WastedNS != 3*ms {
		t.Fatalf("gpu-idle %+v", f)
	}
}

func TestRepeatedRangesDefineSteps(t *testing.T) {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	for i := range 6 {
		t0 := int64(i) * 100 * ms
		if i == 0 {
			b.Range(h, "setup", 0, 1*ms) // happens once: not a step
		}
		b.Range(h, "get batch", t0+1*ms, t0+50*ms)
		b.Range(h, "copy batch", t0+50*ms, t0+60*ms)
		b.Memcpy(h, s, tt.Pageable(64<<20), t0+50*ms, t0+60*ms, t0+51*ms, t0+60*ms)
		b.Range(h, "compute", t0+60*ms, t0+99*ms)
		b.Launch(h, s, "k", t0+60*ms, t0+61*ms, t0+61*ms, t0+99*ms)
	}
	r := run(t, b.Build(t))
	if r.Steps.Count != 6 || r.Steps.Source != `repeated range "get batch"` {
		t.Fatalf("steps %+v", r.Steps)
	}
	last := r.Steps.PerStep[5]
	if last.EndNS != 599*ms {
		t.Errorf("last step ends at %d, want the end of its compute range", last.EndNS)
	}
	dl := finding(r, "dataloader-wait")
	if dl == nil || dl.Severity != analyze.SeverityError {
		t.Fatalf("dataloader-wait %+v", dl)
	}
}

func TestMunmapStall(t *testing.T) {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	for i := range 4 {
		t0 := int64(i) * 10 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+10*ms)
		b.OS(h, "munmap", t0, t0+2*ms)
		b.OS(h, "poll", t0+2*ms, t0+3*ms) // not a memory call
		b.Launch(h, s, "k", t0+3*ms, t0+3*ms+10*us, t0+3*ms+20*us, t0+10*ms)
	}
	tl := b.Build(t)
	r := run(t, tl)
	f := finding(r, "munmap-stall")
	if f == nil || f.WastedNS != 2*ms || f.Severity != analyze.SeverityError {
		t.Fatalf("munmap-stall %+v", f)
	}
	if r.Steps.BreakdownNS[index.OS] != 2*ms {
		t.Errorf("os bucket %d", r.Steps.BreakdownNS[index.OS])
	}
	tl.Observed.OSCalls = false
	tl.Source.Format = "chrome-trace"
	if why := notObservable(run(t, tl), "munmap-stall"); !strings.Contains(why, "nsys") {
		t.Errorf("not observable reason %q", why)
	}
}

func TestLaunchBound(t *testing.T) {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	for i := range 3 {
		t0 := int64(i) * 10 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+10*ms)
		// 200 kernels of 5 µs, each launch taking 20 µs of host time.
		for k := range 200 {
			c := t0 + int64(k)*20*us
			b.Launch(h, s, "tiny", c, c+20*us, c+20*us, c+25*us)
		}
	}
	r := run(t, b.Build(t))
	f := finding(r, "launch-bound")
	// 199 gaps of 15 µs in each 10 ms step: 29.85 %, a warning (10 % / 30 %).
	if f == nil || f.Severity != analyze.SeverityWarning {
		t.Fatalf("launch-bound %+v", f)
	}
	if f.Detail["kernels_per_step"] != 200 {
		t.Errorf("detail %+v", f.Detail)
	}
	if f.WastedNS != 199*15*us {
		t.Errorf("wasted %d", f.WastedNS)
	}
}

// TestNotSteadyCapsFindings: a window that is not a steady loop (one
// profiled step whose GPU work does not repeat) gets the not-steady verdict
// with what to capture instead, and no finding above info, each with an
// estimated speedup of 1 (issue 11: ERROR est. 100x on one-off windows).
func TestNotSteadyCapsFindings(t *testing.T) {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	b.Range(h, "ProfilerStep#1", 0, 100*ms)
	b.Memcpy(h, s, tt.Pageable(64<<20), 1*ms, 60*ms, 2*ms, 60*ms)
	b.Launch(h, s, "init", 70*ms, 70*ms+10*us, 70*ms+20*us, 71*ms)
	b.Launch(h, s, "solve", 80*ms, 80*ms+10*us, 80*ms+20*us, 81*ms)
	r := run(t, b.Build(t))
	if !strings.HasPrefix(r.Verdict, "not-steady: the window holds no repeated step with GPU work") ||
		!strings.Contains(r.Verdict, "torch.profiler.schedule(wait=1, warmup=2, active=3)") {
		t.Errorf("verdict %q", r.Verdict)
	}
	if len(r.Findings) == 0 {
		t.Fatal("the findings should still be listed, as info")
	}
	for _, f := range r.Findings {
		if f.Severity > analyze.SeverityInfo || f.EstimatedSpeedup != 1 {
			t.Errorf("%s: %s, est. %v", f.ID, f.Severity, f.EstimatedSpeedup)
		}
	}
}

// TestEstimatesAreBounded: on every finding of a loop that is copy-bound
// with little compute, the estimate never exceeds what removing the cause
// gives: 1 / (1 - share), and the residual named in detail.bound.
func TestEstimatesAreBounded(t *testing.T) {
	b := tt.New()
	b.B.AddDevice(timeline.Device{ID: 0, Name: "NVIDIA H200"})
	h := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	for i := range 4 {
		t0 := int64(i) * 20 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+20*ms)
		b.Memcpy(h, s, tt.Pageable(120<<20), t0, t0+19*ms, t0+10*us, t0+19*ms)
		b.Launch(h, s, "matmul", t0+19*ms, t0+19*ms+5*us, t0+19*ms+10*us, t0+20*ms)
	}
	r := run(t, b.Build(t))
	if len(r.Findings) < 3 {
		t.Fatalf("findings %+v", r.Findings)
	}
	all, _ := r.Model.Fix(model.All)
	for _, f := range r.Findings {
		if f.EstimateSource != "model" && f.EstimatedSpeedup > analyze.Speedup(f.Share)+1e-9 {
			t.Errorf("%s: est. %v above 1/(1-share) %v", f.ID, f.EstimatedSpeedup, analyze.Speedup(f.Share))
		}
		if f.EstimatedSpeedup > all.Speedup+1e-9 {
			t.Errorf("%s: est. %v above all the fixes together (%v)", f.ID, f.EstimatedSpeedup, all.Speedup)
		}
		if f.Bound == "" {
			t.Errorf("%s: no detail.bound", f.ID)
		}
	}
	// Overlap hides at most 1 ms of compute: copy-compute-serial (the copy
	// stream alone) promises little; gpu-idle, the symptom, carries all
	// the fixes: the pinned copy at the GPU's link speed.
	if f := finding(r, "copy-compute-serial"); f == nil || f.EstimatedSpeedup > 1.1 {
		t.Errorf("copy-compute-serial: %+v", f)
	}
	if f := finding(r, "gpu-idle"); f == nil || f.EstimatedSpeedup != all.Speedup {
		t.Errorf("gpu-idle: %+v, want all's %v", f, all.Speedup)
	}
	if f := finding(r, "sync-memcpy"); f == nil || f.EstimatedSpeedup < 3 || f.EstimatedSpeedup > 8 {
		t.Errorf("sync-memcpy: %+v", f)
	}
}

// One step of four holds the whole data wait: the verdict says so, and
// no finding it drives is above info (the trace shows the stall once).
func TestOneStepStallIsNotEachStep(t *testing.T) {
	b := tt.New()
	main := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	start := int64(0)
	for k, wait := range []int64{0, 100 * ms, 0, 0} {
		b.Range(main, fmt.Sprintf("ProfilerStep#%d", k+1), start, start+wait+10*ms)
		if wait > 0 {
			b.Range(main, "get batch", start, start+wait)
		}
		b.Launch(main, s, "gemm", start+wait, start+wait+5*us, start+wait, start+wait+9*ms)
		start += wait + 10*ms
	}
	r := run(t, b.Build(t))
	if !strings.HasPrefix(r.Verdict, "input-bound: ") || !strings.HasSuffix(r.Verdict, " (100 % of it in one of the 4 steady steps: see the findings)") {
		t.Errorf("verdict %q", r.Verdict)
	}
	for _, f := range r.Findings {
		if f.Severity > analyze.SeverityInfo {
			t.Errorf("%s %v: %s", f.ID, f.Severity, f.Title)
		}
	}
	if dl := finding(r, "dataloader-wait"); dl == nil || dl.OneOff == "" || !strings.HasPrefix(dl.Fix, analyze.OneOffFix) {
		t.Errorf("dataloader-wait %+v", dl)
	}
	// The same wait in every step is a per-step cost: an error, no caveat.
	b = tt.New()
	main = b.Thread(1, 1, "python")
	s = b.Stream(0, 7)
	for k := range 4 {
		at := int64(k) * 110 * ms
		b.Range(main, fmt.Sprintf("ProfilerStep#%d", k+1), at, at+110*ms)
		b.Range(main, "get batch", at, at+100*ms)
		b.Launch(main, s, "gemm", at+100*ms, at+100*ms+5*us, at+100*ms, at+109*ms)
	}
	r = run(t, b.Build(t))
	if dl := finding(r, "dataloader-wait"); dl == nil || dl.Severity != analyze.SeverityError || dl.OneOff != "" || strings.Contains(r.Verdict, "one of the") {
		t.Errorf("a wait every step: verdict %q, %+v", r.Verdict, dl)
	}
}

// The MPI functions the main thread spends the steady steps in, most time
// first, up to 3; none outside the steady steps, none in a CUDA program.
func TestMPICalls(t *testing.T) {
	b := tt.New()
	main := b.Thread(1, 1, "MPI Rank 0")
	s := b.Stream(0, 7)
	b.Range(main, "MPI_Init", 0, 50*ms) // start-up, before the steps
	for k := range 4 {
		at := 100*ms + int64(k)*10*ms
		b.Range(main, "saxpy", at, at+10*ms)
		b.Range(main, "MPI_Recv", at, at+3*ms)
		b.Range(main, "MPI_Send", at+3*ms, at+4*ms)
		b.Range(main, "MPI_Barrier", at+4*ms, at+4*ms+100*us)
		b.Range(main, "MPI_Wtime", at+4*ms+100*us, at+4*ms+110*us)
		b.Launch(main, s, "saxpy_kernel", at+5*ms, at+5*ms+5*us, at+5*ms, at+9*ms)
	}
	r := run(t, b.Build(t))
	if got := strings.Join(r.MPICalls, ","); got != "MPI_Recv,MPI_Send,MPI_Barrier" {
		t.Errorf("MPI calls %q (steps from %s)", got, r.Steps.Source)
	}
	if r := run(t, inputBound(5).Build(t)); r.MPICalls != nil {
		t.Errorf("a CUDA program's MPI calls: %v", r.MPICalls)
	}
}

// TestPrecision: the mean step's standard error as a share of it, the
// steady steps' range (steps left out not counted) and the steps that
// would bring the share to LooseMean: the count times the square of the
// share over it, never fewer than there are.
func TestPrecision(t *testing.T) {
	per := []StepEntry{
		{StartNS: 0, EndNS: 900 * ms, Startup: true},
		{StartNS: 1000 * ms, EndNS: 1008 * ms},
		{StartNS: 1010 * ms, EndNS: 1085 * ms},
		{StartNS: 1090 * ms, EndNS: 1105 * ms},
		{StartNS: 1110 * ms, EndNS: 1117 * ms},
		{StartNS: 1120 * ms, EndNS: 1149 * ms},
		{StartNS: 1150 * ms, EndNS: 3150 * ms, Paused: true},
	}
	s := StepSummary{Count: 7, StartupExcluded: 1, PausedExcluded: 1, MeanNS: 26800 * us, MeanStderrNS: 12328 * us, PerStep: per}
	p := s.Precision()
	share, lo, hi, want := p.Share, p.MinNS, p.MaxNS, p.WantSteps
	if math.Abs(share-0.46) > 1e-9 || lo != 7*ms || hi != 75*ms || want != 106 || p.Steps != 5 || !p.Loose() {
		t.Errorf("Precision() = %.4f, %d, %d, %d; want 0.46, 7 ms, 75 ms, 106 (ceil(5 × 4.6²))", share, lo, hi, want)
	}
	s.MeanStderrNS = 1340 * us // 5 %: the steps there are enough
	if p := s.Precision(); math.Abs(p.Share-0.05) > 1e-9 || p.WantSteps != 5 || p.Loose() {
		t.Errorf("a tight mean: %.4f, want %d steps", share, want)
	}
	for _, one := range []StepSummary{{Count: 1, MeanNS: ms, MeanStderrNS: 0}, {Count: 3, StartupExcluded: 1, TeardownExcluded: 1, MeanNS: ms, MeanStderrNS: ms}} {
		if p := one.Precision(); p.Share != 0 {
			t.Errorf("one steady step: a precision of %.2f", p.Share)
		}
	}
}
