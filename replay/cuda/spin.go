package cuda

import (
	_ "embed"
	"fmt"
	"time"
)

// The spin kernel stands in for a trace's GPU compute: the replay knows how
// long each stream computed per step, not what it computed, so it runs a
// kernel that keeps every SM busy for exactly that long.
//
// How it keeps time. Each thread reads %globaltimer, the GPU's global
// nanosecond clock, once when it starts, and loops until the clock reaches
// that start plus the requested nanoseconds; each iteration does four
// dependent integer multiply-adds, so the SMs do real arithmetic rather than
// idle, and each thread stores its result at the end so the compiler keeps
// the work. All blocks of a launch are resident at once (two blocks of 128
// threads per SM is far below an SM's limits), so they start within a
// fraction of a microsecond of each other and the kernel ends about d after
// its start.
//
// What bounds its accuracy. The clock's update granularity (32 ns to about
// 1 µs depending on the GPU) can end a thread's loop up to one tick early
// or late. Timed with events on a stream, a kernel also shows the device's
// launch latency, a few µs; timed on the host, it shows the host's launch
// cost as well. MeasureSpin hides the host's part behind a lead kernel.
// The target, checked by TestGPUSpinAccuracy, is d within 5 % or 5 µs
// (whichever is larger) by events, from 50 µs to 1 s.
//
// Why PTX. The driver JIT-compiles PTX for whatever GPU it finds, so one
// hand-written text of .target sm_50 (.version 7.0, which drivers since
// CUDA 11.0 accept) serves every GPU from Maxwell to Hopper and later,
// without nvcc at build time.

// spinPTX is the spin kernel's source, spin.ptx: spin(u64 ns, u64 out).
//
//go:embed spin.ptx
var spinPTX string

// The spin kernel's launch shape: SpinBlocksPerSM blocks of SpinThreads
// threads per SM, so that every SM has work (an SM holds far more than two
// such blocks, so all blocks are resident at once and start together).
const (
	// SpinThreads is the spin kernel's block size in threads.
	SpinThreads = 128
	// SpinBlocksPerSM is the spin kernel's grid size per SM, in blocks.
	SpinBlocksPerSM = 2
)

// spinKernel is a context's loaded spin kernel and its output buffer.
type spinKernel struct {
	fn   *Function
	grid uint32
	out  DevicePtr // one uint32 per thread
}

// loadSpin loads the spin kernel on first use: the module (JIT-compiled
// from spin.ptx) and an output buffer of grid × SpinThreads uint32 values.
// Both are recorded in the context, so Close releases them.
func (c *Context) loadSpin() (*spinKernel, error) {
	c.spinMu.Lock()
	defer c.spinMu.Unlock()
	if c.spin != nil {
		return c.spin, nil
	}
	m, err := c.LoadPTX(spinPTX)
	if err != nil {
		return nil, fmt.Errorf("spin kernel: %w", err)
	}
	fn, err := m.Function("spin")
	if err != nil {
		m.Unload()
		return nil, fmt.Errorf("spin kernel: %w", err)
	}
	grid := uint32(SpinBlocksPerSM * max(c.sms, 1))
	out, err := c.Alloc(int(grid) * SpinThreads * 4)
	if err != nil {
		m.Unload()
		return nil, fmt.Errorf("spin kernel: %w", err)
	}
	c.spin = &spinKernel{fn: fn, grid: grid, out: out}
	return c.spin, nil
}

// SpinGrid is the spin kernel's full grid size in blocks: SpinBlocksPerSM ×
// SMCount.
func (c *Context) SpinGrid() int { return SpinBlocksPerSM * max(c.sms, 1) }

// ShortSpin is the duration under which Spin runs one block instead of the
// full grid. Kernels that short stand in for the short kernels of a
// launch-bound step (the launch-bound analyzer's are under 20 µs each):
// one after another on one stream, how many SMs each occupies does not
// change when the next one starts, but dispatching and draining 2 blocks
// per SM costs about a microsecond per kernel, which the trace's short
// kernels do not pay.
const ShortSpin = 20 * time.Microsecond

// spinBlocks is the spin kernel's grid for a kernel of d on a device
// with the given full grid.
func spinBlocks(full uint32, d time.Duration) uint32 {
	if d < ShortSpin {
		return 1
	}
	return full
}

// Spin queues, on stream s (nil: the legacy default stream), a kernel that
// keeps every SM of the device busy with integer arithmetic for d (one
// block, on one SM, when d is under ShortSpin), measured
// on the GPU's nanosecond clock (%globaltimer) from the moment each thread
// starts. It stands in for a trace's compute: d is the observed kernel time.
// A d of zero or less launches a kernel that exits at once.
//
// The kernel takes d plus the launch's own latency (a few µs) when timed
// with events around it; the first call also loads the kernel (see
// PrepareSpin). Spin returns once the kernel is queued.
func (c *Context) Spin(s *Stream, d time.Duration) error { return c.spinOn(s, d, 0) }

// SpinEach queues n Spin(d) kernels on s one after another from one OS
// thread, with the context made current once, and calls between(i) after
// the i-th is queued (nil: nothing): the launch-bound kernels of a
// replayed step, at the pace between keeps (Context.LaunchEach). Queuing
// each with Spin would make the context current again for every kernel,
// adding host time to every launch (BenchmarkGPULaunch compares the two).
func (c *Context) SpinEach(s *Stream, d time.Duration, n int, between func(i int)) error {
	return c.spinEach(s, d, 0, n, between)
}

// spinOn is Spin with a grid of blocks blocks (0: Spin's choice).
func (c *Context) spinOn(s *Stream, d time.Duration, blocks uint32) error {
	return c.spinEach(s, d, blocks, 1, nil)
}

// spinEach is SpinEach with a grid of blocks blocks (0: Spin's choice).
func (c *Context) spinEach(s *Stream, d time.Duration, blocks uint32, n int, between func(i int)) error {
	k, err := c.loadSpin()
	if err != nil {
		return err
	}
	if blocks == 0 {
		blocks = spinBlocks(k.grid, d)
	}
	ns := uint64(max(d, 0))
	return c.LaunchEach(k.fn, Dim3{X: min(blocks, k.grid)}, Dim3{X: SpinThreads}, 0, s, n, between, ns, k.out)
}

// spinLead is how long MeasureSpin keeps the stream busy before its start
// event, so that the host's time to queue the event, the kernel and the end
// event is hidden behind GPU work and not measured.
const spinLead = 300 * time.Microsecond

// MeasureSpin runs Spin(d) between two events on a stream of its own and
// returns the GPU time between the events: what a profiler would show as
// the kernel's duration plus its launch latency. Before the start event it
// queues a short lead spin, so the measurement holds GPU time only, not the
// host's time to queue the work. It waits for the result.
func (c *Context) MeasureSpin(d time.Duration) (time.Duration, error) {
	s, err := c.NewStream(StreamNonBlocking)
	if err != nil {
		return 0, err
	}
	defer s.Destroy()
	start, err := c.NewEvent()
	if err != nil {
		return 0, err
	}
	defer start.Destroy()
	end, err := c.NewEvent()
	if err != nil {
		return 0, err
	}
	defer end.Destroy()
	steps := []func() error{
		func() error { return c.Spin(s, spinLead) },
		func() error { return start.Record(s) },
		func() error { return c.Spin(s, d) },
		func() error { return end.Record(s) },
		end.Synchronize,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return 0, err
		}
	}
	return c.Elapsed(start, end)
}

// PrepareSpin loads the spin kernel, runs it once for zero time and waits
// for it, so that later Spin calls pay no loading cost (the driver may load
// a module's code lazily, at its first launch).
func (c *Context) PrepareSpin() error {
	if err := c.Spin(nil, 0); err != nil {
		return err
	}
	return c.Synchronize()
}
