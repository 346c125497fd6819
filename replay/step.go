package replay

import (
	"time"

	"github.com/traceaudit/traceaudit/timeline"
)

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
	burn(r.otherBurn)
	l.lap(PhaseOther)
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
