package index

import "github.com/traceaudit/traceaudit/timeline"

// Restart is an epoch boundary inside a steady step: the step asked the
// DataLoader for a batch twice, the last of one epoch (which ends it) and
// the first of the next, and between the end of the first ask and the
// end of the second the loader started again (new worker processes,
// where persistent_workers is off, and their first batch).
type Restart struct {
	// Step is the index in Steady of the step.
	Step int
	// Start and End bound the restart on the main thread: from the end
	// of the step's first DataLoader __next__ to the end of its last.
	Start, End int64
}

// Dur is the restart's length in nanoseconds.
func (r Restart) Dur() int64 { return r.End - r.Start }

// Restarts finds the epoch boundaries of the steady steps: steps whose
// main thread enters DataLoader __next__ twice or more. Cost: O(k) in the
// main thread's events.
func (ix *Index) Restarts() []Restart {
	if !ix.HasMain || len(ix.Steady) == 0 {
		return nil
	}
	tl := ix.TL
	var out []Restart
	cur, first, last, n := -1, int64(0), int64(0), 0
	flush := func() {
		if cur >= 0 && n >= 2 && last > first {
			out = append(out, Restart{Step: cur, Start: first, End: last})
		}
	}
	var outerEnd int64 = -1
	for _, i := range tl.Tracks[ix.Main].Events {
		e := &tl.Events[i]
		if e.Kind != timeline.KindRange || e.Range != timeline.RangeDataLoader || e.Start < outerEnd {
			continue // not a DataLoader ask, or nested in one
		}
		outerEnd = e.End
		k := ix.SteadyIndex(e.Start)
		if k < 0 {
			continue
		}
		if k != cur {
			flush()
			cur, first, last, n = k, e.End, e.End, 0
		}
		n++
		last = e.End
	}
	flush()
	return out
}
