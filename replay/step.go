package replay

import "time"

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
// stream when s is nil).
func (l *loop) copyIn(s Stream, b *batch, slot int) ([]timed, error) {
	r := l.r
	var ops []timed
	for i, c := range r.p.Step.Copies {
		if c.Dir != "HtoD" {
			continue
		}
		st := s
		if st == nil {
			st = r.compute
			if c.SideStream {
				st = r.copies
			}
		}
		src, dst := b.bufs[i], r.dev[slot][i]
		t, err := l.gpuOp(st, func() error { return r.ex.CopyHtoD(st, dst, src, b.slot >= 0) })
		if err != nil {
			return ops, err
		}
		ops = append(ops, t)
	}
	return ops, nil
}

// prefetch gets the next batch and issues its copies on the copy stream
// into device slot, one step ahead of its compute (double buffering).
func (l *loop) prefetch(slot int) error {
	b, err := l.obtain()
	if err != nil {
		return err
	}
	ops, err := l.copyIn(l.r.copies, b, slot)
	if err != nil {
		return err
	}
	ev, err := l.r.ex.Record(l.r.copies)
	if err != nil {
		return err
	}
	l.next, l.nextSlot, l.nextEv, l.nextOps = b, slot, ev, ops
	return nil
}

// step runs step k and returns its GPU time (copies and compute issued in
// it) in nanoseconds. Every step ends with a barrier on both streams, so
// steps are measured one at a time.
func (l *loop) step(k int) (int64, error) {
	r, ex, st := l.r, l.r.ex, &l.r.p.Step
	var ops []timed
	var cur *batch
	slot := 0
	if l.s.CopyStream {
		cur, slot = l.next, l.nextSlot
		ops = append(ops, l.nextOps...)
		arrived := l.nextEv
		// The next batch's data phase and copy overlap this batch's compute.
		if err := l.prefetch(slot ^ 1); err != nil {
			return 0, err
		}
		ops = append(ops, l.nextOps...)
		l.nextOps = nil
		if err := ex.Wait(r.compute, arrived); err != nil {
			return 0, err
		}
		defer ex.Release(arrived)
	} else {
		b, err := l.obtain()
		if err != nil {
			return 0, err
		}
		cur = b
		in, err := l.copyIn(nil, cur, 0)
		if err != nil {
			l.done(cur)
			return 0, err
		}
		ops = append(ops, in...)
		if side := hasSide(st); side {
			ev, err := ex.Record(r.copies)
			if err != nil {
				return 0, err
			}
			if err := ex.Wait(r.compute, ev); err != nil {
				return 0, err
			}
			defer ex.Release(ev)
		}
		// The batch's host memory is freed once copied: with the observed
		// munmap stalls this is the real munmap, on the main thread.
		if cur.slot < 0 {
			if err := l.stepDone(cur); err != nil {
				return 0, err
			}
			cur = nil
		}
	}
	t, err := l.gpuOp(r.compute, func() error { return ex.Compute(r.compute, time.Duration(st.ComputeNS)) })
	if err != nil {
		return 0, err
	}
	ops = append(ops, t)
	for i, c := range st.Copies {
		if c.Dir != "DtoH" {
			continue
		}
		dst := make([]byte, c.Bytes)
		pinned := false
		if cur != nil && cur.slot >= 0 {
			dst, pinned = cur.bufs[i], true
		}
		t, err := l.gpuOp(r.compute, func() error { return ex.CopyDtoH(r.compute, dst, r.dev[slot][i], pinned) })
		if err != nil {
			return 0, err
		}
		ops = append(ops, t)
	}
	burn(time.Duration(st.OtherNS))
	if err := ex.Sync(r.compute); err != nil {
		return 0, err
	}
	if err := ex.Sync(r.copies); err != nil {
		return 0, err
	}
	var gpu time.Duration
	for _, o := range ops {
		d, err := ex.Elapsed(o.a, o.b)
		ex.Release(o.a)
		ex.Release(o.b)
		if err != nil {
			return 0, err
		}
		gpu += d
	}
	return gpu.Nanoseconds(), l.stepDone(cur)
}

func hasSide(st *Step) bool {
	for _, c := range st.Copies {
		if c.SideStream && c.Dir == "HtoD" {
			return true
		}
	}
	return false
}
