package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/traceaudit/traceaudit/timeline"
)

// rig holds what every variant shares: streams, device buffers, and what
// was measured on this box before the variants run.
type rig struct {
	ex      Executor
	p       *Plan
	compute Stream
	copies  Stream
	// dev[slot][i] is the device buffer of copy i for double-buffer slot.
	dev [2][]DeviceBuffer
	// small is the device buffer of the step's small copies, smallHost
	// their pageable host memory (Phases.SmallCopies).
	small     DeviceBuffer
	smallHost []byte
	// buildNS is how long building one batch takes here, alone: the memory
	// traffic of writing the samples and collating them into fresh pages.
	buildNS int64
	// unmapNS is how long the main thread's munmap of one observed batch
	// takes here.
	unmapNS int64
	// dataBurn is the per-batch CPU work beyond the memory traffic: the
	// observed data phase less buildNS, when the batch was built there.
	dataBurn time.Duration
	// otherBurn is the host work of the other phase: the observed one less
	// the munmap that the replay does for real where the trace could not
	// see it (it was part of the other bucket).
	otherBurn time.Duration
	// kernelFloor is one empty kernel's GPU time here, back to back in a
	// CUDA graph of the step's launch-bound kernels: what any kernel costs
	// on this GPU at the least. kernelGap is the part of it a profiler
	// shows between kernels, not in their durations (GraphGapShare).
	// kernelSpin is what each launch-bound kernel is asked to spin for:
	// the trace's kernel duration less the rest of the floor (0: an empty
	// kernel). kernelGPU is one such kernel's GPU time here, back to back
	// (kernelBackToBack): the trace's duration plus the gap.
	kernelFloor, kernelGap, kernelSpin, kernelGPU time.Duration
	// buildWarmNS is the batch built here into warm pages where the
	// observed loop builds it into fresh ones (0 otherwise), best of 2.
	buildWarmNS int64
	// hooks observe the host side in tests.
	hooks struct {
		// produce runs when producer worker has made a batch.
		produce func(worker int)
		// mapped runs for every batch mapping made (shared: a view of a
		// worker's shared memory, else a private mapping).
		mapped func(shared bool)
		// unmap runs for every batch mapping unmapped, saying where: "main"
		// (the main loop, after the batch's copy), "pin" (the pin
		// goroutine), "producer" (a producer's own view of the shared
		// memory it wrote) or "drain" (what was prefetched when the loop
		// ended).
		unmap func(where string)
		// pin runs for every batch copied into pinned memory: "main" or
		// "thread".
		pin func(where string)
		// restart runs for every wait for the loader's restart, with the
		// step it delays.
		restart func(k int)
		// built runs for every batch the main thread builds.
		built func()
	}
}

func newRig(ex Executor, p *Plan) (*rig, error) {
	r := &rig{ex: ex, p: p}
	var err error
	if r.compute, err = ex.NewStream(); err != nil {
		return nil, err
	}
	if r.copies, err = ex.NewStream(); err != nil {
		return nil, err
	}
	for slot := range r.dev {
		for _, c := range p.Step.Copies {
			b, err := ex.AllocDevice(c.Bytes)
			if err != nil {
				return nil, err
			}
			r.dev[slot] = append(r.dev[slot], b)
		}
	}
	if sc := p.Step.SmallCopies; sc != nil {
		n := int64(sc.Count) * sc.Bytes
		if r.small, err = ex.AllocDevice(n); err != nil {
			return nil, err
		}
		r.smallHost = make([]byte, n)
		fill(r.smallHost, 1)
	}
	if err := r.calibrate(); err != nil {
		return nil, err
	}
	return r, nil
}

// calibrate measures on this box what the plan's host phases are made of:
// building a batch alone the way the observed loop builds it, unmapping
// it, and one launch-bound kernel.
//
// The build is timed as the observed loop does it, into warm pages where
// the loop reuses its batch buffer, because dataBurn is the observed data
// phase less this build: page faults the loop never takes would shorten
// every replayed data phase.
func (r *rig) calibrate() error {
	st := &r.p.Step
	obs := observedSetup(r.p)
	var sizes []int64
	for _, c := range st.Copies {
		if c.Dir == timeline.CopyHtoD {
			sizes = append(sizes, c.Bytes)
		}
	}
	if len(sizes) > 0 {
		mode := buildMode(obs, st)
		r.buildNS, r.unmapNS = -1, -1
		for rep := range 2 {
			b, u, err := buildOnce(sizes, mode, byte(rep))
			if err != nil {
				return err
			}
			if r.buildNS < 0 || b < r.buildNS {
				r.buildNS = b
			}
			if r.unmapNS < 0 || u < r.unmapNS {
				r.unmapNS = u
			}
			if mode == buildFresh {
				// What reuse-buffers' data phase keeps of the build.
				w, _, err := buildOnce(sizes, buildWarm, byte(rep))
				if err != nil {
					return err
				}
				if r.buildWarmNS == 0 || w < r.buildWarmNS {
					r.buildWarmNS = w
				}
			}
		}
	}
	if st.Batches == BatchesMain {
		r.dataBurn = time.Duration(max(st.DataNS-r.buildNS, 0))
	} else {
		r.dataBurn = time.Duration(st.DataNS)
	}
	// The main thread's munmap of each batch, which the replay does for
	// real, is other-bucket time in the trace unless a munmap-stall finding
	// took the OS calls out of it (Munmaps > 0): a trace without OS calls
	// cannot show it, and nsys does not see the munmap that glibc's free()
	// makes internally for a batch of 32 MiB or more.
	other := st.OtherNS
	if st.Munmaps == 0 && unmapsOnMain(obs, st) {
		other -= r.unmapNS
	}
	r.otherBurn = time.Duration(max(other, 0))
	if l := st.Launches; l != nil && l.Kernels > 0 {
		if err := r.calibrateKernels(l); err != nil {
			return err
		}
	}
	return nil
}

// calibrateKernels measures the floor of a launch-bound kernel here and
// sets what each one spins for: the trace's kernel duration less the part
// of the floor a profiler counts in a kernel's duration, so that a
// replayed kernel takes, back to back in a graph, what the trace's would:
// its duration plus the GPU's gap between graph kernels. A kernel no
// longer than that part replays as an empty one.
//
// Why: a profiler's kernel duration holds part of what any kernel costs
// to start and finish, which the spin kernel adds again around its spin;
// the rest of the floor, the gap between kernels, is in no duration, and
// stays.
func (r *rig) calibrateKernels(l *Launches) error {
	floor, err := r.kernelBackToBack(l.Kernels, 0)
	if err != nil {
		return err
	}
	r.kernelFloor = floor
	r.kernelGap = time.Duration(GraphGapShare * float64(floor))
	r.kernelSpin = max(time.Duration(l.KernelNS)-(floor-r.kernelGap), 0)
	if r.kernelSpin == 0 {
		r.kernelGPU = floor
		return nil
	}
	r.kernelGPU, err = r.kernelBackToBack(l.Kernels, r.kernelSpin)
	return err
}

// floorInKernel is the part of this GPU's kernel floor that a profiler
// counts inside a kernel's duration (the floor less the gap between graph
// kernels): what a spin kernel adds around its spin, taken off each
// replayed kernel's traced duration. It reuses calibrateKernels' floor
// where the plan had one measured, else measures it over 64 kernels.
func (r *rig) floorInKernel() (time.Duration, error) {
	if r.kernelFloor == 0 {
		floor, err := r.kernelBackToBack(64, 0)
		if err != nil {
			return 0, err
		}
		r.kernelFloor, r.kernelGap = floor, time.Duration(GraphGapShare*float64(floor))
	}
	return r.kernelFloor - r.kernelGap, nil
}

// GraphGapShare is the share of an empty kernel's back-to-back time in a
// CUDA graph that a profiler shows as the gap between kernels rather than
// in their durations, as measured on an H200 against PyTorch's own graph
// of short kernels; other GPUs are taken to split their floor the same
// way.
const GraphGapShare = 0.40

// kernelBusy is one replayed launch-bound kernel's time as a profiler
// would show it (back to back, less the gap between kernels): what it
// counts for in the replayed GPU time.
func (r *rig) kernelBusy() time.Duration { return max(r.kernelGPU-r.kernelGap, 0) }

// kernelBackToBack is the GPU time of one of n kernels spinning for d (0:
// empty kernels) launched back to back, as a CUDA graph of the step's
// launch-bound kernels runs them:
// the best of 3 timed launches of such a graph (after one that uploads
// it), divided by n. That is what each replayed launch-bound kernel costs
// on this GPU; one kernel timed alone with events would add the launch
// latency (about 3 µs on an H200) to each.
func (r *rig) kernelBackToBack(n int, d time.Duration) (time.Duration, error) {
	ex, s := r.ex, r.compute
	g, err := ex.ComputeGraph(n, d)
	if err != nil {
		return 0, err
	}
	defer ex.DestroyGraph(g)
	best := time.Duration(-1)
	for rep := range 4 {
		// A lead kernel hides the host's time to queue the events and
		// the graph.
		if err := ex.Compute(s, 200*time.Microsecond); err != nil {
			return 0, err
		}
		a, err := ex.Record(s)
		if err != nil {
			return 0, err
		}
		err = ex.LaunchGraph(s, g)
		var b Event
		if err == nil {
			b, err = ex.Record(s)
		}
		if err == nil {
			err = ex.Sync(s)
		}
		var el time.Duration
		if err == nil {
			el, err = ex.Elapsed(a, b)
		}
		ex.Release(a)
		if b != nil {
			ex.Release(b)
		}
		if err != nil {
			return 0, err
		}
		if rep > 0 && (best < 0 || el < best) {
			best = el
		}
	}
	return best / time.Duration(n), nil
}

// measureBox times the plan's host-to-device copies from pageable and from
// pinned memory on the compute stream. It returns nil when the plan copies
// nothing to the device.
func (r *rig) measureBox() (*Box, error) {
	var idx []int
	var biggest, total int64
	for i, c := range r.p.Step.Copies {
		if c.Dir == timeline.CopyHtoD {
			idx = append(idx, i)
			biggest = max(biggest, c.Bytes)
			total += c.Bytes
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	ex := r.ex
	pinned, err := ex.AllocPinned(biggest)
	if err != nil {
		return nil, err
	}
	defer ex.FreePinned(pinned)
	pageable := make([]byte, biggest)
	fill(pageable, 1)
	fill(pinned, 2)
	rate := func(src []byte, isPinned bool) (float64, error) {
		var runs []int64
		for range BoxReps {
			var el time.Duration
			for _, i := range idx {
				n := r.p.Step.Copies[i].Bytes
				t, err := ex.Record(r.compute)
				if err != nil {
					return 0, err
				}
				errCopy := ex.CopyHtoD(r.compute, r.dev[0][i], src[:n], isPinned)
				u, errRec := ex.Record(r.compute)
				if errCopy == nil && errRec == nil {
					errCopy = ex.Sync(r.compute)
				}
				if errCopy == nil && errRec == nil {
					var d time.Duration
					d, errCopy = ex.Elapsed(t, u)
					el += d
				}
				ex.Release(t)
				if errRec == nil {
					ex.Release(u)
				}
				if errCopy != nil {
					return 0, errCopy
				}
				if errRec != nil {
					return 0, errRec
				}
			}
			runs = append(runs, el.Nanoseconds())
		}
		m := median(runs)
		if m <= 0 {
			return 0, fmt.Errorf("copies of %d bytes took no measurable time", total)
		}
		return float64(total) / float64(m), nil
	}
	b := &Box{Bytes: total}
	if b.PageableGBps, err = rate(pageable, false); err != nil {
		return nil, err
	}
	if b.PinnedGBps, err = rate(pinned, true); err != nil {
		return nil, err
	}
	return b, nil
}

// measure runs one variant and returns per-step wall and GPU times in ns.
// Steps are synchronised every s.SyncEvery steps (every step when the loop
// drains the queue each step); a step's wall time runs from the end of the
// previous step to its own end, so the times of a group add up to the
// group's wall time and their mean is the loop's throughput.
func (r *rig) measure(ctx context.Context, s Setup, o Options, tick func()) (wall, gpu []int64, err error) {
	wall, gpu, _, err = r.measurePhases(ctx, s, o, tick)
	return wall, gpu, err
}

// measurePhases is measure, with the mean time per measured step of each
// phase of the main thread.
func (r *rig) measurePhases(ctx context.Context, s Setup, o Options, tick func()) (wall, gpu []int64, phases map[string]int64, err error) {
	l, err := newLoop(ctx, r, s)
	if err != nil {
		return nil, nil, nil, err
	}
	defer l.close()
	l.epochFrom = o.Warmup
	if rs := r.p.Step.Restart; rs != nil && !s.PersistentWorkers {
		o.Steps = (o.Steps + rs.EverySteps - 1) / rs.EverySteps * rs.EverySteps // whole epochs
	}
	if s.CopyStream {
		if err := l.prefetch(0); err != nil {
			return nil, nil, nil, err
		}
	}
	every := max(s.SyncEvery, 1)
	var pending []stepWork
	defer func() {
		for i := range pending {
			pending[i].release(r.ex)
		}
	}()
	total := o.Warmup + o.Steps
	last := time.Now()
	for k := range total {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, fmt.Errorf("interrupted: %w", err)
		}
		l.recording = k >= o.Warmup
		l.lapAt = time.Now()
		w, err := l.step(k)
		l.lap(PhaseLaunch)
		pending = append(pending, w)
		if err != nil {
			return nil, nil, nil, err
		}
		n := k + 1
		if n > o.Warmup {
			n -= o.Warmup
		}
		if n%every == 0 || k+1 == o.Warmup || k+1 == total {
			if err := l.barrier(); err != nil {
				return nil, nil, nil, err
			}
			l.lap(PhaseSync)
			for i := range pending {
				g, err := pending[i].gpu(r.ex)
				if err != nil {
					return nil, nil, nil, err
				}
				if pending[i].k >= o.Warmup {
					gpu = append(gpu, g)
				}
			}
			pending = pending[:0]
		}
		now := time.Now()
		if k >= o.Warmup {
			wall = append(wall, now.Sub(last).Nanoseconds())
		}
		last = now
		tick()
	}
	if n := int64(len(wall)); n > 0 {
		phases = map[string]int64{}
		for k, d := range l.phases {
			phases[k] = d.Nanoseconds() / n
		}
	}
	return wall, gpu, phases, nil
}

// How calibrate builds a batch (buildOnce).
const (
	// buildFresh: into new private mappings, as a main thread that
	// allocates each batch (above glibc's mmap threshold).
	buildFresh = iota
	// buildShared: into new shared memory through a producer's view, read
	// back through a fresh view, as the main process receives a worker's
	// batch.
	buildShared
	// buildWarm: into buffers already written once, as a main thread that
	// reuses its batch memory.
	buildWarm
)

// buildMode is how the observed loop s builds the batches of step st.
func buildMode(s Setup, st *Phases) int {
	switch {
	case s.Feeders > 0 || s.Workers > 0:
		return buildShared
	case anyFresh(st):
		return buildFresh
	}
	return buildWarm
}

// buildOnce builds one batch of the given buffer sizes the given way and
// returns the build time and the time the main thread's munmap of the
// batch takes (0 for warm buffers, which are never unmapped), in ns.
func buildOnce(sizes []int64, mode int, seed byte) (buildNS, unmapNS int64, err error) {
	var maps []*mapping
	defer func() {
		for _, m := range maps {
			m.unmap()
		}
	}()
	var warm [][]byte
	if mode == buildWarm {
		for _, n := range sizes {
			b := make([]byte, n)
			fill(b, seed+1) // written once before: its pages are in
			warm = append(warm, b)
		}
	}
	t0 := time.Now()
	for i, n := range sizes {
		switch mode {
		case buildWarm:
			build(warm[i], seed)
		case buildFresh:
			m, err := newMapping(n)
			if err != nil {
				return 0, 0, err
			}
			maps = append(maps, m)
			build(m.b, seed)
		default:
			s, err := newShm(n)
			if err != nil {
				return 0, 0, err
			}
			w, err := s.view()
			if err != nil {
				s.close()
				return 0, 0, err
			}
			build(w.b, seed)
			w.unmap()
			m, err := s.view()
			s.close()
			if err != nil {
				return 0, 0, err
			}
			maps = append(maps, m)
			touch(m.b) // the copy reads it
		}
	}
	t1 := time.Now()
	if len(maps) == 0 {
		return t1.Sub(t0).Nanoseconds(), 0, nil
	}
	for _, m := range maps {
		if err := m.unmap(); err != nil {
			return 0, 0, err
		}
	}
	return t1.Sub(t0).Nanoseconds(), time.Since(t1).Nanoseconds(), nil
}

// touch reads one byte per page of b, faulting every page in.
func touch(b []byte) {
	var x byte
	for i := 0; i < len(b); i += 4096 {
		x += b[i]
	}
	sink.Add(uint64(x))
}

// unmapsOnMain says whether the main thread of loop s releases each
// batch's pages with munmap after its copy.
func unmapsOnMain(s Setup, st *Phases) bool {
	if s.ReuseBuffers || st.BatchBytes() == 0 {
		return false
	}
	if s.Workers > 0 || s.Feeders > 0 {
		// Shared-memory batches: the main thread frees them unless the pin
		// thread copies them into pinned memory and frees them there.
		return !s.Pinned || s.PinOn == PinOnMain
	}
	for _, c := range st.Copies {
		if c.Dir == timeline.CopyHtoD && freshMain(st, c) {
			return true
		}
	}
	return false
}

// freshMain says whether a batch buffer the main thread builds lives in
// fresh pages, unmapped when freed: where the trace shows munmap stalls, or
// where the buffer is at least glibc's largest mmap threshold (32 MiB),
// which glibc always serves with a mapping of its own and unmaps when the
// tensor is freed. Neither profiler shows that munmap: the PyTorch profiler
// records no OS calls, and nsys's OS runtime trace records only the calls a
// library makes through libc's exported functions, not the one free()
// makes inside glibc. A reused batch never does.
func freshMain(st *Phases, c Copy) bool {
	return st.Batches == BatchesMain && (st.Munmaps > 0 || c.Bytes >= MmapThreshold)
}
