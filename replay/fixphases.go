package replay

import "time"

// The phases that three fixes remove: small copies made and waited for one
// by one (pack-copies), the loader's restart at each epoch boundary
// (persistent-workers), and device memory allocated and freed in the step
// (keep-cache). Each runs the trace's operations for real on the observed
// loop; the fix's variant runs what the fix leaves.

// PackSlots is how many pinned buffers the packed copies rotate through:
// one being filled while the one before is still in flight.
const PackSlots = 2

// packSlot is a pinned buffer of one step's packed copies and the event
// that completes when its copy has.
type packSlot struct {
	buf []byte
	ev  Event
}

// restartWait waits, at the first step of each epoch, for the loader's
// workers to start again, unless they persist.
func (l *loop) restartWait(k int) {
	rs := l.r.p.Step.Restart
	if rs == nil || l.s.PersistentWorkers {
		return
	}
	if k >= l.epochFrom && (k-l.epochFrom)%rs.EverySteps == 0 {
		if h := l.r.hooks.restart; h != nil {
			h(k)
		}
		burn(time.Duration(rs.StallNS))
	}
}

// smallCopies copies the step's small tensors: one blocking pageable copy
// each, waited for, after the host's dispatch of it; or, packed, stacked
// into a pinned buffer in one pass and copied once without a wait.
func (l *loop) smallCopies() error {
	sc, r := l.r.p.Step.SmallCopies, l.r
	if sc == nil {
		return nil
	}
	ex := r.ex
	if !l.s.PackCopies {
		for i := range sc.Count {
			burn(time.Duration(sc.GapNS))
			src := r.smallHost[int64(i)*sc.Bytes : int64(i+1)*sc.Bytes]
			if err := ex.CopyHtoD(r.compute, r.small, src, false); err != nil {
				return err
			}
			if err := ex.Sync(r.compute); err != nil {
				return err
			}
		}
		return nil
	}
	sl := l.pack[l.packNext]
	l.packNext = (l.packNext + 1) % len(l.pack)
	if sl.ev != nil {
		err := ex.HostWait(sl.ev) // its last copy has read it
		ex.Release(sl.ev)
		sl.ev = nil
		if err != nil {
			return err
		}
	}
	copy(sl.buf, r.smallHost)
	if err := ex.CopyHtoD(r.compute, r.small, sl.buf, true); err != nil {
		return err
	}
	ev, err := ex.Record(r.compute)
	sl.ev = ev
	return err
}

// churn allocates the step's device memory and frees it, as a step does
// with the caching allocator emptied, taking at least the calls' idle time
// in the trace; with the cache kept, nothing.
func (l *loop) churn() error {
	c, ex := l.r.p.Step.Churn, l.r.ex
	if c == nil || l.s.KeepCache {
		return nil
	}
	t0 := time.Now()
	bufs := make([]DeviceBuffer, 0, c.Allocs)
	var err error
	for range c.Allocs {
		var b DeviceBuffer
		if b, err = ex.AllocDevice(ChurnBytes); err != nil {
			break
		}
		bufs = append(bufs, b)
	}
	for _, b := range bufs {
		if e := ex.FreeDevice(b); e != nil && err == nil {
			err = e
		}
	}
	burnUntil(t0.Add(time.Duration(c.IdleNS)))
	return err
}

// newPackSlots allocates the pinned buffers of packed copies.
func (l *loop) newPackSlots() error {
	sc := l.r.p.Step.SmallCopies
	if sc == nil || !l.s.PackCopies {
		return nil
	}
	for range PackSlots {
		b, err := l.r.ex.AllocPinned(int64(sc.Count) * sc.Bytes)
		if err != nil {
			return err
		}
		l.pack = append(l.pack, &packSlot{buf: b})
	}
	return nil
}

// closePackSlots frees them once the GPU is idle.
func (l *loop) closePackSlots() {
	for _, sl := range l.pack {
		if sl.ev != nil {
			l.r.ex.Release(sl.ev)
		}
		l.r.ex.FreePinned(sl.buf)
	}
	l.pack = nil
}
