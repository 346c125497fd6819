package nsys

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"

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

// run merges the chunks (each sorted) in time order, ties in task order,
// into the builder. The order of the result is that of sorting all events
// by (timeline.Before, chunk, index in the chunk), so cutting every chunk
// at the same start time cuts the result there too: a large merge runs in
// parts on several goroutines, each writing its own span of the events.
// Names and tracks are resolved beforehand in the order of their first use
// (resolve), as one merge in order would.
func (m *merger) run(chunks []*chunk) {
	last := int64(math.MinInt64)
	var list []*chunk
	var evs [][]timeline.Event
	n := 0
	for _, c := range chunks {
		if c == nil || len(c.events) == 0 {
			continue
		}
		last = max(last, c.maxTS)
		list = append(list, c)
		evs = append(evs, c.events)
		n += len(c.events)
	}
	m.resolve(list)
	out := m.b.Extend(n)
	parts := 1
	if n >= minParallelMerge {
		parts = min(max(runtime.GOMAXPROCS(0), 1), maxMergeParts)
	}
	if mergeParts > 0 {
		parts = mergeParts
	}
	cuts := cutRuns(evs, parts)
	dataLoader := make([]bool, parts)
	var wg sync.WaitGroup
	off := 0
	for p := range parts {
		lo, hi := cuts[p], cuts[p+1]
		size := 0
		for k := range evs {
			size += hi[k] - lo[k]
		}
		dst := out[off : off+size]
		off += size
		wg.Go(func() { dataLoader[p] = m.mergePart(list, evs, lo, hi, dst, last) })
	}
	wg.Wait()
	for i, c := range list {
		hugepage.NewReleaser(evs[i]).Release(cap(evs[i])) // the pages the cuts shared
		c.events = nil
	}
	m.dataLoader = slices.Contains(dataLoader, true)
}

// minParallelMerge is the number of events from which the merge runs in
// parts, maxMergeParts the most parts.
const (
	minParallelMerge = 1 << 16
	maxMergeParts    = 8
)

// mergeParts, when positive, is the number of parts of every merge (tests
// compare merges in parts with one in order).
var mergeParts = 0

// cutRuns cuts sorted runs into parts of about equal size at start times:
// cuts[p][k] is where part p begins in run k (cuts[parts] is each run's
// length). Each cut time t takes the events starting before t.
func cutRuns(runs [][]timeline.Event, parts int) [][]int {
	cuts := make([][]int, parts+1)
	n := 0
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range runs {
		n += len(r)
		lo = min(lo, r[0].Start)
		hi = max(hi, r[len(r)-1].Start)
	}
	before := func(t int64, at []int) int { // events starting before t
		c := 0
		for k, r := range runs {
			i := sort.Search(len(r), func(i int) bool { return r[i].Start >= t })
			if at != nil {
				at[k] = i
			}
			c += i
		}
		return c
	}
	cuts[0] = make([]int, len(runs))
	for p := 1; p < parts; p++ {
		// The smallest t in [lo, hi] with at least n*p/parts events
		// starting before it (hi if none).
		want := n * p / parts
		a, b := lo, hi
		for a < b {
			mid := a + int64((uint64(b)-uint64(a))/2)
			if before(mid, nil) >= want {
				b = mid
			} else {
				a = mid + 1
			}
		}
		cuts[p] = make([]int, len(runs))
		before(a, cuts[p])
	}
	cuts[parts] = make([]int, len(runs))
	for k, r := range runs {
		cuts[parts][k] = len(r)
	}
	return cuts
}

// mergePart merges events [lo[k], hi[k]) of each run k into dst, which
// holds exactly that many, giving the runs' memory back as it goes. It
// reports whether a data-loader range was among them.
func (m *merger) mergePart(list []*chunk, evs [][]timeline.Event, lo, hi []int, dst []timeline.Event, last int64) bool {
	runs := make([][]timeline.Event, len(evs))
	rel := make([]*hugepage.Releaser, len(evs))
	for k := range evs {
		runs[k] = evs[k][lo[k]:hi[k]]
		rel[k] = hugepage.NewReleaser(runs[k])
	}
	// The chunks' memory goes back to the system as it is consumed, so
	// that the timeline's events reuse it instead of new pages: the events
	// are not held twice.
	used := make([]int, len(runs))
	i := 0
	dataLoader := false
	merge.Runs(runs, func(k int, e timeline.Event) {
		dst[i] = m.resolved(list[k].w, e, last, &dataLoader)
		i++
		if used[k]++; used[k]%releaseEvery == 0 {
			rel[k].Release(used[k])
		}
	})
	return dataLoader
}

// releaseEvery is how often (in events of one chunk) the merge releases
// the chunk's consumed memory.
const releaseEvery = 1 << 13

// resolve interns the names and declares the tracks of the chunks' events
// in the order of their first use in the merge's order, from each chunk's
// first uses (chunk.sort): the same order as resolving each event as the
// merge meets it.
func (m *merger) resolve(list []*chunk) {
	type use struct {
		k     int // chunk, in list
		at    int32
		local uint32
	}
	// inOrder gathers every chunk's first uses of one kind in the merged
	// events' order.
	inOrder := func(firsts func(*chunk) []firstUse) []use {
		var uses []use
		for k, c := range list {
			for _, f := range firsts(c) {
				uses = append(uses, use{k, f.at, f.local})
			}
		}
		slices.SortFunc(uses, func(a, b use) int {
			if c := timeline.Before(&list[a.k].events[a.at], &list[b.k].events[b.at]); c != 0 {
				return c
			}
			if a.k != b.k {
				return cmp.Compare(a.k, b.k)
			}
			return cmp.Compare(a.at, b.at)
		})
		return uses
	}
	for _, u := range inOrder(func(c *chunk) []firstUse { return c.firstNames }) {
		w := list[u.k].w
		if m.names[w.id][u.local] >= 0 {
			continue
		}
		ref := w.names.list[u.local]
		s := ref.text
		if ref.isSID {
			var ok bool
			if s, ok = m.strs.get(ref.sid); !ok {
				m.missing++
			}
		}
		m.names[w.id][u.local] = int64(m.b.Intern(s))
		m.ranges[w.id][u.local] = timeline.ClassifyRange(s, timeline.RangeNVTX)
	}
	for _, u := range inOrder(func(c *chunk) []firstUse { return c.firstTracks }) {
		w := list[u.k].w
		if m.tracks[w.id][u.local] >= 0 {
			continue
		}
		if t := w.tracks.list[u.local]; t.gpu {
			m.tracks[w.id][u.local] = int64(m.b.GPUTrack(t.a, t.b))
		} else {
			m.tracks[w.id][u.local] = int64(m.b.HostTrack(t.a, t.b))
		}
	}
}

// resolved returns e with its name and track resolved (see resolve) and an
// open end set to the capture's last timestamp; it sets *dataLoader for a
// data-loader range.
func (m *merger) resolved(w *worker, e timeline.Event, last int64, dataLoader *bool) timeline.Event {
	ln := e.Name
	e.Name = timeline.NameID(m.names[w.id][ln])
	if e.Kind == timeline.KindRange {
		e.Range = m.ranges[w.id][ln]
		if e.Range == timeline.RangeDataLoader {
			*dataLoader = true
		}
	}
	e.Track = timeline.TrackID(m.tracks[w.id][e.Track])
	if e.Flags&timeline.FlagOpenEnd != 0 {
		e.End = max(last, e.Start)
	}
	return e
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
