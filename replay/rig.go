package replay

import (
	"time"
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
	// kernelGPU is one launch-bound kernel's GPU time here, by events.
	kernelGPU time.Duration
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
	if err := r.calibrate(); err != nil {
		return nil, err
	}
	return r, nil
}

// calibrate measures on this box what the plan's host phases are made of:
// building a batch alone, unmapping it, and one launch-bound kernel.
func (r *rig) calibrate() error {
	st := &r.p.Step
	obs := observedSetup(r.p)
	var sizes []int64
	var biggest int64
	for _, c := range st.Copies {
		if c.Dir == "HtoD" {
			sizes = append(sizes, c.Bytes)
			biggest = max(biggest, c.Bytes)
		}
	}
	if len(sizes) > 0 {
		scratch := make([]byte, biggest)
		shared := obs.Feeders > 0
		r.buildNS, r.unmapNS = -1, -1
		for rep := range 2 {
			b, u, err := buildOnce(sizes, scratch, shared, byte(rep))
			if err != nil {
				return err
			}
			if r.buildNS < 0 || b < r.buildNS {
				r.buildNS = b
			}
			if r.unmapNS < 0 || u < r.unmapNS {
				r.unmapNS = u
			}
		}
	}
	if st.Batches == BatchesMain {
		r.dataBurn = time.Duration(max(st.DataNS-r.buildNS, 0))
	} else {
		r.dataBurn = time.Duration(st.DataNS)
	}
	other := st.OtherNS
	if !st.OSObserved && unmapsOnMain(obs, st) {
		other -= r.unmapNS
	}
	r.otherBurn = time.Duration(max(other, 0))
	if l := st.Launches; l != nil && l.Kernels > 0 {
		var ds []int64
		for range 5 {
			d, err := r.ex.MeasureCompute(time.Duration(l.KernelNS))
			if err != nil {
				return err
			}
			ds = append(ds, d.Nanoseconds())
		}
		r.kernelGPU = time.Duration(median(ds))
	}
	return nil
}

// buildOnce builds one batch of the given buffer sizes into fresh pages
// (shared memory read back through a fresh view when shared, as the main
// process reads a worker's batch) and returns the build time and the time
// the main thread's munmap of the batch takes, in ns.
func buildOnce(sizes []int64, scratch []byte, shared bool, seed byte) (buildNS, unmapNS int64, err error) {
	var maps []*mapping
	defer func() {
		for _, m := range maps {
			m.unmap()
		}
	}()
	t0 := time.Now()
	for _, n := range sizes {
		if !shared {
			m, err := newMapping(n)
			if err != nil {
				return 0, 0, err
			}
			maps = append(maps, m)
			build(m.b, scratch, seed)
			continue
		}
		s, err := newShm(n)
		if err != nil {
			return 0, 0, err
		}
		w, err := s.view()
		if err != nil {
			s.close()
			return 0, 0, err
		}
		build(w.b, scratch, seed)
		w.unmap()
		m, err := s.view()
		s.close()
		if err != nil {
			return 0, 0, err
		}
		maps = append(maps, m)
		touch(m.b) // the copy reads it
	}
	t1 := time.Now()
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
func unmapsOnMain(s Setup, st *Step) bool {
	if s.ReuseBuffers || st.BatchBytes() == 0 {
		return false
	}
	if s.Workers > 0 || s.Feeders > 0 {
		// Shared-memory batches: the main thread frees them unless the pin
		// thread copies them into pinned memory and frees them there.
		return !s.Pinned || s.PinOn == PinOnMain
	}
	for _, c := range st.Copies {
		if c.Dir == "HtoD" && freshMain(st, c) {
			return true
		}
	}
	return false
}

// freshMain says whether a batch buffer the main thread builds lives in
// fresh pages, unmapped when freed: where the trace shows munmap stalls, or
// where it could not show OS calls and the buffer is above glibc's mmap
// threshold. A reused batch never does.
func freshMain(st *Step, c Copy) bool {
	return st.Batches == BatchesMain && (st.Munmaps > 0 || (!st.OSObserved && c.Bytes >= MmapThreshold))
}
