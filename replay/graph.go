package replay

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/traceaudit/traceaudit/analyze/model"
)

// The replay's engines (Options.Engine).
const (
	// EnginePhases replays the plan's phases: the step reduced to data,
	// copy, launch, other and sync, with real batches, producers, pinning
	// and munmap.
	EnginePhases = "phases"
	// EngineGraph runs the step model's schedule of each variant: every
	// host call of the model's window in order with the host time before
	// it, every kernel and copy it queued, every wait (model.Schedule).
	EngineGraph = "graph"
)

// graphRun is what one schedule's run needs: the executor's handles and,
// per piece of work, the event recorded after it where something waits.
type graphRun struct {
	ex      Executor
	s       *model.Schedule
	streams []Stream
	dev     DeviceBuffer
	pinned  []byte
	page    []byte
	// kernelAdj is what a spin kernel adds around its spin on this GPU
	// (rig.floorInKernel): taken off each kernel's traced duration.
	kernelAdj time.Duration
	// event[w] marks the work another stream waits for (Work.After) or a
	// call waits for behind later work of its stream: an event is
	// recorded after it.
	event []bool

	mu   sync.Mutex
	evs  []Event // the latest event recorded after each work
	last []int32 // per stream, the work queued last
	// unmaps are the releases of copyFresh's mappings under way.
	unmaps sync.WaitGroup

	// held[k], for a stream with work the model holds back after its
	// launch (Work.LatNS of heldNS or more), queues that stream's work in
	// order from a goroutine of its own, each held piece no sooner than
	// its launch plus that latency: its start is the later of the
	// stream's backlog and that time, as in the model.
	held []*launcher

	// mainStart[pass][k] is when the main thread's call k of that pass
	// started (ns since start), -1 until then.
	mainStart [][]atomic.Int64
	start     time.Time
	failed    atomic.Bool
	err       error
	errOnce   sync.Once
}

// heldNS is the launch latency from which the model's latency is a hold
// the trace shows (the GPU running behind the host at the window's start,
// a dependency the graph does not hold), not the driver's: the replay
// keeps it.
const heldNS = 1_000_000

// launcher queues one stream's work in order, each piece no sooner than
// its time.
type launcher struct {
	ch      chan heldWork
	pending atomic.Int64
	done    chan struct{}
}

type heldWork struct {
	w  int32
	at time.Time
}

// runSchedule runs schedule s on ex as the model does: passes of the
// window back to back, one goroutine per host thread, producers for the
// pool where the schedule has one, kernelAdj taken off each kernel's
// duration. It returns the mean step of each measured pass (the first
// warms up): the main thread's pace, or that of a thread or stream that
// runs behind it.
func runSchedule(ctx context.Context, ex Executor, s *model.Schedule, o Options, kernelAdj time.Duration, tick func()) ([]int64, error) {
	if s.Steps <= 0 || s.Main >= len(s.Threads) || len(s.Threads[s.Main].Calls) == 0 {
		return nil, fmt.Errorf("schedule %s: no main thread calls", s.Name)
	}
	passes := schedulePasses(s, o)
	measured := passes - 1
	g := &graphRun{ex: ex, s: s, kernelAdj: kernelAdj, evs: make([]Event, len(s.Work)), last: make([]int32, s.Streams)}
	defer g.close()
	for i := range g.last {
		g.last[i] = -1
	}
	var most int64 = 1 << 12
	for _, w := range s.Work {
		if w.Kind != model.WorkKernel {
			most = max(most, w.Bytes)
		}
	}
	var err error
	if g.dev, err = ex.AllocDevice(most); err != nil {
		return nil, err
	}
	if g.pinned, err = ex.AllocPinned(most); err != nil {
		return nil, err
	}
	g.page = make([]byte, most)
	fill(g.page, 7)
	for range s.Streams {
		st, err := ex.NewStream()
		if err != nil {
			return nil, err
		}
		g.streams = append(g.streams, st)
	}
	g.marks()
	g.held = make([]*launcher, s.Streams)
	for _, w := range s.Work {
		if w.LatNS >= heldNS && g.held[w.Stream] == nil {
			l := &launcher{ch: make(chan heldWork, 1<<12), done: make(chan struct{})}
			g.held[w.Stream] = l
			go func() {
				defer close(l.done)
				runtime.LockOSThread()
				for h := range l.ch {
					if !g.failed.Load() {
						burnUntil(h.at)
						if err := g.queueNow(h.w); err != nil {
							g.fail(err)
						}
					}
					l.pending.Add(-1)
				}
			}()
		}
	}
	defer g.stopLaunchers()
	g.mainStart = make([][]atomic.Int64, passes)
	for p := range g.mainStart {
		g.mainStart[p] = make([]atomic.Int64, len(s.Threads[s.Main].Calls))
		for k := range g.mainStart[p] {
			g.mainStart[p][k].Store(-1)
		}
	}

	var batches chan struct{}
	stop := make(chan struct{})
	var producers sync.WaitGroup
	if pl := s.Pool; pl != nil && pl.Workers > 0 {
		// Each producer writes its batch as a DataLoader worker does, so
		// that producers contend for memory as workers do, and burns the
		// rest of the batch's traced time that one build here leaves.
		rest := time.Duration(pl.BatchNS)
		if pl.Bytes > 0 {
			one, err := timeBuild(pl.Bytes)
			if err != nil {
				return nil, err
			}
			rest = max(0, rest-one)
		}
		batches = make(chan struct{}, 2*pl.Workers) // two batches a producer ahead
		for w := range pl.Workers {
			producers.Add(1)
			go func() {
				defer producers.Done()
				runtime.LockOSThread()
				for seed := byte(w); ; seed++ {
					if pl.Bytes > 0 {
						if err := workerBatch(pl.Bytes, seed); err != nil {
							g.fail(err)
							return
						}
					}
					burn(rest)
					select {
					case batches <- struct{}{}:
					case <-stop:
						return
					}
				}
			}()
		}
	}
	defer func() { close(stop); producers.Wait() }()
	if batches != nil && !primed(ctx, g, batches) {
		return nil, g.err
	}

	// A pass ends when every thread has done its calls of it, and on the
	// GPU when the work they queued has run: the last thread to end the
	// pass records an event on every stream, so that a GPU or a thread
	// that runs behind the main one sets the pace, as the model's busiest
	// stream does.
	ends := make([]time.Time, passes)
	gpuEnds := make([][]Event, passes)
	defer func() {
		for _, evs := range gpuEnds {
			for _, ev := range evs {
				ex.Release(ev)
			}
		}
	}()
	active := int32(0)
	for th := range s.Threads {
		if th == s.Main || len(s.Threads[th].Calls) > 0 {
			active++
		}
	}
	passDone := make([]atomic.Int32, passes)
	endPass := func(p int) {
		if passDone[p].Add(1) != active {
			return
		}
		ends[p] = time.Now()
		for k, st := range g.streams {
			g.drain(int32(k))
			ev, err := ex.Record(st)
			if err != nil {
				g.fail(err)
				return
			}
			gpuEnds[p] = append(gpuEnds[p], ev)
		}
	}
	g.start = time.Now()
	var threads sync.WaitGroup
	for th := range s.Threads {
		if th == s.Main || len(s.Threads[th].Calls) == 0 {
			continue
		}
		threads.Add(1)
		go func() {
			defer threads.Done()
			runtime.LockOSThread()
			for p := range passes {
				if !g.thread(ctx, th, p, nil) {
					return
				}
				endPass(p)
			}
		}()
	}
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for p := range passes {
			if !g.thread(ctx, s.Main, p, batches) {
				return
			}
			endPass(p)
			for range s.Steps {
				tick()
			}
		}
	}()
	threads.Wait()
	g.stopLaunchers()
	if g.failed.Load() {
		return nil, g.err
	}
	for _, st := range g.streams {
		if err := ex.Sync(st); err != nil {
			return nil, err
		}
	}
	if g.err != nil {
		return nil, g.err
	}
	wall := make([]int64, 0, measured)
	for p := 1; p < passes; p++ {
		d := ends[p].Sub(ends[p-1])
		if len(gpuEnds[p]) < len(g.streams) || len(gpuEnds[p-1]) < len(g.streams) {
			return nil, fmt.Errorf("schedule %s: pass %d has no end on the GPU", s.Name, p)
		}
		for k := range g.streams {
			gd, err := ex.Elapsed(gpuEnds[p-1][k], gpuEnds[p][k])
			if err != nil {
				return nil, err
			}
			d = max(d, gd)
		}
		wall = append(wall, d.Nanoseconds()/int64(s.Steps))
	}
	return wall, nil
}

// primed waits until the producers have filled batches, two batches each
// ahead, as a DataLoader's workers have after its first batches: the
// measured passes see the pool's steady pace, with only the producers
// that keep up busy, not all of them building their first two batches at
// once (the model's pool is measured in its steady state too). False
// when the run failed or ctx ended first.
func primed(ctx context.Context, g *graphRun, batches chan struct{}) bool {
	for len(batches) < cap(batches) {
		if g.failed.Load() {
			return false
		}
		if err := ctx.Err(); err != nil {
			g.fail(err)
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// RunSchedule runs schedule s on ex as Run runs a variant with a
// schedule, each kernel its DurNS less kernelAdj, and returns the mean
// step of each measured pass.
func RunSchedule(ctx context.Context, ex Executor, s *model.Schedule, o Options, kernelAdj time.Duration) ([]int64, error) {
	return runSchedule(ctx, ex, s, o, kernelAdj, func() {})
}

// schedulePasses is how many passes of schedule s's window a run makes:
// one to warm up, then at least two and at least o.Steps steps.
func schedulePasses(s *model.Schedule, o Options) int {
	if s.Steps <= 0 {
		return 1 // refused by runSchedule
	}
	return 1 + max(2, (o.Steps+s.Steps-1)/s.Steps)
}

// marks sets which work needs an event after it: work another stream
// waits for, and work a call waits for while later work of its stream
// was queued by the same thread in between (a stream sync would wait for
// that too).
func (g *graphRun) marks() {
	s := g.s
	g.event = make([]bool, len(s.Work))
	for _, w := range s.Work {
		if w.After >= 0 {
			g.event[w.After] = true
		}
	}
	for th := range s.Threads {
		queuedAt := map[int32]int{} // work -> its call's index on this thread
		lastOn := map[int32]int32{} // stream -> work queued last on this thread
		for k, cl := range s.Threads[th].Calls {
			for _, w := range cl.Work {
				queuedAt[w] = k
				lastOn[s.Work[w].Stream] = w
			}
			if w := cl.Wait; w >= 0 {
				if _, mine := queuedAt[w]; mine && lastOn[s.Work[w].Stream] != w {
					g.event[w] = true
				}
			}
		}
	}
}

// fail records the first error and stops every thread.
func (g *graphRun) fail(err error) {
	g.errOnce.Do(func() { g.err = err })
	g.failed.Store(true)
}

// thread runs one pass of host thread th's calls; it reports whether to
// go on. The main thread takes its batches from batches.
func (g *graphRun) thread(ctx context.Context, th, pass int, batches chan struct{}) bool {
	s := g.s
	t := &s.Threads[th]
	// over is how much longer than the schedule's host time this box's
	// calls took, not yet taken out of the host time after them: a driver
	// call here that costs more than the traced call did is part of the
	// host work around it, as the traced call's cost was.
	var over time.Duration
	gap := func(d time.Duration) {
		cut := min(over, d)
		over -= cut
		burn(d - cut)
	}
	for k := range t.Calls {
		if g.failed.Load() {
			return false
		}
		if k%64 == 0 && ctx.Err() != nil {
			g.fail(ctx.Err())
			return false
		}
		cl := &t.Calls[k]
		switch {
		case cl.Anchor >= 0 && th != s.Main:
			// A thread that waits for the main thread's work: it starts
			// its call the traced offset after the main thread's.
			at := &g.mainStart[pass][cl.Anchor]
			for at.Load() < 0 {
				if g.failed.Load() {
					return false
				}
				runtime.Gosched()
			}
			burnUntil(g.start.Add(time.Duration(at.Load() + cl.OffsetNS)))
			over = 0
		case cl.Fetch && batches != nil:
			<-batches
			burn(time.Duration(s.Pool.HandoffNS))
			gap(time.Duration(cl.GapNS))
		default:
			gap(time.Duration(cl.GapNS))
		}
		begin := time.Now()
		if th == s.Main {
			g.mainStart[pass][k].Store(begin.Sub(g.start).Nanoseconds())
		}
		if err := g.call(cl); err != nil {
			g.fail(err)
			return false
		}
		end := begin.Add(time.Duration(cl.HostNS))
		switch now := time.Now(); {
		case cl.Wait >= 0:
			burnUntil(end) // a wait is the GPU's time, not the call's
		case now.After(end):
			over += now.Sub(end)
		default:
			burnUntil(end)
		}
	}
	gap(time.Duration(t.TailNS))
	return true
}

// call issues call cl's GPU side: its work, then its wait.
func (g *graphRun) call(cl *model.Call) error {
	s := g.s
	for _, w := range cl.Work {
		if err := g.queue(w); err != nil {
			return err
		}
	}
	w := cl.Wait
	if w < 0 {
		return nil
	}
	if cl.Kind == model.CallCopy && len(cl.Work) > 0 && cl.Work[0] == w && !s.Work[w].Pinned && g.held[s.Work[w].Stream] == nil {
		return nil // a pageable copy returned when it was done
	}
	g.drain(s.Work[w].Stream)
	g.mu.Lock()
	st, last, ev := g.streams[s.Work[w].Stream], g.last[s.Work[w].Stream], g.evs[w]
	g.mu.Unlock()
	if ev != nil && last != w {
		return g.ex.HostWait(ev)
	}
	return g.ex.Sync(st)
}

// queue issues work w on its stream, through the stream's launcher where
// it has one.
func (g *graphRun) queue(w int32) error {
	wk := &g.s.Work[w]
	if l := g.held[wk.Stream]; l != nil {
		var at time.Time
		if wk.LatNS >= heldNS {
			at = time.Now().Add(time.Duration(wk.LatNS))
		}
		l.pending.Add(1)
		l.ch <- heldWork{w, at}
		return nil
	}
	return g.queueNow(w)
}

// drain waits until stream k's launcher has queued everything handed to
// it: a wait for its work must come after the work.
func (g *graphRun) drain(k int32) {
	if l := g.held[k]; l != nil {
		for l.pending.Load() > 0 && !g.failed.Load() {
			runtime.Gosched()
		}
	}
}

// stopLaunchers ends the launchers once they have queued what they hold.
func (g *graphRun) stopLaunchers() {
	for k, l := range g.held {
		if l != nil {
			close(l.ch)
			<-l.done
			g.held[k] = nil
		}
	}
}

// queueNow issues work w on its stream: behind the event of the work it
// waits for on another stream, then an event after it where one is
// needed.
func (g *graphRun) queueNow(w int32) error {
	wk := &g.s.Work[w]
	st := g.streams[wk.Stream]
	if wk.After >= 0 {
		g.mu.Lock()
		ev := g.evs[wk.After]
		g.mu.Unlock()
		if ev != nil {
			if err := g.ex.Wait(st, ev); err != nil {
				return err
			}
		}
	}
	var err error
	switch wk.Kind {
	case model.WorkHtoD:
		src := g.page
		if wk.Pinned {
			src = g.pinned
		}
		err = g.ex.CopyHtoD(st, g.dev, src[:wk.Bytes], wk.Pinned)
	case model.WorkDtoH:
		if wk.Fresh {
			err = g.copyFresh(st, wk.Bytes)
			break
		}
		dst := g.page
		if wk.Pinned {
			dst = g.pinned
		}
		err = g.ex.CopyDtoH(st, dst[:wk.Bytes], g.dev, wk.Pinned)
	default:
		err = g.ex.Compute(st, max(time.Duration(wk.DurNS)-g.kernelAdj, 0))
	}
	if err != nil {
		return err
	}
	var ev Event
	if g.event[w] {
		if ev, err = g.ex.Record(st); err != nil {
			return err
		}
	}
	g.mu.Lock()
	g.last[wk.Stream] = w
	if ev != nil {
		if old := g.evs[w]; old != nil {
			g.ex.Release(old)
		}
		g.evs[w] = ev
	}
	g.mu.Unlock()
	return nil
}

// workerBatch writes one batch of n bytes into a new shared-memory segment
// and releases it, as a DataLoader worker makes a batch for the main
// process (writeShm: its memory traffic).
func workerBatch(n int64, seed byte) error {
	sh, err := newShm(n)
	if err != nil {
		return err
	}
	defer sh.close()
	return writeShm(sh, seed)
}

// timeBuild is the least of three workerBatch times of n bytes on one
// thread alone: the memory traffic's share of a batch's build here.
func timeBuild(n int64) (time.Duration, error) {
	best := time.Duration(1 << 62)
	for i := range 3 {
		t0 := time.Now()
		if err := workerBatch(n, byte(i)); err != nil {
			return 0, err
		}
		best = min(best, time.Since(t0))
	}
	return best, nil
}

// copyFresh copies n bytes from the device into memory newly mapped from
// the OS, whose pages fault in as the copy writes them, as a fresh
// tensor's do (model.Work.Fresh). A copy to pageable memory returns when
// it has ended; the mapping is then released off the calling thread,
// whose traced host time already holds the program's own free.
func (g *graphRun) copyFresh(st Stream, n int64) error {
	m, err := newMapping(n)
	if err != nil {
		return err
	}
	err = g.ex.CopyDtoH(st, m.b, g.dev, false)
	g.unmaps.Add(1)
	go func() {
		defer g.unmaps.Done()
		_ = m.unmap()
	}()
	return err
}

// close waits for the streams and frees what the run allocated.
func (g *graphRun) close() {
	g.unmaps.Wait()
	for _, st := range g.streams {
		_ = g.ex.Sync(st) // after a failure the first error is what was returned
	}
	for i, ev := range g.evs {
		if ev != nil {
			g.ex.Release(ev)
			g.evs[i] = nil
		}
	}
	if g.pinned != nil {
		_ = g.ex.FreePinned(g.pinned)
	}
	if g.dev != nil {
		_ = g.ex.FreeDevice(g.dev)
	}
}

// schedule is the step model's schedule of variant name, where the model
// reproduces the trace and kept its graph (analyze.Config.KeepSchedules).
func (p *Plan) schedule(name string) (*model.Schedule, bool) {
	if !p.model.Faithful() {
		return nil, false
	}
	return p.model.Schedule(modelName(name))
}

// hasSchedule reports whether schedule(name) writes one, without writing
// it.
func (p *Plan) hasSchedule(name string) bool {
	return p.model.Faithful() && p.model.HasSchedule(modelName(name))
}

// modelName is the step model's name of variant name.
func modelName(name string) string {
	if name == Observed {
		return model.Observed
	}
	return name
}
