package timeline

import (
	"cmp"
	"slices"
	"strings"
)

// Builder assembles a Timeline. It is the only mutable type in the package:
// ingesters intern names, declare tracks and add events in any order, then
// call Build once.
type Builder struct {
	src      Source
	names    []string
	nameIdx  map[string]NameID
	tracks   []Track
	gpuIdx   map[[2]int64]TrackID
	hostIdx  map[[2]int64]TrackID
	events   []Event
	devices  []Device
	colls    []pendingColl
	shapes   []pendingShape
	Observed Observed
	// Unread is copied to Timeline.Unread.
	Unread map[string]int
	// Dist is what the input says about the job it belongs to.
	Dist Distributed
	// MakeInt32s, when set, makes the large int32 slices Build needs (the
	// tracks' event indexes, the correlation table), of length n: an
	// ingester passes an allocator of memory prepared for large data (see
	// internal/hugepage), as UseBuffer does for the events.
	MakeInt32s func(n int) []int32
	// FreeInt32s, when set, receives the slices of MakeInt32s that Build
	// no longer needs (the correlation table), so that the ingester can
	// give their memory back; Build never touches them afterwards.
	FreeInt32s func([]int32)
}

// NewBuilder returns an empty builder for a timeline read from src.
func NewBuilder(src Source) *Builder {
	return &Builder{
		src:     src,
		names:   []string{""},
		nameIdx: map[string]NameID{"": 0},
		gpuIdx:  map[[2]int64]TrackID{},
		hostIdx: map[[2]int64]TrackID{},
	}
}

// Intern returns the id of name, adding it on first use.
func (b *Builder) Intern(name string) NameID {
	if id, ok := b.nameIdx[name]; ok {
		return id
	}
	id := NameID(len(b.names))
	name = strings.Clone(name)
	b.names = append(b.names, name)
	b.nameIdx[name] = id
	return id
}

// GPUTrack returns the track of GPU stream (device, stream), creating it.
func (b *Builder) GPUTrack(device, stream int64) TrackID {
	k := [2]int64{device, stream}
	if id, ok := b.gpuIdx[k]; ok {
		return id
	}
	id := TrackID(len(b.tracks))
	b.tracks = append(b.tracks, Track{Kind: TrackGPU, Device: device, Stream: stream})
	b.gpuIdx[k] = id
	return id
}

// HostTrack returns the track of host thread (pid, tid), creating it.
func (b *Builder) HostTrack(pid, tid int64) TrackID {
	k := [2]int64{pid, tid}
	if id, ok := b.hostIdx[k]; ok {
		return id
	}
	id := TrackID(len(b.tracks))
	b.tracks = append(b.tracks, Track{Kind: TrackHost, PID: pid, TID: tid})
	b.hostIdx[k] = id
	return id
}

// SetThreadName names host thread (pid, tid), creating its track.
func (b *Builder) SetThreadName(pid, tid int64, name string) {
	b.tracks[b.HostTrack(pid, tid)].Name = strings.Clone(name)
}

// AddDevice records a GPU's description. A later call for the same ID
// replaces the earlier one.
func (b *Builder) AddDevice(d Device) {
	for i := range b.devices {
		if b.devices[i].ID == d.ID {
			b.devices[i] = d
			return
		}
	}
	b.devices = append(b.devices, d)
}

// Add appends an event. Link is ignored (Build sets it); for KindAPI events
// with API == APIOther the class is derived from the name at Build.
func (b *Builder) Add(e Event) { b.events = append(b.events, e) }

// Extend appends n events and returns them for the caller to fill in
// place before Build, from several goroutines at once if it likes: an
// ingester that merges its inputs in parallel writes each part where it
// belongs. Their contents are unspecified until filled; as with Add, Link
// is ignored.
func (b *Builder) Extend(n int) []Event {
	l := len(b.events)
	b.events = slices.Grow(b.events, n)[:l+n]
	return b.events[l:]
}

// Grow makes room for n more events.
func (b *Builder) Grow(n int) { b.events = slices.Grow(b.events, n) }

// UseBuffer makes buf's memory hold the events: those added so far are
// copied to it and later ones appended, until its capacity is used up.
// buf's length is ignored. Ingesters use it to provide memory prepared
// for a large timeline (see internal/hugepage); Grow does the same with
// ordinary memory.
func (b *Builder) UseBuffer(buf []Event) { b.events = append(buf[:0], b.events...) }

// Build sorts the events, classifies API calls, indexes tracks, links API
// calls to GPU work by (Proc, Corr), drops tracks without events and
// validates the result. The builder must not be used afterwards.
//
// Cost: a few linear passes over the events when they arrive sorted and
// the correlation ids are dense (as in every real trace), plus a sort
// otherwise.
func (b *Builder) Build() (*Timeline, error) {
	// One pass, in parts at once: classify API calls, flag communication
	// kernels, count events per declared track.
	np := numParts(len(b.events))
	counts := make([][]int, np)
	bad := make([]bool, np)
	inParts(len(b.events), np, func(p, lo, hi int) { counts[p], bad[p] = b.scan(lo, hi) })
	invalid := slices.Contains(bad, true)
	total := make([]int, len(b.tracks))
	for _, c := range counts {
		for t, k := range c {
			total[t] += k
		}
	}

	// Drop tracks that hold no events, keeping declaration order.
	remap := make([]TrackID, len(b.tracks))
	var tracks []Track
	identity := !invalid
	for i, t := range b.tracks {
		if total[i] > 0 {
			remap[i] = TrackID(len(tracks))
			total[len(tracks)] = total[i]
			for _, c := range counts {
				c[len(tracks)] = c[i]
			}
			tracks = append(tracks, t)
		} else {
			identity = false
		}
	}
	if !identity {
		inParts(len(b.events), np, func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				if t := b.events[i].Track; int(t) < len(remap) {
					b.events[i].Track = remap[t]
				} else {
					b.events[i].Track = TrackID(len(tracks)) // invalid: Validate reports it
				}
			}
		})
	}
	for i := range b.colls {
		if t := b.colls[i].track; int(t) < len(remap) {
			b.colls[i].track = remap[t]
		}
	}
	for i := range b.shapes {
		if t := b.shapes[i].track; int(t) < len(remap) {
			b.shapes[i].track = remap[t]
		}
	}

	// Ingesters usually deliver events in order already: check first, in
	// O(n), and sort only when needed.
	if !sortedInParts(b.events, np) {
		slices.SortStableFunc(b.events, compareEvents)
		counts = [][]int{total} // the parts' counts no longer hold
	}

	// Track indexes: one allocation carved per track.
	n := 0
	for i := range tracks {
		n += total[i]
	}
	idx := b.int32s(n)
	off := 0
	for i := range tracks {
		tracks[i].Events = idx[off : off+total[i] : off+total[i]]
		off += total[i]
	}
	indexTracks(b.events, tracks, counts)
	linkCorrelations(b.events, b.int32s, b.FreeInt32s)
	markGraphWorkInParts(b.events, b.names, np)

	tl := &Timeline{
		Source:   b.src,
		Events:   b.events,
		Tracks:   tracks,
		Devices:  b.devices,
		Observed: b.Observed,
		Unread:   b.Unread,
		Dist:     b.Dist,
		names:    b.names,
	}
	if len(b.colls) > 0 {
		tl.Collectives = placeCollectives(tl.Events, b.colls)
	}
	if len(b.shapes) > 0 {
		tl.Shapes = placeShapes(tl.Events, b.shapes)
	}
	slices.SortFunc(tl.Devices, func(x, y Device) int { return cmp.Compare(x.ID, y.ID) })
	*b = Builder{}
	if err := tl.Validate(); err != nil {
		return nil, err
	}
	return tl, nil
}

// int32s returns a slice of n int32 for Build's indexes, from MakeInt32s
// when the ingester set it.
func (b *Builder) int32s(n int) []int32 {
	if b.MakeInt32s != nil {
		return b.MakeInt32s(n)[:n]
	}
	return make([]int32, n)
}

// markGraphWork flags the GPU work that a graph launch (cudaGraphLaunch,
// hipGraphLaunch) ran as graph work: in Chrome traces each kernel of a
// replayed graph carries the graph launch's correlation id.
// It looks at the events of part, a subslice of ev.
func markGraphWork(part, ev []Event, names []string) {
	graph := make([]int8, len(names)) // per name: 0 unknown, 1 graph launch, -1 not
	for i := range part {
		e := &part[i]
		if e.Link < 0 || !e.Kind.IsGPUWork() {
			continue
		}
		api := ev[e.Link].Name
		if int(api) >= len(names) {
			continue
		}
		if graph[api] == 0 {
			graph[api] = -1
			if IsGraphLaunch(names[api]) {
				graph[api] = 1
			}
		}
		if graph[api] > 0 {
			e.Flags |= FlagGraph
		}
	}
}

// Before orders events by start, then the longer first (so an enclosing
// range precedes what it encloses): the first two keys of a timeline's
// order, for ingesters that pre-sort.
func Before(x, y *Event) int {
	if c := cmp.Compare(x.Start, y.Start); c != 0 {
		return c
	}
	return cmp.Compare(y.End, x.End)
}

func compareEvents(x, y Event) int { return compareEventPtrs(&x, &y) }

// compareEventPtrs is the timeline's order: Before, then Track, then Kind.
func compareEventPtrs(x, y *Event) int {
	if c := Before(x, y); c != 0 {
		return c
	}
	if c := cmp.Compare(x.Track, y.Track); c != 0 {
		return c
	}
	return cmp.Compare(x.Kind, y.Kind)
}

// isSorted reports whether ev is in the timeline's order (without copying
// the events, as slices.IsSortedFunc's comparison by value would).
func isSorted(ev []Event) bool {
	for i := 1; i < len(ev); i++ {
		if compareEventPtrs(&ev[i-1], &ev[i]) > 0 {
			return false
		}
	}
	return true
}

// linkCorrelations sets Link on API calls and the GPU work they launched,
// matching on (Proc, Corr). Cost: linear, with a sort of the API calls
// only when they do not come in id order, when the ids fit with the event
// index in 64 bits (linkPacked); else one sort of all correlated events
// on the pair. alloc makes the large scratch memory (nil: make); free,
// when set, receives it once it is no longer used.
func linkCorrelations(ev []Event, alloc func(int) []int32, free func([]int32)) {
	if !linkPacked(ev, alloc, free) {
		linkGeneral(ev)
	}
}

// linkGeneral is linkCorrelations for any ids.
func linkGeneral(ev []Event) {
	type ref struct {
		key uint64 // Proc<<40 | Corr, when packed
		gpu bool   // API calls sort before the GPU work they launched
		i   int32
	}
	packed := true
	n := 0
	for i := range ev {
		e := &ev[i]
		if e.Corr != 0 && (e.Kind == KindAPI || e.Kind.IsGPUWork()) {
			n++
			if e.Corr < 0 || e.Corr >= 1<<40 || e.Proc >= 1<<24 {
				packed = false
			}
		}
	}
	refs := make([]ref, 0, n)
	for i := range ev {
		e := &ev[i]
		if e.Corr != 0 && (e.Kind == KindAPI || e.Kind.IsGPUWork()) {
			refs = append(refs, ref{key: uint64(e.Proc)<<40 | uint64(e.Corr)&(1<<40-1), gpu: e.Kind != KindAPI, i: int32(i)})
		}
	}
	less := func(a, b ref) int {
		if packed {
			if c := cmp.Compare(a.key, b.key); c != 0 {
				return c
			}
		} else {
			x, y := &ev[a.i], &ev[b.i]
			if c := cmp.Compare(x.Proc, y.Proc); c != 0 {
				return c
			}
			if c := cmp.Compare(x.Corr, y.Corr); c != 0 {
				return c
			}
		}
		if a.gpu != b.gpu {
			if !a.gpu {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.i, b.i)
	}
	slices.SortFunc(refs, less)
	same := func(a, b ref) bool {
		if packed {
			return a.key == b.key
		}
		return ev[a.i].Proc == ev[b.i].Proc && ev[a.i].Corr == ev[b.i].Corr
	}
	for i := 0; i < len(refs); {
		j := i + 1
		for j < len(refs) && same(refs[i], refs[j]) {
			j++
		}
		if api := refs[i].i; ev[api].Kind == KindAPI {
			for _, r := range refs[i+1 : j] {
				if !r.gpu {
					continue // a duplicate API row: the first one wins
				}
				ev[r.i].Link = api
				if ev[api].Link < 0 {
					ev[api].Link = r.i
				}
			}
		}
		i = j
	}
}
