package replay

import (
	"fmt"
	"time"

	"github.com/traceaudit/traceaudit/timeline"
)

// How batches are made, handed over, pinned and freed: the host side of a
// PyTorch input pipeline.
//
//   - The main thread builds a batch (num_workers=0): the samples are written
//     into memory it reuses, then collated into the batch tensor, which lives
//     in fresh pages where glibc maps it afresh (see freshMain) and is
//     munmapped on the main thread after its copy; then the per-batch CPU
//     work that is not memory traffic.
//   - A producer builds a batch as a DataLoader worker process does: the same
//     work, collated into a new shared-memory segment; it unmaps its own
//     view and hands the segment over; the main thread reads it through a
//     fresh view of its own (page faults as it reads) and unmaps it after
//     the copy, or the pin goroutine does when it pins the batch.
//   - Pinning copies a batch into a pinned slot: on the main thread with
//     PyTorch's parallel copy, or on the pin goroutine with one thread (the
//     DataLoader's pin thread runs single-threaded). A slot is refilled only
//     once the copies that read it have completed.

// produce is a producer goroutine: a DataLoader worker, or a feeder
// standing in for the trace's workers, paced by p.
func (l *loop) produce(worker int, p producer) {
	defer l.wg.Done()
	seed := byte(worker)
	if p.delay > 0 {
		select {
		case <-time.After(p.delay):
		case <-l.ctx.Done():
			return
		}
	}
	for {
		t0 := time.Now()
		b, err := l.producerBatch(seed)
		if err != nil {
			l.fail(err)
			return
		}
		burn(p.extra)
		if p.every > 0 {
			burnUntil(t0.Add(p.every))
		}
		if h := l.r.hooks.produce; h != nil {
			h(worker)
		}
		select {
		case l.ready <- b:
		case <-l.ctx.Done():
			l.release(b, "drain")
			return
		}
		seed++
	}
}

// producerBatch builds one batch in new shared memory, or in a reused
// buffer when the loop reuses buffers.
func (l *loop) producerBatch(seed byte) (*inputBatch, error) {
	if l.s.ReuseBuffers {
		b := l.pooled()
		for _, buf := range b.bufs {
			if buf != nil {
				build(buf, seed)
			}
		}
		return b, nil
	}
	b := &inputBatch{}
	for _, c := range l.r.p.Step.Copies {
		if c.Dir != timeline.CopyHtoD {
			b.bufs = append(b.bufs, nil)
			continue
		}
		m, err := l.sharedBatch(c.Bytes, seed)
		if err != nil {
			l.release(b, "drain")
			return nil, err
		}
		b.maps = append(b.maps, m)
		b.bufs = append(b.bufs, m.b)
	}
	return b, nil
}

// sharedBatch writes one buffer of n bytes into a new shared-memory segment
// through the producer's own view, unmaps that view, and returns a fresh
// view for the receiver.
func (l *loop) sharedBatch(n int64, seed byte) (*mapping, error) {
	s, err := newShm(n)
	if err != nil {
		return nil, err
	}
	defer s.close()
	w, err := s.view()
	if err != nil {
		return nil, err
	}
	l.mapped(true)
	build(w.b, seed)
	if err := w.unmap(); err != nil {
		return nil, fmt.Errorf("munmap: %w", err)
	}
	l.unmapped("producer")
	m, err := s.view()
	if err != nil {
		return nil, err
	}
	l.mapped(true)
	return m, nil
}

// pooled is a batch of private buffers from the reuse pool, or a new one.
func (l *loop) pooled() *inputBatch {
	if b := l.reuse.get(); b != nil {
		return b
	}
	b := &inputBatch{pooled: true}
	for _, c := range l.r.p.Step.Copies {
		var buf []byte
		if c.Dir == timeline.CopyHtoD {
			buf = make([]byte, c.Bytes)
		}
		b.bufs = append(b.bufs, buf)
	}
	return b
}

// mainBatch builds a batch on the main thread: the memory traffic into
// fresh or reused pages, then the rest of the observed data phase. A batch
// that the trace reuses is written once.
func (l *loop) mainBatch() (*inputBatch, error) {
	st := &l.r.p.Step
	var b *inputBatch
	if l.s.ReuseBuffers || !anyFresh(st) {
		b = l.pooled()
	} else {
		b = &inputBatch{}
		for _, c := range st.Copies {
			if c.Dir != timeline.CopyHtoD {
				b.bufs = append(b.bufs, nil)
				continue
			}
			m, err := newMapping(c.Bytes)
			if err != nil {
				l.release(b, "drain")
				return nil, err
			}
			l.mapped(false)
			b.maps = append(b.maps, m)
			b.bufs = append(b.bufs, m.b)
		}
	}
	if st.Batches == BatchesMain || !b.filled {
		for _, buf := range b.bufs {
			if buf != nil {
				build(buf, l.seed)
			}
		}
		b.filled = true
		if h := l.r.hooks.built; h != nil {
			h()
		}
	}
	l.seed++
	burn(l.r.dataBurn)
	return b, nil
}

// anyFresh says whether the main thread's batches live in fresh mappings.
func anyFresh(st *Phases) bool {
	for _, c := range st.Copies {
		if c.Dir == timeline.CopyHtoD && freshMain(st, c) {
			return true
		}
	}
	return false
}

// take obtains the next pageable batch on the main thread: from the
// producers (waiting for it, plus the trace's own wait when the producers
// stand in for the trace's workers) or by building it here.
func (l *loop) take() (*inputBatch, error) {
	if l.ready == nil {
		return l.mainBatch()
	}
	var b *inputBatch
	select {
	case b = <-l.ready:
	case err := <-l.errc:
		return nil, err
	case <-l.ctx.Done():
		return nil, l.ctx.Err()
	}
	burn(l.observedWait())
	return b, nil
}

// observedWait is the main thread's wait for the trace's workers that the
// producers do not reproduce: the observed data phase when feeders bring
// ready batches unpaced. Paced producers make the main thread wait as the
// trace's did, and DataLoader workers of a variant replace the wait.
func (l *loop) observedWait() time.Duration {
	if l.s.Workers > 0 || l.r.p.Step.PaceNS > 0 {
		return 0
	}
	return time.Duration(l.r.p.Step.DataNS)
}

// obtain gets the next batch for the main loop, in pinned memory when the
// variant copies from pinned memory.
func (l *loop) obtain() (*inputBatch, error) {
	if !l.s.Pinned {
		return l.take()
	}
	switch l.s.PinOn {
	case PinOnThread:
		select {
		case b := <-l.pinned:
			burn(l.observedWait())
			return b, nil
		case err := <-l.errc:
			return nil, err
		case <-l.ctx.Done():
			return nil, l.ctx.Err()
		}
	case PinOnNone:
		if l.kept == nil {
			b, err := l.take()
			if err != nil {
				return nil, err
			}
			if l.kept, err = l.pin(b, PinOnNone); err != nil {
				return nil, err
			}
			return l.kept, nil
		}
		burn(time.Duration(l.r.p.Step.DataNS))
		return l.kept, nil
	}
	b, err := l.take()
	if err != nil {
		return nil, err
	}
	return l.pin(b, PinOnMain)
}

// pinLoop is the pin goroutine: it copies each produced batch into a free
// pinned slot and releases the pageable batch there.
func (l *loop) pinLoop() {
	defer l.wg.Done()
	for {
		var b *inputBatch
		select {
		case b = <-l.ready:
		case <-l.ctx.Done():
			return
		}
		out, err := l.pin(b, PinOnThread)
		if err != nil {
			l.fail(err)
			return
		}
		select {
		case l.pinned <- out:
		case <-l.ctx.Done():
			l.release(out, "drain")
			return
		}
	}
}

// pin copies a pageable batch into a free pinned slot, once the copies that
// last read the slot have completed, and releases the pageable batch where
// it was pinned. On the main thread the copy is parallel and, where the
// trace shows pinning there, lasts at least the observed pinning time.
func (l *loop) pin(b *inputBatch, where string) (*inputBatch, error) {
	var sl *pinSlot
	select {
	case sl = <-l.free:
	case <-l.ctx.Done():
		l.release(b, "drain")
		return nil, l.ctx.Err()
	}
	if sl.ev != nil {
		err := l.r.ex.HostWait(sl.ev)
		l.r.ex.Release(sl.ev)
		sl.ev = nil
		if err != nil {
			l.free <- sl
			l.release(b, "drain")
			return nil, err
		}
	}
	t0 := time.Now()
	for i, src := range b.bufs {
		if src == nil {
			continue
		}
		if where == PinOnMain {
			parallelCopy(sl.bufs[i], src, copyThreads())
		} else {
			copy(sl.bufs[i], src)
		}
	}
	if where == PinOnMain {
		burn(time.Duration(l.r.p.Step.PinNS) - time.Since(t0))
	}
	if h := l.r.hooks.pin; h != nil && where != PinOnNone {
		h(where)
	}
	rel := where
	if where == PinOnThread {
		rel = "pin"
	}
	if err := l.release(b, rel); err != nil {
		l.free <- sl
		return nil, err
	}
	return &inputBatch{bufs: sl.bufs, slot: sl}, nil
}

// afterCopy frees a batch whose copies were issued on stream s: a pinned
// slot goes back with an event that guards its reuse; pageable memory
// (copied synchronously) is released at once, on the main thread.
func (l *loop) afterCopy(b *inputBatch, s Stream) error {
	if b == nil || b == l.kept {
		return nil
	}
	if sl := b.slot; sl != nil {
		ev, err := l.r.ex.Record(s)
		if err != nil {
			l.free <- sl
			return err
		}
		sl.ev = ev
		l.free <- sl
		return nil
	}
	return l.release(b, "main")
}

// release gives a pageable batch back: a real munmap of each of its
// mappings (where says who does it, for the test hooks), or back to the
// pool. A pinned batch's slot goes back to the free slots.
func (l *loop) release(b *inputBatch, where string) error {
	if b == nil || b == l.kept {
		return nil
	}
	if b.slot != nil {
		l.free <- b.slot
		return nil
	}
	if b.pooled {
		l.reuse.put(b)
		return nil
	}
	var first error
	for _, m := range b.maps {
		if m.b == nil {
			continue
		}
		if err := m.unmap(); err != nil && first == nil {
			first = fmt.Errorf("munmap: %w", err)
		}
		l.unmapped(where)
	}
	return first
}

func (l *loop) mapped(shared bool) {
	if h := l.r.hooks.mapped; h != nil {
		h(shared)
	}
}

func (l *loop) unmapped(where string) {
	if h := l.r.hooks.unmap; h != nil {
		h(where)
	}
}
