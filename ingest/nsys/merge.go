package nsys

import (
	"math"

	"github.com/traceaudit/traceaudit/ingest/internal/merge"
	"github.com/traceaudit/traceaudit/internal/hugepage"
	"github.com/traceaudit/traceaudit/timeline"
)

// merger adds the events of all chunks to the Builder in time order (each
// chunk is already sorted), resolving the workers' local names and tracks.
// Names are interned and tracks declared in order of first use in time, so
// the result does not depend on how the tasks were spread over workers.
// Ranges without a recorded end get the capture's last timestamp.
type merger struct {
	b    *timeline.Builder
	strs *stringTable
	// per worker: local name -> NameID (-1: not yet), its range class, and
	// local track -> TrackID (-1: not yet).
	names  [][]int64
	ranges [][]timeline.RangeKind
	tracks [][]int64
	// missing counts references to ids absent from StringIds.
	missing    int
	dataLoader bool
}

func newMerger(b *timeline.Builder, strs *stringTable, workers []*worker) *merger {
	m := &merger{b: b, strs: strs, names: make([][]int64, len(workers)),
		ranges: make([][]timeline.RangeKind, len(workers)), tracks: make([][]int64, len(workers))}
	for _, w := range workers {
		m.names[w.id] = fill(len(w.names.list))
		m.ranges[w.id] = make([]timeline.RangeKind, len(w.names.list))
		m.tracks[w.id] = fill(len(w.tracks.list))
	}
	return m
}

func fill(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = -1
	}
	return s
}

// run merges the chunks (each sorted) in time order, ties in task order.
func (m *merger) run(chunks []*chunk) {
	last := int64(math.MinInt64)
	var list []*chunk
	var evs [][]timeline.Event
	var rel []*hugepage.Releaser
	for _, c := range chunks {
		if c == nil || len(c.events) == 0 {
			continue
		}
		last = max(last, c.maxTS)
		list = append(list, c)
		evs = append(evs, c.events)
		rel = append(rel, hugepage.NewReleaser(c.events))
	}
	// The chunks' memory goes back to the system as they are consumed, so
	// that the timeline's events reuse it instead of new pages: the events
	// are not held twice.
	used := make([]int, len(list))
	merge.Runs(evs, func(k int, e timeline.Event) {
		m.add(list[k].w, e, last)
		if used[k]++; used[k] == len(evs[k]) {
			rel[k].Release(cap(evs[k])) // its unused capacity too
		} else if used[k]%releaseEvery == 0 {
			rel[k].Release(used[k])
		}
	})
	for _, c := range list {
		c.events = nil
	}
}

// releaseEvery is how often (in events of one chunk) the merge releases
// the chunk's consumed memory.
const releaseEvery = 1 << 13

// add resolves e's local name and track and adds it to the builder.
func (m *merger) add(w *worker, e timeline.Event, last int64) {
	names, ranges := m.names[w.id], m.ranges[w.id]
	ln := e.Name
	if names[ln] < 0 {
		ref := w.names.list[ln]
		s := ref.text
		if ref.isSID {
			var ok bool
			if s, ok = m.strs.get(ref.sid); !ok {
				m.missing++
			}
		}
		names[ln] = int64(m.b.Intern(s))
		ranges[ln] = timeline.ClassifyRange(s, timeline.RangeNVTX)
	}
	e.Name = timeline.NameID(names[ln])
	if e.Kind == timeline.KindRange {
		e.Range = ranges[ln]
		if e.Range == timeline.RangeDataLoader {
			m.dataLoader = true
		}
	}
	tracks := m.tracks[w.id]
	lt := e.Track
	if tracks[lt] < 0 {
		k := w.tracks.list[lt]
		if k.gpu {
			tracks[lt] = int64(m.b.GPUTrack(k.a, k.b))
		} else {
			tracks[lt] = int64(m.b.HostTrack(k.a, k.b))
		}
	}
	e.Track = timeline.TrackID(tracks[lt])
	if e.Flags&timeline.FlagOpenEnd != 0 {
		e.End = max(last, e.Start)
	}
	m.b.Add(e)
}

// Worker-local tracks (see localNames for why workers keep their own).

// trackKey is a GPU stream (device, stream) or a host thread (pid, tid).
type trackKey struct {
	gpu  bool
	a, b int64
}

// localTracks numbers the tracks one worker has seen.
type localTracks struct {
	idx     map[trackKey]uint32
	list    []trackKey
	last    trackKey
	lastIdx uint32
	hasLast bool
}

func newLocalTracks() localTracks { return localTracks{idx: map[trackKey]uint32{}} }

// get returns the local index of track k. Consecutive rows are usually on
// the same track, so the last one is remembered.
func (t *localTracks) get(k trackKey) timeline.TrackID {
	if t.hasLast && k == t.last {
		return timeline.TrackID(t.lastIdx)
	}
	i, ok := t.idx[k]
	if !ok {
		i = uint32(len(t.list))
		t.list = append(t.list, k)
		t.idx[k] = i
	}
	t.last, t.lastIdx, t.hasLast = k, i, true
	return timeline.TrackID(i)
}

func (t *localTracks) gpu(device, stream int64) timeline.TrackID {
	return t.get(trackKey{gpu: true, a: device, b: stream})
}

// host returns the track of the thread packed in globalTid g.
func (t *localTracks) host(g int64) timeline.TrackID {
	pid, tid := splitGlobalID(g)
	return t.get(trackKey{a: pid, b: tid})
}
