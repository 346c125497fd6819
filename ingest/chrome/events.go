package chrome

import (
	"errors"
	"strings"

	"github.com/traceaudit/traceaudit/timeline"
)

// A worker turns the events of one chunk into timeline events. Names and
// tracks are numbered per chunk, in order of first appearance in the chunk,
// so that merging chunks in input order gives the same timeline whatever
// worker parsed which chunk.

// elemState is where the scan stands between elements of the events
// array.
type elemState uint8

const (
	stElem  elemState = iota // expecting an element (after '[' or ',')
	stComma                  // expecting ',' or ']' (after an element)
)

// chunkResult is what a worker made of a chunk.
type chunkResult struct {
	// events hold chunk-local Name and Track numbers (indexes into names
	// and tracks) and times relative to baseTimeNanoseconds.
	events  []timeline.Event
	names   []string
	tracks  []trackKey
	threads []threadName    // thread_name metadata, in input order
	sizes   []corrSize      // copy sizes of HIP calls, by correlation
	colls   []corrColl      // collective metadata of communication kernels, by correlation
	shapes  []opShape       // operators' input shapes (Options.Shapes)
	unknown map[string]*int // events skipped for their category
	seen    seen

	nElems    int       // complete elements of the events array
	end       elemState // state at the end of the text, unless dirty
	dirty     bool      // the text ends inside an element
	lastGood  int       // index just after the last complete element (or the start)
	goodState elemState // state at lastGood
	arrayEnd  int       // index just after the array's ']', or -1
	nul       int       // index of a NUL byte that ends the data, or -1
	err       *evError
}

// evError is a problem in one element of the events array. The element's
// index in the whole array is known only when the chunk is merged.
type evError struct {
	elem  int    // index of the element in the chunk
	field string // JSON path below the element ("ts", "args.bytes"), or ""
	msg   string
	off   int64 // input offset of a syntax error, or -1
	array bool  // a problem between elements, reported on the array
}

func (e *evError) Error() string { return e.msg }

// seen records what a chunk held, for Observed and Source.Version.
type seen struct {
	hostOps, annotations, dataLoader, api, gpu, memKinds bool
	oldCategories, newCategories, fractions              bool
}

func (s *seen) merge(o seen) {
	s.hostOps = s.hostOps || o.hostOps
	s.annotations = s.annotations || o.annotations
	s.dataLoader = s.dataLoader || o.dataLoader
	s.api = s.api || o.api
	s.gpu = s.gpu || o.gpu
	s.memKinds = s.memKinds || o.memKinds
	s.oldCategories = s.oldCategories || o.oldCategories
	s.newCategories = s.newCategories || o.newCategories
	s.fractions = s.fractions || o.fractions
}

// trackKey identifies a GPU stream (device, stream) or host thread (pid, tid).
type trackKey struct {
	gpu  bool
	a, b int64
}

// threadName is a thread_name (or, with process set, a process_name)
// metadata event.
type threadName struct {
	pid, tid int64
	name     string
	process  bool
}

type corrSize struct{ corr, size int64 }

// opShape is an operator's "Input Dims", with the operator's chunk-local
// times, track and name so that build can find it among sorted events.
type opShape struct {
	start, end  int64
	track, name int32
	shape       string
}

// corrColl is what Kineto recorded about a communication kernel's
// collective, keyed by the kernel's correlation id.
type corrColl struct {
	corr int64
	c    timeline.Collective
}

// nameInfo caches what a name says about its events.
type nameInfo struct {
	done     bool
	rng      timeline.RangeKind // ClassifyRange(name, RangeOther)
	copyKind timeline.CopyKind  // for memcpy names
	src, dst timeline.MemKind   // for memcpy and memset names
	hipCopy  bool               // a HIP copy or memset call, whose "size" argument sizes the copy
	comm     bool               // a communication kernel's name (timeline.IsCommKernel)
}

// worker holds one goroutine's tables, reused across chunks.
type worker struct {
	nameIdx   map[string]int32
	names     []string
	info      []nameInfo
	nameGen   []uint32
	nameLocal []int32

	trackIdx   map[trackKey]int32
	tracks     []trackKey
	trackGen   []uint32
	trackLocal []int32

	arena   *arena            // where the sorted events go (nil: the heap)
	shapes  bool              // read operators' input shapes (Options.Shapes)
	shapeOf map[string]string // one copy of each shape text this worker read
	scratch []timeline.Event  // events of the chunk being parsed
	sortBuf []timeline.Event  // scratch of sortedCopy

	gen  uint32
	f    fields
	v    value  // the value of the member being lexed
	b    []byte // the text of the chunk being parsed
	scan valueScan
	res  *chunkResult
}

func newWorker() *worker {
	return &worker{nameIdx: map[string]int32{}, trackIdx: map[trackKey]int32{}}
}

// run parses the text of chunk c, data[lo:hi], from state c.start, into
// c.res: every complete element, and how the text ends. The events are
// handed over sorted for the merge (see build), ties in input order.
func (w *worker) run(c *chunk) {
	w.parse(c)
	r := &c.res
	w.scratch = r.events[:0] // kept for the next chunk
	sorted := w.arena.alloc(len(r.events))
	w.sortBuf = sortedCopy(sorted, r.events, w.sortBuf)
	r.events = sorted
}

// parse is run without the sort: c.res.events are in input order, in the
// worker's scratch.
func (w *worker) parse(c *chunk) {
	w.gen++
	r := &c.res
	*r = chunkResult{arrayEnd: -1, nul: -1}
	w.res = r
	defer func() { w.res, w.b = nil, nil }()
	r.events = w.scratch[:0]
	b := c.data[:c.hi]
	w.b = b
	i, state := c.lo, c.start
	r.lastGood, r.goodState = i, state
	for {
		i = skipSpace(b, i)
		if i == len(b) {
			r.end = state
			return
		}
		switch ch := b[i]; {
		case ch == '{' && state == stElem:
			end, err := w.event(b, i, r.nElems)
			if err != nil {
				w.fail(c, err, i)
				return
			}
			r.nElems++
			i, state = end, stComma
			r.lastGood, r.goodState = i, stComma
		case ch == ',' && state == stComma:
			i, state = i+1, stElem
		case ch == ']': // a trailing comma before ']' is tolerated
			r.arrayEnd = i + 1
			return
		case ch == 0:
			r.nul = i
			return
		case state == stComma:
			r.err = &evError{elem: r.nElems - 1, msg: describe(ch), off: c.base + int64(i), array: true}
			return
		default:
			r.err = &evError{elem: r.nElems, msg: "want an object, got " + describe(ch), off: -1}
			return
		}
	}
}

// fail records why the element at b[at] could not be read: the text ends
// inside it, a NUL byte ends the data, or an error.
func (w *worker) fail(c *chunk, err error, at int) {
	r := w.res
	var se *syntaxError
	var ee *evError
	switch {
	case err == errMore:
		r.dirty = true
	case errors.As(err, &se) && c.data[se.at] == 0:
		r.nul = se.at
	case se != nil:
		r.err = &evError{elem: r.nElems, msg: se.msg, off: c.base + int64(se.at)}
	case errors.As(err, &ee):
		r.err = ee
	default:
		r.err = &evError{elem: r.nElems, msg: err.Error(), off: c.base + int64(at)}
	}
}

// name returns the chunk-local number of name s, interning it in the
// worker's table on first sight.
func (w *worker) name(s string) (local int32, gid int32) {
	gid, ok := w.nameIdx[s]
	if !ok {
		gid = int32(len(w.names))
		s = strings.Clone(s) // s points into the input buffer, which is reused
		w.names = append(w.names, s)
		w.info = append(w.info, nameInfo{})
		w.nameGen = append(w.nameGen, 0)
		w.nameLocal = append(w.nameLocal, 0)
		w.nameIdx[s] = gid
	}
	if w.nameGen[gid] != w.gen {
		w.nameGen[gid] = w.gen
		w.nameLocal[gid] = int32(len(w.res.names))
		w.res.names = append(w.res.names, w.names[gid])
	}
	return w.nameLocal[gid], gid
}

// track returns the chunk-local number of a track.
func (w *worker) track(k trackKey) int32 {
	gid, ok := w.trackIdx[k]
	if !ok {
		gid = int32(len(w.tracks))
		w.tracks = append(w.tracks, k)
		w.trackGen = append(w.trackGen, 0)
		w.trackLocal = append(w.trackLocal, 0)
		w.trackIdx[k] = gid
	}
	if w.trackGen[gid] != w.gen {
		w.trackGen[gid] = w.gen
		w.trackLocal[gid] = int32(len(w.res.tracks))
		w.res.tracks = append(w.res.tracks, k)
	}
	return w.trackLocal[gid]
}
