package replay

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/traceaudit/traceaudit/timeline"
)

// inputBatch is one step's host data: one buffer per copy of the plan.
type inputBatch struct {
	// bufs holds, per copy of the plan, the host buffer of a host-to-device
	// copy (nil for the others).
	bufs [][]byte
	// maps are the batch's mappings, unmapped when it is released (fresh
	// pages or a view of a worker's shared memory).
	maps []*mapping
	// slot is the pinned slot holding the data, or nil for pageable memory.
	slot *pinSlot
	// pooled says the buffers come from the reuse pool and go back to it;
	// filled that they hold a batch already (a reused batch is written once).
	pooled, filled bool
}

// pinSlot is one set of pinned buffers (one per copy). ev, when set,
// completes when the last copy that read the slot has: the slot is not
// refilled before (PyTorch's caching host allocator waits likewise).
type pinSlot struct {
	bufs [][]byte
	ev   Event
}

// PinSlots is how many pinned batches a loop holds: one in use, one in
// flight, one being filled, one prefetched.
const PinSlots = 4

// loop runs one variant's steps.
type loop struct {
	r   *rig
	s   Setup
	ctx context.Context
	// cancel stops the producers; wg waits for them.
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// ready delivers batches made by producer goroutines (nil: the main
	// thread makes them); errc carries a producer's failure.
	ready chan *inputBatch
	errc  chan error
	reuse pool
	// free holds the free pinned slots; slots all of them.
	free  chan *pinSlot
	slots []*pinSlot
	// pinned delivers batches pinned by the pin goroutine; kept is the one
	// pinned batch of a loop that pins once.
	pinned chan *inputBatch
	kept   *inputBatch
	// dtoh are the pinned buffers that device-to-host results land in
	// when the loop copies from pinned memory.
	dtoh [][]byte
	// graph is the launch phase captured as a CUDA graph.
	graph Graph
	// With a copy stream: the device slot that the batch already on its
	// way goes to, the event that marks its arrival, and the timed
	// operations of copies not yet counted in a step.
	nextSlot int
	nextEv   Event
	carry    []timed
	// slotDone[slot] completes when the compute of the last step that read
	// device slot has: a copy into the slot waits for it.
	slotDone [2]Event
	seed     byte
	// recording says the step running is measured; phases sums its main
	// thread's time by phase since lapAt (lap).
	recording bool
	lapAt     time.Time
	phases    map[string]time.Duration
}

func newLoop(ctx context.Context, r *rig, s Setup) (*loop, error) {
	c, cancel := context.WithCancel(ctx)
	l := &loop{r: r, ctx: c, cancel: cancel, errc: make(chan error, 16)}
	st := &r.p.Step
	s.Workers = min(s.Workers, runtime.NumCPU()) // capped at the CPU count
	s.Feeders = min(s.Feeders, runtime.NumCPU())
	l.s = s
	fail := func(err error) (*loop, error) {
		l.close()
		return nil, err
	}
	if s.Pinned {
		l.free = make(chan *pinSlot, PinSlots)
		for range PinSlots {
			sl := &pinSlot{}
			l.slots = append(l.slots, sl)
			for _, cp := range st.Copies {
				var b []byte
				if cp.Dir == timeline.CopyHtoD {
					var err error
					if b, err = r.ex.AllocPinned(cp.Bytes); err != nil {
						return fail(err)
					}
				}
				sl.bufs = append(sl.bufs, b)
			}
			l.free <- sl
		}
		for _, cp := range st.Copies {
			var b []byte
			if cp.Dir == timeline.CopyDtoH {
				var err error
				if b, err = r.ex.AllocPinned(cp.Bytes); err != nil {
					return fail(err)
				}
			}
			l.dtoh = append(l.dtoh, b)
		}
	}
	if s.CUDAGraph && st.Launches != nil && st.Launches.Kernels > 0 {
		g, err := r.ex.ComputeGraph(st.Launches.Kernels, r.kernelSpin)
		if err != nil {
			return fail(err)
		}
		l.graph = g
	}
	if n := s.Workers + s.Feeders; n > 0 {
		l.ready = make(chan *inputBatch, 2*n) // prefetch_factor 2
		for w := range n {
			l.wg.Add(1)
			go l.produce(w, producerOf(r, s, w, n))
		}
		if s.Pinned && s.PinOn == PinOnThread {
			l.pinned = make(chan *inputBatch, 1)
			l.wg.Add(1)
			go l.pinLoop()
		}
	}
	return l, nil
}

// producer is how one producer goroutine paces its batches.
type producer struct {
	// extra is CPU work per batch after building it.
	extra time.Duration
	// every, when set, is the least time per batch, building included; the
	// first batch starts after delay.
	every, delay time.Duration
}

// producerOf paces producer w of n in loop s. Where the trace's workers set
// the loop's pace (Step.PaceNS), each of the trace's Feeders workers took
// Feeders × PaceNS per batch, and so does each producer here, the
// prefetch-workers variant's included (design.md: with W workers running,
// t_batch ≈ W × the mean step); their starts are staggered so that batches
// arrive at the pool's steady pace from the first measured step. Otherwise
// a DataLoader worker does the data phase's CPU work beyond the memory
// traffic, and a feeder (the trace's worker, whose work the trace does not
// show) only the memory traffic.
func producerOf(r *rig, s Setup, w, n int) producer {
	if pace := r.p.Step.PaceNS; pace > 0 {
		every := time.Duration(Feeders) * time.Duration(pace)
		return producer{every: every, delay: every * time.Duration(w) / time.Duration(n)}
	}
	if s.Workers > 0 {
		return producer{extra: r.dataBurn}
	}
	return producer{}
}

// barrier waits until both streams are idle.
func (l *loop) barrier() error {
	if err := l.r.ex.Sync(l.r.compute); err != nil {
		return err
	}
	return l.r.ex.Sync(l.r.copies)
}

// fail hands a producer's error to the main loop, unless the loop is over.
func (l *loop) fail(err error) {
	select {
	case l.errc <- err:
	case <-l.ctx.Done():
	}
}

func (l *loop) close() {
	l.cancel()
	ex := l.r.ex
	if l.ready != nil {
		// Drain so blocked producers see the cancellation; the drainers
		// are waited for too, so that every batch is released when close
		// returns.
		stop := make(chan struct{})
		var drainers sync.WaitGroup
		drain := func(c chan *inputBatch) {
			drainers.Add(1)
			go func() {
				defer drainers.Done()
				for {
					select {
					case b := <-c:
						l.release(b, "drain")
					case <-stop:
						return
					}
				}
			}()
		}
		drain(l.ready)
		if l.pinned != nil {
			drain(l.pinned)
		}
		l.wg.Wait()
		close(stop)
		drainers.Wait()
		for {
			select {
			case b := <-l.ready:
				l.release(b, "drain")
				continue
			case b := <-l.pinned: // never ready when nil
				l.release(b, "drain")
				continue
			default:
			}
			break
		}
	}
	// Whatever the GPU still runs reads buffers freed below.
	l.barrier()
	if l.nextEv != nil {
		ex.Release(l.nextEv)
		l.nextEv = nil
	}
	for _, o := range l.carry {
		ex.Release(o.a)
		ex.Release(o.b)
	}
	l.carry = nil
	for i, ev := range l.slotDone {
		if ev != nil {
			ex.Release(ev)
			l.slotDone[i] = nil
		}
	}
	if l.graph != nil {
		ex.DestroyGraph(l.graph)
		l.graph = nil
	}
	l.reuse = pool{}
	for _, sl := range l.slots {
		if sl.ev != nil {
			ex.Release(sl.ev)
			sl.ev = nil
		}
		for _, b := range sl.bufs {
			if b != nil {
				ex.FreePinned(b)
			}
		}
	}
	l.slots, l.kept = nil, nil
	for _, b := range l.dtoh {
		if b != nil {
			ex.FreePinned(b)
		}
	}
	l.dtoh = nil
}

// pool hands out reusable host batches.
type pool struct {
	mu   sync.Mutex
	free []*inputBatch
}

func (p *pool) get() *inputBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		return b
	}
	return nil
}

func (p *pool) put(b *inputBatch) {
	p.mu.Lock()
	p.free = append(p.free, b)
	p.mu.Unlock()
}
