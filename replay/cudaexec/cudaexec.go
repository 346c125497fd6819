// Package cudaexec carries out replay plans on an NVIDIA GPU through the
// CUDA driver API (package replay/cuda, loaded at run time with purego).
package cudaexec

import (
	"errors"
	"fmt"
	"time"

	"github.com/traceaudit/traceaudit/replay"
	"github.com/traceaudit/traceaudit/replay/cuda"
)

// Executor implements replay.Executor on one CUDA device.
type Executor struct {
	d   *cuda.Driver
	ctx *cuda.Context
}

// buffer is a device allocation.
type buffer struct {
	p cuda.DevicePtr
	n int64
}

func (b buffer) Size() int64 { return b.n }

// Open loads libcuda.so.1 and retains device ordinal's primary context.
// Its errors wrap cuda.ErrNoCUDA or cuda.ErrNoDevice where that is the
// cause.
func Open(ordinal int) (*Executor, error) {
	d, err := cuda.Open()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= d.DeviceCount() {
		return nil, fmt.Errorf("%w: device %d requested, %d present", cuda.ErrNoDevice, ordinal, d.DeviceCount())
	}
	c, err := d.NewContext(ordinal)
	if err != nil {
		return nil, err
	}
	if err := c.PrepareSpin(); err != nil {
		c.Close()
		return nil, err
	}
	return &Executor{d: d, ctx: c}, nil
}

// Device implements replay.Executor.
func (e *Executor) Device() string {
	maj, min := e.ctx.ComputeCapability()
	return fmt.Sprintf("%s (device %d, %d SMs, sm_%d%d, CUDA driver %s)", e.ctx.Name(), e.ctx.Ordinal(), e.ctx.SMCount(), maj, min, e.d.VersionString())
}

// FreeMemory implements replay.Executor.
func (e *Executor) FreeMemory() (int64, error) {
	free, _, err := e.ctx.MemInfo()
	return int64(free), err
}

// AllocDevice implements replay.Executor with plain cuMemAlloc.
func (e *Executor) AllocDevice(n int64) (replay.DeviceBuffer, error) {
	p, err := e.ctx.Alloc(int(n))
	if err != nil {
		return nil, err
	}
	return buffer{p, n}, nil
}

// FreeDevice implements replay.Executor with cuMemFree.
func (e *Executor) FreeDevice(b replay.DeviceBuffer) error { return e.ctx.Free(b.(buffer).p) }

// AllocPinned implements replay.Executor with cuMemAllocHost.
func (e *Executor) AllocPinned(n int64) ([]byte, error) { return e.ctx.AllocHost(int(n)) }

// FreePinned implements replay.Executor with cuMemFreeHost.
func (e *Executor) FreePinned(b []byte) error { return e.ctx.FreeHost(b) }

// NewStream implements replay.Executor. Streams are blocking (they order
// with the legacy default stream), like PyTorch's.
func (e *Executor) NewStream() (replay.Stream, error) { return e.ctx.NewStream(cuda.StreamDefault) }

func stream(s replay.Stream) *cuda.Stream { c, _ := s.(*cuda.Stream); return c }

func event(v replay.Event) *cuda.Event { c, _ := v.(*cuda.Event); return c }

// CopyHtoD implements replay.Executor the way PyTorch's tensor.to("cuda")
// does: cuMemcpyHtoDAsync on the stream, then, for a pageable source (which
// the driver stages through its own pinned buffer), a stream
// synchronisation, since a non-blocking copy from pageable memory is not
// asynchronous anyway.
func (e *Executor) CopyHtoD(s replay.Stream, dst replay.DeviceBuffer, src []byte, pinned bool) error {
	b, ok := dst.(buffer)
	if !ok {
		return errors.New("cudaexec: foreign device buffer")
	}
	if err := e.ctx.CopyHtoDAsync(b.p, src, stream(s)); err != nil {
		return err
	}
	if !pinned {
		return stream(s).Synchronize()
	}
	return nil
}

// CopyDtoH implements replay.Executor, like CopyHtoD.
func (e *Executor) CopyDtoH(s replay.Stream, dst []byte, src replay.DeviceBuffer, pinned bool) error {
	b, ok := src.(buffer)
	if !ok {
		return errors.New("cudaexec: foreign device buffer")
	}
	if err := e.ctx.CopyDtoHAsync(dst, b.p, stream(s)); err != nil {
		return err
	}
	if !pinned {
		return stream(s).Synchronize()
	}
	return nil
}

// Compute implements replay.Executor with the embedded spin kernel
// (Spin(0) for an empty kernel).
func (e *Executor) Compute(s replay.Stream, d time.Duration) error {
	if d < 0 {
		return nil
	}
	return e.ctx.Spin(stream(s), d)
}

// ComputeEach implements replay.Executor with cuda.Context.SpinEach: the
// kernels come from one thread with the context made current once.
func (e *Executor) ComputeEach(s replay.Stream, d time.Duration, n int, between func(i int)) error {
	if d < 0 {
		return nil
	}
	return e.ctx.SpinEach(stream(s), d, n, between)
}

// Record implements replay.Executor.
func (e *Executor) Record(s replay.Stream) (replay.Event, error) {
	ev, err := e.ctx.NewEvent()
	if err != nil {
		return nil, err
	}
	if err := ev.Record(stream(s)); err != nil {
		ev.Destroy()
		return nil, err
	}
	return ev, nil
}

// Wait implements replay.Executor.
func (e *Executor) Wait(s replay.Stream, v replay.Event) error { return stream(s).WaitEvent(event(v)) }

// Sync implements replay.Executor.
func (e *Executor) Sync(s replay.Stream) error { return stream(s).Synchronize() }

// HostWait implements replay.Executor with cuEventSynchronize.
func (e *Executor) HostWait(v replay.Event) error { return event(v).Synchronize() }

// MeasureCompute implements replay.Executor: the spin kernel alone on a
// stream of its own, timed by events (cuda.Context.MeasureSpin).
func (e *Executor) MeasureCompute(d time.Duration) (time.Duration, error) {
	return e.ctx.MeasureSpin(d)
}

// graph is a captured and instantiated CUDA graph.
type graph struct{ x *cuda.GraphExec }

// ComputeGraph implements replay.Executor: n spin kernels of d, captured
// with stream capture into one graph and instantiated.
func (e *Executor) ComputeGraph(n int, d time.Duration) (replay.Graph, error) {
	g, err := e.ctx.Capture(func(s *cuda.Stream) error {
		for range n {
			if err := e.ctx.Spin(s, d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	defer g.Destroy()
	x, err := g.Instantiate()
	if err != nil {
		return nil, err
	}
	return graph{x}, nil
}

// LaunchGraph implements replay.Executor with cuGraphLaunch.
func (e *Executor) LaunchGraph(s replay.Stream, g replay.Graph) error {
	x, ok := g.(graph)
	if !ok {
		return errors.New("cudaexec: foreign graph")
	}
	return x.x.Launch(stream(s))
}

// DestroyGraph implements replay.Executor.
func (e *Executor) DestroyGraph(g replay.Graph) error {
	x, ok := g.(graph)
	if !ok {
		return errors.New("cudaexec: foreign graph")
	}
	return x.x.Destroy()
}

// Elapsed implements replay.Executor.
func (e *Executor) Elapsed(a, b replay.Event) (time.Duration, error) {
	return e.ctx.Elapsed(event(a), event(b))
}

// Release implements replay.Executor.
func (e *Executor) Release(v replay.Event) {
	if ev := event(v); ev != nil {
		ev.Destroy()
	}
}

// Close frees every allocation, stream, event and module and releases the
// context. Safe to call twice.
func (e *Executor) Close() error { return e.ctx.Close() }
