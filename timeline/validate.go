package timeline

import (
	"errors"
	"fmt"
	"sort"
)

// MaxTime bounds every timestamp: 2^62 ns is about 146 years, far beyond any
// capture clock. Ingesters reject larger values as corrupt.
const MaxTime = int64(1) << 62

// Validate checks the invariants every ingester's output must satisfy:
// times in range with End >= Start, events sorted, names and tracks in
// range, each kind on the right kind of track, enum fields in range, sizes
// non-negative, links pointing at a matching event and track indexes
// consistent with the events. It returns the first violation found.
func (tl *Timeline) Validate() error {
	if tl == nil {
		return errors.New("timeline: nil")
	}
	if err := tl.validateEvents(); err != nil {
		return err
	}
	if err := tl.validateTracks(); err != nil {
		return err
	}
	prev := int32(-1)
	for k, c := range tl.Collectives {
		if c.Event <= prev || int(c.Event) >= len(tl.Events) || !tl.Events[c.Event].Has(FlagComm) {
			return fmt.Errorf("timeline: collective %d: bad event index %d", k, c.Event)
		}
		if c.Bytes < 0 || c.GroupSize < 0 {
			return fmt.Errorf("timeline: collective %d: negative size", k)
		}
		prev = c.Event
	}
	return nil
}

// validateTracks checks the tracks' kinds and event indexes, the indexes
// of a large timeline in parts at once; it returns the violation one pass
// over the tracks in order would find first.
func (tl *Timeline) validateTracks() error {
	bad := len(tl.Tracks) // the first track of a bad kind
	for ti := range tl.Tracks {
		if k := tl.Tracks[ti].Kind; k != TrackGPU && k != TrackHost {
			bad = ti
			break
		}
	}
	// The indexes of tracks [0, bad) in a row: track ti's are at
	// [starts[ti], starts[ti+1]).
	starts := make([]int, bad+1)
	for ti := range bad {
		starts[ti+1] = starts[ti] + len(tl.Tracks[ti].Events)
	}
	n := starts[bad]
	parts := numParts(n)
	errs := make([]error, parts)
	inParts(n, parts, func(p, lo, hi int) { errs[p] = tl.validateIndexes(starts, lo, hi) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if bad < len(tl.Tracks) {
		return fmt.Errorf("timeline: track %d: kind %d", bad, tl.Tracks[bad].Kind)
	}
	if n != len(tl.Events) {
		return fmt.Errorf("timeline: tracks index %d of %d events", n, len(tl.Events))
	}
	return nil
}

// validateIndexes checks the track indexes at positions [lo, hi) of the
// row that starts describes (see validateTracks).
func (tl *Timeline) validateIndexes(starts []int, lo, hi int) error {
	ti := sort.SearchInts(starts, lo+1) - 1 // the track holding position lo
	for pos := lo; pos < hi; {
		for starts[ti+1] <= pos {
			ti++ // an empty track
		}
		t := &tl.Tracks[ti]
		j, end := pos-starts[ti], min(hi, starts[ti+1])-starts[ti]
		prev := int32(-1)
		if j > 0 {
			prev = t.Events[j-1]
		}
		for ; j < end; j++ {
			i := t.Events[j]
			if i <= prev || int(i) >= len(tl.Events) || tl.Events[i].Track != TrackID(ti) {
				return fmt.Errorf("timeline: track %d: bad event index %d", ti, i)
			}
			prev = i
		}
		pos = starts[ti] + end
	}
	return nil
}

// validateEvents checks each event, in parts on several goroutines for a
// large timeline; the violation of the lowest event is returned, as one
// pass in order would find first.
func (tl *Timeline) validateEvents() error {
	n := len(tl.Events)
	parts := numParts(n)
	errs := make([]error, parts)
	inParts(n, parts, func(p, lo, hi int) { errs[p] = tl.validateRange(lo, hi) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// validateRange checks events [lo, hi) and returns the first violation.
func (tl *Timeline) validateRange(lo, hi int) error {
	for i := lo; i < hi; i++ {
		e := &tl.Events[i]
		if err := tl.validateEvent(e); err != nil {
			return fmt.Errorf("timeline: event %d (%s %q): %w", i, e.Kind, tl.Name(e.Name), err)
		}
		if i > 0 && compareEventPtrs(&tl.Events[i-1], e) > 0 {
			return fmt.Errorf("timeline: event %d: out of order", i)
		}
		if e.Link >= 0 {
			if int(e.Link) >= len(tl.Events) || e.Link == int32(i) {
				return fmt.Errorf("timeline: event %d: link %d out of range", i, e.Link)
			}
			o := &tl.Events[e.Link]
			if o.Corr != e.Corr || o.Proc != e.Proc || (e.Kind == KindAPI) == (o.Kind == KindAPI) {
				return fmt.Errorf("timeline: event %d: link %d does not match", i, e.Link)
			}
		} else if e.Link != -1 {
			return fmt.Errorf("timeline: event %d: link %d", i, e.Link)
		}
	}
	return nil
}

func (tl *Timeline) validateEvent(e *Event) error {
	switch {
	case e.Kind == KindInvalid || e.Kind >= numKinds:
		return errors.New("invalid kind")
	case e.Start < -MaxTime || e.Start > MaxTime || e.End < -MaxTime || e.End > MaxTime:
		return fmt.Errorf("time out of range [%d, %d]", e.Start, e.End)
	case e.End < e.Start:
		return fmt.Errorf("ends before it starts [%d, %d]", e.Start, e.End)
	case int(e.Name) >= len(tl.names):
		return fmt.Errorf("name %d out of range", e.Name)
	case int(e.Track) >= len(tl.Tracks):
		return fmt.Errorf("track %d out of range", e.Track)
	case e.Bytes < 0:
		return fmt.Errorf("negative size %d", e.Bytes)
	case e.Copy >= numCopyKinds || e.Src >= numMemKinds || e.Dst >= numMemKinds:
		return errors.New("copy or memory kind out of range")
	case e.API >= numAPIClasses || e.Range >= numRangeKinds:
		return errors.New("api or range class out of range")
	}
	onGPU := tl.Tracks[e.Track].Kind == TrackGPU
	if onGPU != e.Kind.OnGPU() {
		return fmt.Errorf("on the wrong kind of track (%s)", tl.Tracks[e.Track].Label())
	}
	if e.Kind == KindMarker && e.End != e.Start {
		return errors.New("marker with a duration")
	}
	if e.Has(FlagComm) && e.Kind != KindKernel {
		return errors.New("communication flag on a non-kernel")
	}
	return nil
}
