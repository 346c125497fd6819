package nsys

import (
	"github.com/traceaudit/traceaudit/timeline"
)

// Host tables: CUPTI_ACTIVITY_KIND_RUNTIME, OSRT_API and NVTX_EVENTS carry
// globalTid (process and thread).

// hostCols are the columns every host table has.
type hostCols struct {
	t                      *table
	sel                    selectList
	start, end, class, tid int
}

func newHostCols(t *table, cols ...string) (hostCols, error) {
	h := hostCols{t: t, sel: selectList{t: t}}
	if err := h.sel.need(append([]string{"start", "globalTid"}, cols...)...); err != nil {
		return h, err
	}
	h.start = h.sel.col("start")
	h.end = h.sel.col("end")
	h.tid = h.sel.col("globalTid")
	h.class = h.sel.col("eventClass")
	return h, nil
}

func (h *hostCols) table() *table           { return h.t }
func (h *hostCols) selectList() *selectList { return &h.sel }
func (h *hostCols) required() string        { return "end or globalTid" }
func (h *hostCols) dropNote() string        { return "" }

// event reads start, end and globalTid into an event of kind k.
func (h *hostCols) event(w *worker, r *row, k timeline.Kind) (e timeline.Event, skip bool, err error) {
	start, end, ok, err := r.times(h.start, h.end)
	if err != nil {
		return e, false, err
	}
	g, gok := r.int(h.tid)
	if !ok || !gok {
		return e, true, nil
	}
	pid, _ := splitGlobalID(g)
	return timeline.Event{Start: start, End: end, Kind: k, Track: w.tracks.host(g), Proc: uint32(pid)}, false, nil
}

// runtimeReader reads CUPTI_ACTIVITY_KIND_RUNTIME: CUDA runtime calls
// (eventClass 0) and driver calls (1). Backtrace rows (67, nsys 2022)
// duplicate API rows and are dropped.
type runtimeReader struct {
	hostCols
	corr, name int
}

func newRuntimeReader(t *table) (tableReader, error) {
	h, err := newHostCols(t, "end", "eventClass")
	if err != nil {
		return nil, err
	}
	rt := &runtimeReader{hostCols: h}
	rt.corr = rt.sel.col("correlationId")
	rt.name = rt.sel.col("nameId")
	return rt, nil
}

func (rt *runtimeReader) required() string { return "end, eventClass or globalTid" }
func (rt *runtimeReader) dropNote() string { return "rows of unknown eventClass" }

func (rt *runtimeReader) row(w *worker, c *chunk, r *row) (bool, error) {
	class, ok := r.int(rt.class)
	if !ok {
		if _, _, _, err := r.times(rt.start, rt.end); err != nil {
			return false, err // a NULL start is an error even here
		}
		return r.err == nil, nil
	}
	var flags timeline.Flag
	switch class {
	case classRuntime:
	case classDriver:
		flags = timeline.FlagDriver
	case classCUDABacktrc:
		return false, nil
	default:
		c.dropped++
		return false, nil
	}
	e, skip, err := rt.event(w, r, timeline.KindAPI)
	if skip || err != nil {
		return skip, err
	}
	e.Flags = flags
	e.Corr, _ = r.int(rt.corr)
	e.Name = nameOf(w, r, rt.name)
	c.add(e)
	return false, nil
}

// osrtReader reads OSRT_API: OS runtime calls (munmap, ioctl, poll, ...)
// lasting at least the capture's --osrt-threshold (default 1 µs).
type osrtReader struct {
	hostCols
	name int
}

func newOSRTReader(t *table) (tableReader, error) {
	h, err := newHostCols(t, "end")
	if err != nil {
		return nil, err
	}
	o := &osrtReader{hostCols: h}
	o.name = o.sel.col("nameId")
	return o, nil
}

func (o *osrtReader) row(w *worker, c *chunk, r *row) (bool, error) {
	if class, ok := r.int(o.class); ok && (class == classOSRTStart || class == classOSRTFinish) {
		return false, nil // "OS runtime libraries profiling started/finished" markers
	}
	e, skip, err := o.event(w, r, timeline.KindOS)
	if skip || err != nil {
		return skip, err
	}
	e.Name = nameOf(w, r, o.name)
	c.add(e)
	return false, nil
}

// nvtxReader reads NVTX_EVENTS: push/pop (59) and start/end (60) ranges and
// marks (34). The text is `text`, or the registered string `textId` where
// `text` is NULL. Ranges never closed have a NULL end.
type nvtxReader struct {
	hostCols
	typ, text, textID int
}

func newNVTXReader(t *table) (tableReader, error) {
	h, err := newHostCols(t, "eventType")
	if err != nil {
		return nil, err
	}
	n := &nvtxReader{hostCols: h}
	n.typ = n.sel.col("eventType")
	n.text = n.sel.col("text")
	n.textID = n.sel.col("textId")
	return n, nil
}

func (n *nvtxReader) required() string { return "eventType or globalTid" }

func (n *nvtxReader) row(w *worker, c *chunk, r *row) (bool, error) {
	typ, ok := r.int(n.typ)
	if !ok {
		if _, _, _, err := r.times(n.start, n.end); err != nil {
			return false, err
		}
		return r.err == nil, nil
	}
	if typ != nvtxMark && typ != nvtxPushPop && typ != nvtxStartEnd {
		return false, nil
	}
	start, end, closed, err := r.times(n.start, n.end)
	if err != nil {
		return false, err
	}
	g, ok := r.int(n.tid)
	if !ok {
		return true, nil
	}
	pid, _ := splitGlobalID(g)
	e := timeline.Event{Start: start, End: end, Kind: timeline.KindRange, Range: timeline.RangeNVTX,
		Track: w.tracks.host(g), Proc: uint32(pid)}
	switch {
	case typ == nvtxMark:
		e.Kind, e.Range, e.End = timeline.KindMarker, timeline.RangeOther, start
	case !closed:
		e.End = openEnd
		e.Flags |= timeline.FlagOpenEnd
	}
	if b, ok := r.text(n.text); ok {
		e.Name = w.names.text(b)
	} else {
		e.Name = nameOf(w, r, n.textID)
	}
	c.add(e)
	return false, nil
}
