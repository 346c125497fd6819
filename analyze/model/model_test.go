package model

import (
	"math"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/timeline"
	tt "github.com/traceaudit/traceaudit/timeline/timelinetest"
)

const ms = tt.Ms

// loop builds steps of the given length, each made by body at its start.
func loop(t *testing.T, steps int, step int64, body func(b *tt.Builder, main, s7 timeline.TrackID, at int64)) *index.Index {
	t.Helper()
	b := tt.New()
	main := b.Thread(1, 1, "python")
	s7 := b.Stream(0, 7)
	for k := range steps {
		at := int64(k) * step
		b.Range(main, "train_step", at, at+step)
		body(b, main, s7, at)
	}
	cfg := analyze.DefaultConfig()
	return index.New(b.Build(t), cfg)
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.3f, want %.3f ± %.3f", what, got, want, tol)
	}
}

// TestSyncCostsMoreThanItsWait: a read-back drains the GPU queue, so the
// host work after it (4 ms of metrics) runs with an idle GPU; without the
// sync it overlaps the next step's 5 ms kernel, and the step falls from
// 9 ms to the kernel's 5 ms.
func TestSyncCostsMoreThanItsWait(t *testing.T) {
	ix := loop(t, 8, 9*ms, func(b *tt.Builder, main, s7 timeline.TrackID, at int64) {
		b.Launch(main, s7, "gemm", at, at+10*tt.Us, at+20*tt.Us, at+5*ms)
		b.Memcpy(main, s7, tt.Copy{Dir: timeline.CopyDtoH, Src: timeline.MemDevice, Dst: timeline.MemPageable, Bytes: 4, API: "cudaMemcpyAsync"},
			at+20*tt.Us, at+5*ms+15*tt.Us, at+5*ms, at+5*ms+5*tt.Us)
		b.Op(main, "metrics", at+5*ms+20*tt.Us, at+9*ms-10*tt.Us)
	})
	m := Build(ix, Options{FindingOf: map[string]string{NoSync: "sync-api"}})
	if m == nil {
		t.Fatal("no model")
	}
	near(t, "fidelity", m.Fidelity, 1, 0.02)
	f, ok := m.Fix(NoSync)
	if !ok {
		t.Fatalf("no no-sync fix in %+v", m.Fixes)
	}
	near(t, "no-sync speedup", f.Speedup, 9.0/5, 0.1)
	if m.CriticalPath.Compute < 0.4 || m.CriticalPath.Other < 0.3 {
		t.Errorf("critical path %+v: want the kernel and the host work after the sync on it", m.CriticalPath)
	}
}

// TestPrefetchWorkers: the main thread builds each 8 ms batch itself
// before 2 ms of GPU work; a pool of N workers hides the build once N is
// about 8 / 2, and the model picks the smallest N within 5 % of the best.
func TestPrefetchWorkers(t *testing.T) {
	ix := loop(t, 6, 10*ms, func(b *tt.Builder, main, s7 timeline.TrackID, at int64) {
		b.Range(main, "get batch", at, at+8*ms)
		b.Launch(main, s7, "gemm", at+8*ms, at+8*ms+10*tt.Us, at+8*ms+20*tt.Us, at+10*ms-50*tt.Us)
		b.API(main, "cudaDeviceSynchronize", at+8*ms+20*tt.Us, at+10*ms-40*tt.Us)
	})
	m := Build(ix, Options{FindingOf: map[string]string{PrefetchWorkers: "dataloader-wait"}})
	if m == nil {
		t.Fatal("no model")
	}
	near(t, "fidelity", m.Fidelity, 1, 0.02)
	f, ok := m.Fix(PrefetchWorkers)
	if !ok {
		t.Fatalf("no prefetch-workers fix in %+v", m.Fixes)
	}
	if f.Workers < 4 || f.Workers > 8 {
		t.Errorf("workers = %d, want 4 to 8 (an 8 ms batch against 2 ms of the rest)", f.Workers)
	}
	if f.Speedup < 3.5 {
		t.Errorf("prefetch-workers speedup %.2f, want at least 3.5 (10 ms -> under 2.9 ms)", f.Speedup)
	}
	// With workers already running, the pool must grow past them.
	m = Build(ix, Options{RunningWorkers: 6, FindingOf: map[string]string{PrefetchWorkers: "dataloader-wait"}})
	if f, _ := m.Fix(PrefetchWorkers); f.Workers <= 6 {
		t.Errorf("with 6 workers running the model chose %d", f.Workers)
	}
}

// TestPinned: a pageable 100 MB copy at 5 GB/s blocks the host 20 ms a
// step; from pinned memory at 25 GB/s it takes 4 ms and no longer blocks.
func TestPinned(t *testing.T) {
	ix := loop(t, 5, 22*ms, func(b *tt.Builder, main, s7 timeline.TrackID, at int64) {
		b.Memcpy(main, s7, tt.Pageable(100_000_000), at, at+20*ms+10*tt.Us, at+10*tt.Us, at+20*ms)
		b.Launch(main, s7, "gemm", at+20*ms+20*tt.Us, at+20*ms+30*tt.Us, at+20*ms+40*tt.Us, at+22*ms-100*tt.Us)
		b.API(main, "cudaDeviceSynchronize", at+20*ms+40*tt.Us, at+22*ms-90*tt.Us)
	})
	m := Build(ix, Options{PinnedGBps: 25, FindingOf: map[string]string{Pinned: "sync-memcpy"}})
	near(t, "fidelity", m.Fidelity, 1, 0.02)
	f, _ := m.Fix(Pinned)
	// 4 ms of copy and 2 ms of kernel, in stream order: about 6 ms.
	near(t, "pinned speedup", f.Speedup, 22.0/6, 0.3)
	if _, ok := m.Fix(NoSync); ok {
		t.Error("no-sync simulated though no finding planned it")
	}
	if a, ok := m.Fix(All); !ok || a.Speedup != f.Speedup {
		t.Errorf("all = %+v, want pinned's %.3f alone", a, f.Speedup)
	}
}

// TestPinnedDropsTheCopysOwnSync: PyTorch synchronises the stream after a
// copy from pageable memory; pinned (a non-blocking copy) makes no such
// sync, so the host's 3 ms of work after it overlaps the copy. Each step:
// 1 ms of host work, a 20 ms pageable copy and its sync, 3 ms of host work,
// a 2 ms kernel and a sync at the end. Pinned at 25 GB/s: the copy takes 4
// ms, the host's 3 ms run beside it, then the kernel: about 1 + 4 + 2 = 7
// ms, where keeping the copy's sync would give 1 + 4 + 3 + 2 = 10.
func TestPinnedDropsTheCopysOwnSync(t *testing.T) {
	ix := loop(t, 5, 26*ms, func(b *tt.Builder, main, s7 timeline.TrackID, at int64) {
		c := at + ms
		b.Memcpy(main, s7, tt.Pageable(100_000_000), c, c+19*ms, c+10*tt.Us, c+20*ms)
		b.API(main, "cudaStreamSynchronize", c+19*ms+5*tt.Us, c+20*ms+10*tt.Us)
		k := c + 23*ms
		b.Launch(main, s7, "gemm", k, k+10*tt.Us, k+20*tt.Us, k+2*ms-100*tt.Us)
		b.API(main, "cudaDeviceSynchronize", k+20*tt.Us, k+2*ms-90*tt.Us)
	})
	m := Build(ix, Options{PinnedGBps: 25, FindingOf: map[string]string{Pinned: "sync-memcpy"}})
	near(t, "fidelity", m.Fidelity, 1, 0.03)
	f, _ := m.Fix(Pinned)
	near(t, "pinned step (ms)", float64(f.StepNS)/float64(ms), 7, 0.5)
}

// TestNotSteady: a window that is not a steady loop has no model.
func TestNotSteady(t *testing.T) {
	b := tt.New()
	main := b.Thread(1, 1, "python")
	s7 := b.Stream(0, 7)
	b.Launch(main, s7, "gemm", 0, 10*tt.Us, 20*tt.Us, 5*ms)
	ix := index.New(b.Build(t), analyze.DefaultConfig())
	if m := Build(ix, Options{}); m != nil && ix.NotSteady != "" {
		t.Errorf("model %+v of a window that is not steady (%s)", m, ix.NotSteady)
	}
}

// TestLoaderPace: DataLoader workers deliver a batch every 22 ms and the
// main thread waits 2 ms for each; the 20 ms pageable copy is not what
// bounds the step then, and pinning it leaves the workers' pace, where a
// loop not paced by its workers would gain from it.
func TestLoaderPace(t *testing.T) {
	ix := loop(t, 6, 24*ms, func(b *tt.Builder, main, s7 timeline.TrackID, at int64) {
		b.Range(main, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", at, at+2*ms)
		b.Memcpy(main, s7, tt.Pageable(100_000_000), at+2*ms, at+22*ms, at+2*ms+10*tt.Us, at+22*ms-10*tt.Us)
		b.Launch(main, s7, "gemm", at+22*ms+10*tt.Us, at+22*ms+20*tt.Us, at+22*ms+30*tt.Us, at+24*ms-100*tt.Us)
		b.API(main, "cudaDeviceSynchronize", at+22*ms+30*tt.Us, at+24*ms-90*tt.Us)
	})
	plan := map[string]string{Pinned: "sync-memcpy"}
	free := Build(ix, Options{PinnedGBps: 25, FindingOf: plan})
	paced := Build(ix, Options{PinnedGBps: 25, FindingOf: plan, LoaderPaced: true, RunningWorkers: 2})
	f, _ := free.Fix(Pinned)
	p, _ := paced.Fix(Pinned)
	if f.Speedup < 2.5 || p.Speedup > 1.1 {
		t.Errorf("pinned %.2fx unpaced, %.2fx paced by the workers: want over 2.5x, and about 1x", f.Speedup, p.Speedup)
	}
	near(t, "paced fidelity", paced.Fidelity, 1, 0.02)
}

// TestQueuedWorkKeepsItsStreamOrder: each step's copy is launched while
// the kernel before it runs and starts 8 µs after it ends (a copy
// engine's start): it is queued behind the kernel, so on its own stream it
// overlaps the kernel instead of waiting out the traced latency.
func TestQueuedWorkKeepsItsStreamOrder(t *testing.T) {
	ix := loop(t, 6, 9*ms, func(b *tt.Builder, main, s7 timeline.TrackID, at int64) {
		b.Launch(main, s7, "gemm", at, at+10*tt.Us, at+20*tt.Us, at+5*ms)
		b.Memcpy(main, s7, tt.Pinned(64<<20), at+20*tt.Us, at+30*tt.Us, at+5*ms+8*tt.Us, at+9*ms-100*tt.Us)
		b.API(main, "cudaStreamSynchronize", at+40*tt.Us, at+9*ms-90*tt.Us)
	})
	m := Build(ix, Options{FindingOf: map[string]string{PinnedCopyStream: "copy-compute-serial"}})
	near(t, "fidelity", m.Fidelity, 1, 0.02)
	f, ok := m.Fix(PinnedCopyStream)
	if !ok || f.Speedup < 1.5 {
		t.Errorf("pinned-copy-stream %+v: want the copy overlapping the kernel (9 ms -> about 5 ms)", f)
	}
}

// TestGraphGapIsBusy: 200 kernels of 1 µs launched 20 µs apart; a CUDA
// graph runs them back to back, GraphGapNS apart, and that gap is GPU time
// the step cannot go below.
func TestGraphGapIsBusy(t *testing.T) {
	const n, us = 200, tt.Us
	ix := loop(t, 5, n*20*us+100*us, func(b *tt.Builder, main, s7 timeline.TrackID, at int64) {
		for i := range int64(n) {
			c := at + i*20*us
			b.Launch(main, s7, "add", c, c+15*us, c+16*us, c+17*us)
		}
		b.API(main, "cudaDeviceSynchronize", at+n*20*us, at+n*20*us+50*us)
	})
	m := Build(ix, Options{FindingOf: map[string]string{CUDAGraph: "launch-bound"}})
	f, ok := m.Fix(CUDAGraph)
	if min := int64(n * (1*us + GraphGapNS)); !ok || f.StepNS < min {
		t.Errorf("cuda-graph %+v: want a step of at least %d ns, the kernels and the graph's gaps", f, min)
	}
}

// TestLongRunWindow: a run of 300 steady steps is simulated as its middle
// maxWindowSteps steps, with the same step and fidelity as the loop.
func TestLongRunWindow(t *testing.T) {
	ix := loop(t, 300, 2*ms, func(b *tt.Builder, main, s7 timeline.TrackID, at int64) {
		b.Launch(main, s7, "gemm", at, at+10*tt.Us, at+20*tt.Us, at+1500*tt.Us)
		b.Op(main, "host", at+20*tt.Us, at+2*ms-10*tt.Us)
	})
	lo, hi, n := window(ix)
	if n != maxWindowSteps || (hi-lo)/int64(n) != 2*ms {
		t.Fatalf("window of %d steps, %d ns each: want %d of 2 ms", n, (hi-lo)/int64(max(n, 1)), maxWindowSteps)
	}
	if first := ix.Steady[0].Start; lo-first < int64(len(ix.Steady)-maxWindowSteps)/2*2*ms-2*ms {
		t.Errorf("window starts %d ns into the steady steps: want the middle of the run", lo-first)
	}
	m := Build(ix, Options{})
	if m == nil {
		t.Fatal("no model")
	}
	near(t, "fidelity", m.Fidelity, 1, 0.02)
}
