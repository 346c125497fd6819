package cudaexec

// Tests on a real GPU: each skips where libcuda.so.1 or a device is
// missing. They read no files, so a test binary built elsewhere runs them:
//
//	CGO_ENABLED=0 go test -c -o replay-cudaexec.test ./replay/cudaexec
//	./replay-cudaexec.test -test.v               # on the GPU box

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/replay"
	"github.com/traceaudit/traceaudit/replay/cuda"
	"github.com/traceaudit/traceaudit/timeline"
)

func gpu(t *testing.T) *Executor {
	t.Helper()
	ex, err := Open(0)
	if errors.Is(err, cuda.ErrNoCUDA) || errors.Is(err, cuda.ErrNoDevice) {
		t.Skipf("no GPU: %v", err)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := ex.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ex
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// run replays the named variants of a hand-made plan and returns the
// result, the variants with their measurements.
func run(t *testing.T, ex *Executor, st replay.Phases, variants string) (*replay.Result, *replay.Box) {
	t.Helper()
	p := &replay.Plan{File: "synthetic", ObservedStepNS: 1, ObservedStepMeanNS: 1, ObservedGPUNS: 1, Step: st}
	must(t, p.Select(variants)) // observed, as the step shows it, and the variants
	box, measured, err := replay.Run(context.Background(), ex, p, replay.Options{Steps: 10, Warmup: 2})
	must(t, err)
	r := replay.NewResult(p, ex.Device(), measured, 10, box)
	for _, v := range r.Variants {
		t.Logf("%-20s mean %v median %v GPU %v speedup %.2fx %s", v.Name, time.Duration(v.StepNSMean), time.Duration(v.StepNSMedian),
			time.Duration(v.GPUNSMean), v.Speedup, v.Note)
	}
	return r, box
}

func TestGPUExecutorGraphAndWaits(t *testing.T) {
	ex := gpu(t)
	d, err := ex.MeasureCompute(time.Millisecond)
	must(t, err)
	if d < 950*time.Microsecond || d > 1200*time.Microsecond {
		t.Errorf("MeasureCompute(1 ms) = %v", d)
	}
	s, err := ex.NewStream()
	must(t, err)
	g, err := ex.ComputeGraph(100, 10*time.Microsecond)
	must(t, err)
	a, err := ex.Record(s)
	must(t, err)
	must(t, ex.LaunchGraph(s, g))
	b, err := ex.Record(s)
	must(t, err)
	must(t, ex.HostWait(b))
	el, err := ex.Elapsed(a, b)
	must(t, err)
	t.Logf("a graph of 100 kernels of 10 µs: %v on the GPU", el)
	if el < 900*time.Microsecond { // each 10 µs kernel up to a 1 µs clock tick short
		t.Errorf("graph ran %v, less than its 100 × 10 µs", el)
	}
	ex.Release(a)
	ex.Release(b)
	must(t, ex.DestroyGraph(g))
	if err := ex.LaunchGraph(s, "not a graph"); err == nil {
		t.Error("LaunchGraph of a foreign value succeeded")
	}
}

// TestGPUReplayCUDAGraph: 200 kernels of 5 µs launched every 30 µs take at
// least 6 ms a step as observed; captured in a graph, about 200 × 5 µs.
func TestGPUReplayCUDAGraph(t *testing.T) {
	ex := gpu(t)
	l := &replay.Launches{Kernels: 200, KernelNS: 5_000, IntervalNS: 30_000}
	r, _ := run(t, ex, replay.Phases{ComputeNS: 200*5_000 + 500_000, Sync: true, Launches: l}, "cuda-graph")
	obs, g := r.Variants[0], r.Variants[1]
	if obs.StepNSMean < 6_000_000 {
		t.Errorf("observed step %v, less than 200 launches 30 µs apart", time.Duration(obs.StepNSMean))
	}
	if g.Speedup < 2 {
		t.Errorf("cuda-graph speedup %.2fx, want above 2x", g.Speedup)
	}
}

// TestGPUReplayNoSync: 5 ms of host work while the GPU idles, then 5 ms of
// compute and a sync: about 10 ms a step; without the per-step sync the
// host work overlaps the previous step's compute.
func TestGPUReplayNoSync(t *testing.T) {
	ex := gpu(t)
	r, _ := run(t, ex, replay.Phases{ComputeNS: 5_000_000, OtherNS: 5_000_000, Sync: true}, "no-sync")
	obs, ns := r.Variants[0], r.Variants[1]
	if obs.StepNSMean < 9_500_000 {
		t.Errorf("observed step %v, want about 10 ms", time.Duration(obs.StepNSMean))
	}
	if ns.Speedup < 1.5 || ns.Plan.SyncEvery != replay.SyncEvery {
		t.Errorf("no-sync speedup %.2fx (sync every %d), want above 1.5x", ns.Speedup, ns.Plan.SyncEvery)
	}
}

// TestGPUReplayCopies: a reused 64 MiB pageable batch; pinned copies run
// several times faster here, as the box measurement says too.
func TestGPUReplayCopies(t *testing.T) {
	ex := gpu(t)
	st := replay.Phases{ComputeNS: 1_000_000, Sync: true, Batches: replay.BatchesReused, OSObserved: true,
		Copies: []replay.Copy{{Dir: timeline.CopyHtoD, Bytes: 64 << 20, Pageable: true, ObservedNS: 10_000_000}}}
	r, box := run(t, ex, st, "pinned")
	if box == nil {
		t.Fatal("no box bandwidth")
	}
	t.Logf("box: pageable %.1f GB/s, pinned %.1f GB/s at %d bytes", box.PageableGBps, box.PinnedGBps, box.Bytes)
	if box.PinnedGBps < 2*box.PageableGBps || box.Bytes != 64<<20 {
		t.Errorf("box %+v: pinned copies should run well above pageable ones", box)
	}
	if v := r.Variants[1]; v.Speedup < 1.2 || v.Plan.PinOn != replay.PinOnNone {
		t.Errorf("pinned %+v: speedup %.2fx", v.Plan, v.Speedup)
	}
}

// TestGPUKernelFloor: a launch-bound step of 800 kernels of 935 ns
// launched every 10 µs. Each replayed kernel spins for 935 ns less the
// floor (an empty kernel back to back, measured first), so it takes less
// back to back than the floor plus the whole 935 ns; the log gives the
// graph's step for docs/calibration.md.
func TestGPUKernelFloor(t *testing.T) {
	ex := gpu(t)
	l := &replay.Launches{Kernels: 800, KernelNS: 935, IntervalNS: 10_000}
	r, box := run(t, ex, replay.Phases{ComputeNS: 800 * 935, Launches: l}, "cuda-graph")
	if box == nil || box.KernelFloorNS <= 0 || box.KernelNS <= 0 {
		t.Fatalf("box %+v: no kernel floor or kernel time", box)
	}
	t.Logf("kernel floor %v, replayed 935 ns kernel %v back to back; cuda-graph GPU %v per step",
		time.Duration(box.KernelFloorNS), time.Duration(box.KernelNS), time.Duration(r.Variants[1].GPUNSMean))
	if box.KernelNS >= l.KernelNS+box.KernelFloorNS {
		t.Errorf("a replayed kernel takes %v back to back, not less than the floor %v plus the trace's %v",
			time.Duration(box.KernelNS), time.Duration(box.KernelFloorNS), time.Duration(l.KernelNS))
	}
}

// TestGPUSchedule: a schedule of one thread, each step 5 ms of host work,
// a 5 ms kernel and a wait for it: about 10 ms a step; without the wait
// (no-sync's schedule) the host work overlaps the kernel before it: about
// 5 ms.
func TestGPUSchedule(t *testing.T) {
	ex := gpu(t)
	step := func(wait bool) *model.Schedule {
		s := &model.Schedule{Name: "synthetic", Steps: 4, Streams: 1, Threads: make([]model.Thread, 1)}
		for range s.Steps {
			w := int32(len(s.Work))
			s.Work = append(s.Work, model.Work{Stream: 0, DurNS: 5_000_000, After: -1})
			launch := model.Call{Kind: model.CallLaunch, Anchor: -1, Wait: -1, GapNS: 5_000_000, HostNS: 5_000, Work: []int32{w}}
			sync := model.Call{Kind: model.CallSync, Anchor: -1, Wait: -1, HostNS: 5_000}
			if wait {
				sync.Wait = w
			}
			s.Threads[0].Calls = append(s.Threads[0].Calls, launch, sync)
		}
		return s
	}
	obs, err := replay.RunSchedule(context.Background(), ex, step(true), replay.Options{Steps: 8}, 0)
	must(t, err)
	free, err := replay.RunSchedule(context.Background(), ex, step(false), replay.Options{Steps: 8}, 0)
	must(t, err)
	t.Logf("observed %v, without the wait %v", obs, free)
	for _, d := range obs {
		if d < 9_800_000 || d > 11_000_000 {
			t.Errorf("observed pass: %v a step, want about 10 ms", time.Duration(d))
		}
	}
	for _, d := range free {
		if d < 4_900_000 || d > 5_600_000 {
			t.Errorf("without the wait: %v a step, want about 5 ms (the GPU's pace)", time.Duration(d))
		}
	}
}
