package replay

import "time"

// Executor carries out the GPU side of a replay. replay/cudaexec implements
// it over the CUDA driver API; tests use a fake. Methods are called from
// the replay's main goroutine, except HostWait and Release, which the pin
// goroutine also calls (for the events that guard pinned buffers);
// producer goroutines do host work alone.
type Executor interface {
	// Device names the GPU ("NVIDIA H200 (device 0, 132 SMs)").
	Device() string
	// FreeMemory is the device memory free now, in bytes.
	FreeMemory() (int64, error)
	// AllocDevice allocates n bytes of device memory (never managed
	// memory).
	AllocDevice(n int64) (DeviceBuffer, error)
	// FreeDevice frees memory from AllocDevice (as cudaFree does, it may
	// wait for the device).
	FreeDevice(b DeviceBuffer) error
	// AllocPinned allocates n bytes of page-locked host memory.
	AllocPinned(n int64) ([]byte, error)
	// FreePinned frees memory from AllocPinned.
	FreePinned(b []byte) error
	// NewStream creates a stream.
	NewStream() (Stream, error)
	// CopyHtoD copies src to dst. Pageable sources are copied with a
	// blocking call; pinned ones asynchronously on s.
	CopyHtoD(s Stream, dst DeviceBuffer, src []byte, pinned bool) error
	// CopyDtoH copies src to dst, like CopyHtoD in the other direction.
	CopyDtoH(s Stream, dst []byte, src DeviceBuffer, pinned bool) error
	// Compute occupies the GPU on s for d with a kernel over all SMs (one
	// block under 20 µs); a d of zero launches a kernel that exits at once
	// (a launch-bound kernel no longer than this GPU's kernel floor), a
	// negative d nothing.
	Compute(s Stream, d time.Duration) error
	// ComputeEach queues n Compute(d) kernels on s one after another and
	// calls between(i) on the host after the i-th is queued: the
	// launch-bound kernels of a step, launched one by one at the pace
	// between keeps, as cheaply as the executor can queue them.
	ComputeEach(s Stream, d time.Duration, n int, between func(i int)) error
	// Record records an event on s.
	Record(s Stream) (Event, error)
	// Wait makes s wait for e without blocking the host.
	Wait(s Stream, e Event) error
	// Sync blocks the host until s is idle.
	Sync(s Stream) error
	// HostWait blocks the host until e has completed.
	HostWait(e Event) error
	// MeasureCompute runs Compute(d) alone and returns its GPU time by
	// events: what one such kernel takes on this GPU.
	MeasureCompute(d time.Duration) (time.Duration, error)
	// ComputeGraph captures n kernels of d each (0: empty kernels), as
	// Compute queues them, into a CUDA graph ready to launch.
	ComputeGraph(n int, d time.Duration) (Graph, error)
	// LaunchGraph queues graph g on s with one call.
	LaunchGraph(s Stream, g Graph) error
	// DestroyGraph frees g.
	DestroyGraph(g Graph) error
	// Elapsed is the GPU time between two completed events.
	Elapsed(a, b Event) (time.Duration, error)
	// Release frees an event.
	Release(e Event)
	// Close frees everything the executor allocated. Safe to call twice.
	Close() error
}

// DeviceBuffer, Stream, Event and Graph are executor handles.
type (
	DeviceBuffer interface{ Size() int64 }
	Stream       any
	Event        any
	Graph        any
)
