package replay

import (
	"context"
	"fmt"
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
	// pack are the pinned buffers of packed small copies, packNext the
	// one the next step fills; epochFrom is the first step of an epoch
	// (the first measured one).
	pack      []*packSlot
	packNext  int
	epochFrom int
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
	if err := l.newPackSlots(); err != nil {
		return fail(err)
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
	l.closePackSlots()
	for _, b := range l.dtoh {
		if b != nil {
			ex.FreePinned(b)
		}
	}
	l.dtoh = nil
}

// lap adds the time since the last lap to phase, for measured steps.
func (l *loop) lap(phase string) {
	now := time.Now()
	if l.recording {
		if l.phases == nil {
			l.phases = map[string]time.Duration{}
		}
		l.phases[phase] += now.Sub(l.lapAt)
	}
	l.lapAt = now
}

// gpuOp runs op on s between two events, so that its GPU time is measured.
func (l *loop) gpuOp(s Stream, op func() error) (timed, error) {
	ex := l.r.ex
	a, err := ex.Record(s)
	if err != nil {
		return timed{}, err
	}
	if err := op(); err != nil {
		ex.Release(a)
		return timed{}, err
	}
	b, err := ex.Record(s)
	if err != nil {
		ex.Release(a)
		return timed{}, err
	}
	return timed{a, b}, nil
}

// copyIn issues the host-to-device copies of batch b into device slot,
// on stream s (side-stream copies of the observed plan go to the copy
// stream when s is nil). It returns the stream the copies ran on.
func (l *loop) copyIn(s Stream, b *inputBatch, slot int) ([]timed, Stream, error) {
	r := l.r
	var ops []timed
	used := s
	if used == nil {
		used = r.compute
		if hasSide(&r.p.Step) {
			used = r.copies
		}
	}
	if used != r.compute {
		// Copies into the slot wait until the compute that last read it
		// has run (only pending when steps are not synchronised).
		if ev := l.slotDone[slot]; ev != nil {
			err := r.ex.Wait(used, ev)
			r.ex.Release(ev)
			l.slotDone[slot] = nil
			if err != nil {
				return nil, used, err
			}
		}
	}
	for i, c := range r.p.Step.Copies {
		if c.Dir != timeline.CopyHtoD {
			continue
		}
		src, dst := b.bufs[i], r.dev[slot][i]
		t, err := l.gpuOp(used, func() error { return r.ex.CopyHtoD(used, dst, src, b.slot != nil) })
		if err != nil {
			return ops, used, err
		}
		ops = append(ops, t)
	}
	return ops, used, nil
}

// prefetch gets the next batch and issues its copies on the copy stream
// into device slot, one step ahead of its compute (double buffering).
func (l *loop) prefetch(slot int) error {
	b, err := l.obtain()
	if err != nil {
		return err
	}
	ops, used, err := l.copyIn(l.r.copies, b, slot)
	l.carry = append(l.carry, ops...)
	if err != nil {
		l.release(b, "drain")
		return err
	}
	ev, err := l.r.ex.Record(l.r.copies)
	if err != nil {
		l.release(b, "drain")
		return err
	}
	// Its host memory is free once the copies are issued (guarded by an
	// event where pinned): what the step needs is the arrival event.
	if err := l.afterCopy(b, used); err != nil {
		l.r.ex.Release(ev)
		return err
	}
	l.nextSlot, l.nextEv = slot, ev
	return nil
}

// step runs step k: get the batch and copy it (or use the one prefetched),
// the host work during which the GPU idled in the trace, the compute (the
// launch-bound kernels launched one by one at the observed pace, or as one
// CUDA graph, then the rest of the compute as one kernel), and the results'
// copies back. Whether the host then waits for the GPU is the caller's
// business (Setup.SyncEvery).
func (l *loop) step(k int) (stepWork, error) {
	r, ex, st := l.r, l.r.ex, &l.r.p.Step
	w := stepWork{k: k}
	slot := 0
	l.restartWait(k)
	if l.s.CopyStream {
		slot = l.nextSlot
		arrived := l.nextEv
		l.nextEv = nil
		// The next batch's data phase and copy overlap this batch's compute.
		err := l.prefetch(slot ^ 1)
		l.lap(PhaseData)
		w.ops, l.carry = append(w.ops, l.carry...), nil
		if err != nil {
			ex.Release(arrived)
			return w, err
		}
		err = ex.Wait(r.compute, arrived)
		ex.Release(arrived)
		if err != nil {
			return w, err
		}
	} else {
		b, err := l.obtain()
		l.lap(PhaseData)
		if err != nil {
			return w, err
		}
		ops, used, err := l.copyIn(nil, b, 0)
		l.lap(PhaseCopy)
		w.ops = append(w.ops, ops...)
		if err != nil {
			l.release(b, "drain")
			return w, err
		}
		if used != r.compute {
			ev, err := ex.Record(used)
			if err == nil {
				err = ex.Wait(r.compute, ev)
				ex.Release(ev)
			}
			if err != nil {
				l.release(b, "drain")
				return w, err
			}
		}
		// The batch's host memory is freed once copied: a pinned slot with
		// an event, pageable pages with a real munmap on the main thread
		// where they are fresh.
		err = l.afterCopy(b, used)
		l.lap(PhaseRelease)
		if err != nil {
			return w, err
		}
	}
	if err := l.smallCopies(); err != nil {
		return w, err
	}
	l.lap(PhaseCopy)
	err := l.churn()
	other := r.otherBurn
	if l.s.DeferReads {
		other = max(0, other-time.Duration(st.ReadWorkNS))
	}
	if l.s.CacheData {
		other = max(0, other-time.Duration(st.Reads.savedNS()))
	}
	if l.s.FewerCollectives {
		other = max(0, other-time.Duration(st.IssueSavedNS))
	}
	burn(other)
	l.lap(PhaseOther)
	if err != nil {
		return w, err
	}
	if lb := st.Launches; lb != nil && lb.Kernels > 0 {
		if err := l.launchPhase(lb); err != nil {
			return w, err
		}
		w.extra += time.Duration(lb.Kernels) * r.kernelBusy()
	}
	if rest := st.ComputeNS - st.LaunchComputeNS(); rest > 0 {
		t, err := l.gpuOp(r.compute, func() error { return ex.Compute(r.compute, time.Duration(rest)) })
		if err != nil {
			return w, err
		}
		w.ops = append(w.ops, t)
	}
	if l.s.CopyStream || hasSide(st) {
		ev, err := ex.Record(r.compute)
		if err != nil {
			return w, err
		}
		if old := l.slotDone[slot]; old != nil {
			ex.Release(old)
		}
		l.slotDone[slot] = ev
	}
	for i, c := range st.Copies {
		if c.Dir != timeline.CopyDtoH {
			continue
		}
		dst, pinned := make([]byte, c.Bytes), false
		if l.dtoh != nil {
			dst, pinned = l.dtoh[i], true
		}
		t, err := l.gpuOp(r.compute, func() error { return ex.CopyDtoH(r.compute, dst, r.dev[slot][i], pinned) })
		if err != nil {
			return w, err
		}
		w.ops = append(w.ops, t)
	}
	return w, nil
}

// launchPhase launches the launch-bound kernels: one graph launch, or each
// kernel on its own with the host's observed time per launch between them.
// Each spins for the trace's kernel duration less this GPU's kernel floor
// (rig.calibrateKernels).
func (l *loop) launchPhase(lb *Launches) error {
	r := l.r
	if l.graph != nil {
		return r.ex.LaunchGraph(r.compute, l.graph)
	}
	t0, every := time.Now(), time.Duration(lb.IntervalNS)
	if l.s.FewerCollectives {
		// The issue time the other phase could not hold was paced
		// between the launches: it goes from each interval.
		rest := max(0, l.r.p.Step.IssueSavedNS-l.r.p.Step.OtherNS)
		every = max(time.Duration(lb.KernelNS), every-time.Duration(rest/int64(max(lb.Kernels, 1))))
	}
	return r.ex.ComputeEach(r.compute, r.kernelSpin, lb.Kernels, func(i int) {
		burnUntil(t0.Add(time.Duration(i+1) * every))
	})
}

func hasSide(st *Phases) bool {
	for _, c := range st.Copies {
		if c.SideStream && c.Dir == timeline.CopyHtoD {
			return true
		}
	}
	return false
}

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
	if err := writeShm(s, seed); err != nil {
		return nil, err
	}
	l.mapped(true)
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
// ready batches unpaced (with persistent workers that kept up between
// restarts, the shortest wait between them: Restart.WarmNS). Paced producers make the main thread wait as the
// trace's did, and DataLoader workers of a variant replace the wait.
func (l *loop) observedWait() time.Duration {
	st := &l.r.p.Step
	if l.s.Workers > 0 || st.PaceNS > 0 {
		return 0
	}
	if rs := st.Restart; rs != nil && rs.WarmNS > 0 && l.s.PersistentWorkers {
		return time.Duration(min(rs.WarmNS, st.DataNS)) // workers kept keep up
	}
	return time.Duration(st.DataNS)
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
