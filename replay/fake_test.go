package replay

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// Bandwidths of the model, in bytes per nanosecond (GB/s).
const (
	PageableGBps = 6
	PinnedGBps   = 55
)

// Op is one logged call.
type Op struct {
	Kind   string // "htod", "dtoh", "compute", "wait", "sync", "hostwait", "graph", "graph-launch", "graph-destroy", "measure", "alloc-device", "alloc-pinned", "free-pinned", "stream"
	Stream int
	Bytes  int64
	Pinned bool
	Dur    time.Duration
	// Host is the address of a copy's host memory.
	Host *byte
}

// Fake implements Executor.
type Fake struct {
	mu      sync.Mutex
	Ops     []Op
	Free    int64
	streams int
	live    map[*event]bool
	closed  bool
	// Err, when set, is returned by the next call of the named kind.
	FailOn string
}

type buffer struct{ n int64 }

func (b buffer) Size() int64 { return b.n }

type stream struct{ id int }

type event struct {
	s  int
	at time.Duration
}

// newFake returns a fake with 80 GB of free device memory.
func newFake() *Fake { return &Fake{Free: 80 << 30, live: map[*event]bool{}} }

func (f *Fake) log(op Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errors.New("fake: closed")
	}
	if f.FailOn == op.Kind {
		f.FailOn = ""
		return fmt.Errorf("fake: %s failed", op.Kind)
	}
	f.Ops = append(f.Ops, op)
	return nil
}

// Count returns how many logged ops match kind (and, when pinned is not
// nil, the pinned flag).
func (f *Fake) Count(kind string, pinned *bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, o := range f.Ops {
		if o.Kind == kind && (pinned == nil || o.Pinned == *pinned) {
			n++
		}
	}
	return n
}

// Streams returns the distinct streams used by ops of kind.
func (f *Fake) Streams(kind string) map[int]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[int]bool{}
	for _, o := range f.Ops {
		if o.Kind == kind {
			m[o.Stream] = true
		}
	}
	return m
}

// LiveEvents is the number of events not yet released.
func (f *Fake) LiveEvents() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.live) }

func (f *Fake) Device() string             { return "fake GPU" }
func (f *Fake) FreeMemory() (int64, error) { return f.Free, nil }

func (f *Fake) AllocDevice(n int64) (DeviceBuffer, error) {
	if n <= 0 {
		return nil, errors.New("fake: bad size")
	}
	return buffer{n}, f.log(Op{Kind: "alloc-device", Bytes: n})
}

func (f *Fake) FreeDevice(b DeviceBuffer) error {
	return f.log(Op{Kind: "free-device", Bytes: b.Size()})
}

func (f *Fake) AllocPinned(n int64) ([]byte, error) {
	return make([]byte, n), f.log(Op{Kind: "alloc-pinned", Bytes: n})
}

func (f *Fake) FreePinned(b []byte) error {
	return f.log(Op{Kind: "free-pinned", Bytes: int64(len(b))})
}

func (f *Fake) NewStream() (Stream, error) {
	f.mu.Lock()
	f.streams++
	id := f.streams
	f.mu.Unlock()
	return stream{id}, f.log(Op{Kind: "stream", Stream: id})
}

func sid(s Stream) int { return s.(stream).id }

func copyDur(n int64, pinned bool) time.Duration {
	bw := int64(PageableGBps)
	if pinned {
		bw = PinnedGBps
	}
	return time.Duration(n / bw)
}

func (f *Fake) CopyHtoD(s Stream, dst DeviceBuffer, src []byte, pinned bool) error {
	if int64(len(src)) > dst.Size() {
		return fmt.Errorf("fake: copy of %d bytes into a %d-byte buffer", len(src), dst.Size())
	}
	return f.log(Op{Kind: "htod", Stream: sid(s), Bytes: int64(len(src)), Pinned: pinned, Dur: copyDur(int64(len(src)), pinned)})
}

func (f *Fake) CopyDtoH(s Stream, dst []byte, src DeviceBuffer, pinned bool) error {
	if int64(len(dst)) > src.Size() {
		return fmt.Errorf("fake: copy of %d bytes from a %d-byte buffer", len(dst), src.Size())
	}
	return f.log(Op{Kind: "dtoh", Stream: sid(s), Bytes: int64(len(dst)), Pinned: pinned, Dur: copyDur(int64(len(dst)), pinned), Host: unsafe.SliceData(dst)})
}

func (f *Fake) Compute(s Stream, d time.Duration) error {
	return f.log(Op{Kind: "compute", Stream: sid(s), Dur: d})
}

func (f *Fake) ComputeEach(s Stream, d time.Duration, n int, between func(i int)) error {
	for i := range n {
		if err := f.Compute(s, d); err != nil {
			return err
		}
		if between != nil {
			between(i)
		}
	}
	return nil
}

// Record makes an event whose time is the modelled GPU time of all ops
// logged so far on its stream.
func (f *Fake) Record(s Stream) (Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var at time.Duration
	for _, o := range f.Ops {
		if o.Stream == sid(s) {
			at += o.Dur
		}
	}
	e := &event{s: sid(s), at: at}
	f.live[e] = true
	return e, nil
}

func (f *Fake) Wait(s Stream, e Event) error {
	if !f.isLive(e) {
		return errors.New("fake: wait on a released event")
	}
	return f.log(Op{Kind: "wait", Stream: sid(s)})
}

func (f *Fake) Sync(s Stream) error { return f.log(Op{Kind: "sync", Stream: sid(s)}) }

func (f *Fake) HostWait(e Event) error {
	if !f.isLive(e) {
		return errors.New("fake: host wait on a released event")
	}
	return f.log(Op{Kind: "hostwait"})
}

// kernelOverhead is the modelled GPU cost of one kernel launch.
const kernelOverhead = 2 * time.Microsecond

func (f *Fake) MeasureCompute(d time.Duration) (time.Duration, error) {
	return d + kernelOverhead, f.log(Op{Kind: "measure", Dur: 0})
}

// fakeGraph is a captured graph of n kernels of d.
type fakeGraph struct {
	n    int
	d    time.Duration
	dead *bool
}

func (f *Fake) ComputeGraph(n int, d time.Duration) (Graph, error) {
	dead := false
	return fakeGraph{n, d, &dead}, f.log(Op{Kind: "graph"})
}

func (f *Fake) LaunchGraph(s Stream, g Graph) error {
	fg, ok := g.(fakeGraph)
	if !ok || *fg.dead {
		return errors.New("fake: launch of a foreign or destroyed graph")
	}
	return f.log(Op{Kind: "graph-launch", Stream: sid(s), Dur: time.Duration(fg.n) * (fg.d + kernelOverhead)})
}

func (f *Fake) DestroyGraph(g Graph) error {
	fg, ok := g.(fakeGraph)
	if !ok || *fg.dead {
		return errors.New("fake: destroy of a foreign or destroyed graph")
	}
	*fg.dead = true
	return f.log(Op{Kind: "graph-destroy"})
}

func (f *Fake) isLive(v Event) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, _ := v.(*event)
	return f.live[e]
}

func (f *Fake) Elapsed(a, b Event) (time.Duration, error) {
	if !f.isLive(a) || !f.isLive(b) {
		return 0, errors.New("fake: elapsed on a released event")
	}
	return b.(*event).at - a.(*event).at, nil
}

func (f *Fake) Release(v Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.live, v.(*event))
}

func (f *Fake) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}
