package cuda

// GPU tests of CUDA graphs: capture, instantiate, launch, and what a graph
// saves over launching each kernel on its own. See gpu_test.go for gpu(t).

import (
	"errors"
	"testing"
	"time"
)

func TestCaptureWithoutGraphSupport(t *testing.T) {
	c := &Context{d: &Driver{}} // a driver whose graph calls are not bound
	if _, err := c.Capture(func(*Stream) error { return nil }); !errors.Is(err, ErrNoGraphs) {
		t.Errorf("Capture on a driver without graphs: %v, want ErrNoGraphs", err)
	}
}

// TestGPUGraph captures 200 spin kernels of 10 µs into a graph and checks
// that launching it runs them all (GPU time at least 200 × 10 µs) and that
// the host spends far less time launching the graph than launching the
// kernels one by one, which is what the cuda-graph replay variant measures.
func TestGPUGraph(t *testing.T) {
	c := gpu(t)
	if !c.Driver().hasGraphs() {
		t.Skip("the driver lacks CUDA graphs")
	}
	must(t, c.PrepareSpin())
	const n, d = 200, 10 * time.Microsecond
	g, err := c.Capture(func(s *Stream) error {
		for range n {
			if err := c.Spin(s, d); err != nil {
				return err
			}
		}
		return nil
	})
	must(t, err)
	x, err := g.Instantiate()
	must(t, err)
	must(t, g.Destroy()) // the executable graph does not need it
	if err := g.Destroy(); err == nil {
		t.Error("double Destroy of a graph succeeded")
	}
	s, start, end := timedStream(t, c)
	run := func(graph bool) (host, dev time.Duration) {
		must(t, c.Spin(s, 300*time.Microsecond)) // hide the host's queueing time
		must(t, start.Record(s))
		t0 := time.Now()
		if graph {
			must(t, x.Launch(s))
		} else {
			for range n {
				must(t, c.Spin(s, d))
			}
		}
		host = time.Since(t0)
		must(t, end.Record(s))
		must(t, end.Synchronize())
		dev, err := c.Elapsed(start, end)
		must(t, err)
		return host, dev
	}
	run(true) // the first launch uploads the graph
	best := func(graph bool) (time.Duration, time.Duration) {
		bh, bd := time.Hour, time.Hour
		for range 5 {
			h, d := run(graph)
			bh, bd = min(bh, h), min(bd, d)
		}
		return bh, bd
	}
	gh, gd := best(true)
	kh, kd := best(false)
	t.Logf("%d kernels of %v: graph launch %v on the host, %v on the GPU; one by one %v on the host, %v on the GPU", n, d, gh, gd, kh, kd)
	// Kernels this short run one block, which ends when the GPU's clock has
	// moved on by d from its start: up to one clock tick (1 µs on some
	// GPUs) less than d.
	if want := time.Duration(n) * (d - time.Microsecond); gd < want || kd < want {
		t.Errorf("GPU time %v (graph) and %v (one by one), want at least %v: not every kernel ran", gd, kd, want)
	}
	if gh*5 > kh {
		t.Errorf("launching the graph took %v on the host, not much less than %v for the kernels one by one", gh, kh)
	}
	must(t, x.Destroy())
	if err := x.Launch(s); err == nil {
		t.Error("Launch of a destroyed graph exec succeeded")
	}
	// A capture whose function fails leaves nothing behind.
	boom := errors.New("boom")
	if _, err := c.Capture(func(*Stream) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Capture with a failing function: %v", err)
	}
}

// TestGPUGraphClose checks that Close frees graphs left alive.
func TestGPUGraphClose(t *testing.T) {
	c := gpu(t)
	if !c.Driver().hasGraphs() {
		t.Skip("the driver lacks CUDA graphs")
	}
	must(t, c.PrepareSpin())
	g, err := c.Capture(func(s *Stream) error { return c.Spin(s, time.Microsecond) })
	must(t, err)
	x, err := g.Instantiate()
	must(t, err)
	must(t, x.Launch(nil))
	must(t, c.Close())
	if err := x.Launch(nil); err == nil {
		t.Error("Launch after Close succeeded")
	}
	if err := g.Destroy(); err == nil {
		t.Error("Destroy after Close succeeded")
	}
}

// TestGPUShortKernelsBackToBack logs what one short spin kernel costs back
// to back in a CUDA graph, one block against the full grid, at the lengths
// of a launch-bound step's kernels (the cuda-graph replay's floor), and
// checks that every kernel ran.
func TestGPUShortKernelsBackToBack(t *testing.T) {
	c := gpu(t)
	if !c.Driver().hasGraphs() {
		t.Skip("the driver lacks CUDA graphs")
	}
	must(t, c.PrepareSpin())
	s, start, end := timedStream(t, c)
	const n = 400
	for _, d := range []time.Duration{0, time.Microsecond, 5 * time.Microsecond} {
		var got [2]time.Duration
		for i, blocks := range []uint32{1, uint32(c.SpinGrid())} {
			g, err := c.Capture(func(s *Stream) error {
				for range n {
					if err := c.spinOn(s, d, blocks); err != nil {
						return err
					}
				}
				return nil
			})
			must(t, err)
			x, err := g.Instantiate()
			must(t, err)
			must(t, g.Destroy())
			best := time.Hour
			for rep := range 4 {
				must(t, c.Spin(s, 300*time.Microsecond))
				must(t, start.Record(s))
				must(t, x.Launch(s))
				must(t, end.Record(s))
				must(t, end.Synchronize())
				el, err := c.Elapsed(start, end)
				must(t, err)
				if rep > 0 { // the first launch uploads the graph
					best = min(best, el)
				}
			}
			must(t, x.Destroy())
			got[i] = best / n
			if best < n*max(d-time.Microsecond, 0) { // up to a clock tick short each
				t.Errorf("%d kernels of %v on %d blocks ran in %v", n, d, blocks, best)
			}
		}
		t.Logf("Spin(%v) back to back in a graph: %v per kernel on 1 block, %v on the full grid of %d", d, got[0], got[1], c.SpinGrid())
	}
}
