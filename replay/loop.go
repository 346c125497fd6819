package replay

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// batch is one step's host data: one buffer per copy of the plan.
type batch struct {
	bufs [][]byte
	// maps back bufs when the plan replays munmap: released with a real
	// munmap instead of being reused.
	maps []*mapping
	// filled says the buffers hold data (a reused buffer keeps it).
	filled bool
	// slot is the pinned slot holding the data, or -1 for pageable memory.
	slot int
}

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
	ready chan *batch
	errc  chan error
	reuse pool
	// pinFree holds free pinned slots; pinBufs[slot][copy] their buffers.
	pinFree chan int
	pinBufs [][][]byte
	// pinned delivers batches pinned in the background by the pin
	// goroutine when producers make the batches; kept is the one pinned
	// batch of a loop that reuses a single batch (pinned once).
	pinned chan *batch
	kept   *batch
	// With a copy stream: the batch already on its way to the device, the
	// device slot it goes to, the event that marks its arrival and the
	// GPU operations issued for it.
	next     *batch
	nextSlot int
	nextEv   Event
	nextOps  []timed
	seed     byte
}

// freshMaps says whether batches live in fresh mappings unmapped after
// their copy (the observed munmap stalls).
func (l *loop) freshMaps() bool { return l.r.p.Step.Munmaps > 0 && !l.s.ReuseBuffers }

func newLoop(ctx context.Context, r *rig, s Setup) (*loop, error) {
	c, cancel := context.WithCancel(ctx)
	l := &loop{r: r, s: s, ctx: c, cancel: cancel, errc: make(chan error, 16)}
	st := &r.p.Step
	if s.Pinned {
		const slots = 3 // in use, in flight, being filled
		l.pinFree = make(chan int, slots)
		for i := range slots {
			var bufs [][]byte
			for _, cp := range st.Copies {
				b, err := r.ex.AllocPinned(cp.Bytes)
				if err != nil {
					l.pinBufs = append(l.pinBufs, bufs)
					l.freePinned()
					cancel()
					return nil, err
				}
				bufs = append(bufs, b)
			}
			l.pinBufs = append(l.pinBufs, bufs)
			l.pinFree <- i
		}
	}
	s.Workers = min(s.Workers, runtime.NumCPU()) // capped at the CPU count
	l.s = s
	switch {
	case s.Workers > 0:
		l.ready = make(chan *batch, 2*s.Workers) // prefetch_factor 2
		for w := range s.Workers {
			l.wg.Add(1)
			go l.produce(w, time.Duration(st.DataNS))
		}
	case l.freshMaps() && !r.mainFills():
		// In the trace the batches arrived ready-made (from DataLoader
		// worker processes, in fresh shared-memory mappings) and the main
		// thread only unmapped them: feeders, as many as the DataLoader's
		// usual 4 workers, make them.
		n := min(4, runtime.NumCPU())
		l.ready = make(chan *batch, 2*n)
		for w := range n {
			l.wg.Add(1)
			go l.produce(w, 0)
		}
	}
	if s.Pinned && l.ready != nil {
		// As the DataLoader's pin thread does: pin produced batches in the
		// background, freeing (unmapping) the pageable originals there.
		l.pinned = make(chan *batch, 1)
		l.wg.Add(1)
		go l.pinLoop()
	}
	return l, nil
}

// pinLoop is the pin goroutine: it copies each produced batch into a free
// pinned slot and releases the pageable batch.
func (l *loop) pinLoop() {
	defer l.wg.Done()
	for {
		var b *batch
		select {
		case b = <-l.ready:
		case <-l.ctx.Done():
			return
		}
		out, err := l.pin(b)
		if err != nil {
			l.fail(err)
			return
		}
		select {
		case l.pinned <- out:
		case <-l.ctx.Done():
			l.done(out)
			return
		}
	}
}

// produce is a producer goroutine. Each batch is the full per-batch host
// work: d of CPU work that also writes the batch, in a new or reused buffer.
func (l *loop) produce(worker int, d time.Duration) {
	defer l.wg.Done()
	seed := byte(worker)
	for {
		b, err := l.newBatch()
		if err != nil {
			l.fail(err)
			return
		}
		t0 := time.Now()
		for _, buf := range b.bufs {
			fill(buf, seed)
		}
		b.filled = true
		burn(d - time.Since(t0))
		if h := l.r.hooks.produce; h != nil {
			h(worker)
		}
		select {
		case l.ready <- b:
		case <-l.ctx.Done():
			l.release(b)
			return
		}
		seed++
	}
}

// newBatch allocates a batch: fresh mappings when munmap is replayed, else
// a reused buffer.
func (l *loop) newBatch() (*batch, error) {
	if b := l.reuse.get(); b != nil {
		return b, nil
	}
	b := &batch{slot: -1}
	for _, c := range l.r.p.Step.Copies {
		switch {
		case c.Dir != "HtoD":
			b.bufs = append(b.bufs, nil) // results land in their own buffer
		case !l.freshMaps():
			b.bufs = append(b.bufs, make([]byte, c.Bytes))
		default:
			// Batches made by producers arrive in shared memory, as a
			// DataLoader worker's do; the main thread's own are private.
			m, err := newMapping(c.Bytes, l.ready != nil)
			if err != nil {
				for _, m := range b.maps {
					m.unmap()
				}
				return nil, err
			}
			b.maps = append(b.maps, m)
			b.bufs = append(b.bufs, m.b)
			if h := l.r.hooks.mapped; h != nil {
				h()
			}
		}
	}
	return b, nil
}

// release gives a pageable batch back: a real munmap of each mapping, or
// back to the pool.
func (l *loop) release(b *batch) error { return l.free(b, false) }

// free is release; step says the main loop frees a step's batch (for the
// test hooks).
func (l *loop) free(b *batch, step bool) error {
	if b == nil || b.slot >= 0 {
		return nil
	}
	if len(b.maps) > 0 {
		for _, m := range b.maps {
			if err := m.unmap(); err != nil {
				return fmt.Errorf("munmap: %w", err)
			}
			if h := l.r.hooks.unmap; h != nil {
				h(step)
			}
		}
		return nil
	}
	l.reuse.put(b)
	return nil
}

// take obtains the next host batch on the main thread, from the producers
// or by running the data phase here.
func (l *loop) take() (*batch, error) {
	d := time.Duration(l.r.p.Step.DataNS)
	if l.ready != nil {
		var b *batch
		select {
		case b = <-l.ready:
		case err := <-l.errc:
			return nil, err
		case <-l.ctx.Done():
			return nil, l.ctx.Err()
		}
		if l.s.Workers == 0 {
			burn(d) // the main thread's own data phase
		}
		return b, nil
	}
	b, err := l.newBatch()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if l.r.mainFills() || !b.filled {
		for _, x := range b.bufs {
			fill(x, l.seed)
		}
		b.filled = true
	}
	l.seed++
	burn(d - time.Since(t0))
	return b, nil
}

// obtain gets the next batch for the main loop, in pinned memory when the
// variant copies from pinned memory. Pinning is a host copy into a pinned
// slot, as PyTorch's pin_memory does: done in the background (pinLoop) when
// producers make the batches, on the main thread when it makes them itself,
// and once when the loop reuses one batch that no one remakes.
func (l *loop) obtain() (*batch, error) {
	if !l.s.Pinned {
		return l.take()
	}
	if l.pinned != nil {
		select {
		case b := <-l.pinned:
			if l.s.Workers == 0 {
				burn(time.Duration(l.r.p.Step.DataNS)) // the main thread's own data phase
			}
			return b, nil
		case err := <-l.errc:
			return nil, err
		case <-l.ctx.Done():
			return nil, l.ctx.Err()
		}
	}
	if !l.r.mainFills() && !l.freshMaps() {
		if l.kept == nil {
			b, err := l.take()
			if err != nil {
				return nil, err
			}
			if l.kept, err = l.pin(b); err != nil {
				return nil, err
			}
		} else {
			burn(time.Duration(l.r.p.Step.DataNS))
		}
		return l.kept, nil
	}
	b, err := l.take()
	if err != nil {
		return nil, err
	}
	return l.pin(b)
}

// pin copies a batch into a free pinned slot and releases the pageable
// batch (unmapping it when munmap is replayed).
func (l *loop) pin(b *batch) (*batch, error) {
	var slot int
	select {
	case slot = <-l.pinFree:
	case <-l.ctx.Done():
		l.release(b)
		return nil, l.ctx.Err()
	}
	out := &batch{bufs: l.pinBufs[slot], filled: true, slot: slot}
	for i, src := range b.bufs {
		copy(out.bufs[i], src)
	}
	return out, l.release(b)
}

// done frees a batch after its step: the pinned slot, or the pageable
// buffers (unmapping them when munmap is replayed).
func (l *loop) done(b *batch) error { return l.doneStep(b, false) }

// stepDone is done for the batch of the step the main loop is running.
func (l *loop) stepDone(b *batch) error { return l.doneStep(b, true) }

func (l *loop) doneStep(b *batch, step bool) error {
	if b == nil || b == l.kept {
		return nil
	}
	if b.slot >= 0 {
		l.pinFree <- b.slot
		return nil
	}
	return l.free(b, step)
}

// fail hands a producer's error to the main loop, unless the loop is over.
func (l *loop) fail(err error) {
	select {
	case l.errc <- err:
	case <-l.ctx.Done():
	}
}

// freePinned gives the pinned slots back to the executor.
func (l *loop) freePinned() {
	for _, bufs := range l.pinBufs {
		for _, b := range bufs {
			l.r.ex.FreePinned(b)
		}
	}
	l.pinBufs = nil
}

func (l *loop) close() {
	l.cancel()
	if l.ready != nil {
		// Drain so blocked producers see the cancellation; the drainers
		// are waited for too, so that every batch is released when close
		// returns.
		stop := make(chan struct{})
		var drainers sync.WaitGroup
		drain := func(c chan *batch, free func(*batch) error) {
			drainers.Add(1)
			go func() {
				defer drainers.Done()
				for {
					select {
					case b := <-c:
						free(b)
					case <-stop:
						return
					}
				}
			}()
		}
		drain(l.ready, l.release)
		if l.pinned != nil {
			drain(l.pinned, l.done)
		}
		l.wg.Wait()
		close(stop)
		drainers.Wait()
		for {
			select {
			case b := <-l.ready:
				l.release(b)
				continue
			case b := <-l.pinned: // never ready when nil
				l.done(b)
				continue
			default:
			}
			break
		}
	}
	if l.next != nil {
		l.r.ex.Sync(l.r.copies) // the prefetched copy reads its slot
		l.done(l.next)
		l.r.ex.Release(l.nextEv)
		for _, o := range l.nextOps {
			l.r.ex.Release(o.a)
			l.r.ex.Release(o.b)
		}
		l.next, l.nextEv, l.nextOps = nil, nil, nil
	}
	l.reuse = pool{}
	// Every GPU operation finished at the last step's barrier (and the
	// prefetched copy was synchronised above): the slots are free.
	l.freePinned()
}
