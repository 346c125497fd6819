package nsys

import (
	"github.com/traceaudit/traceaudit/timeline"
)

// GPU activity tables: KERNEL, MEMCPY, MEMSET, SYNCHRONIZATION and
// GRAPH_TRACE share start, end, deviceId, streamId, correlationId and
// globalPid (process only: GPU rows carry no thread).

// gpuCols are the columns every GPU activity table has.
type gpuCols struct {
	t                                   *table
	sel                                 selectList
	start, end, dev, stream, corr, gpid int
}

func newGPUCols(t *table) (gpuCols, error) {
	g := gpuCols{t: t, sel: selectList{t: t}}
	if err := g.sel.need("start", "end", "deviceId", "streamId"); err != nil {
		return g, err
	}
	g.start = g.sel.col("start")
	g.end = g.sel.col("end")
	g.dev = g.sel.col("deviceId")
	g.stream = g.sel.col("streamId")
	g.corr = g.sel.col("correlationId")
	g.gpid = g.sel.col("globalPid")
	return g, nil
}

func (g *gpuCols) table() *table           { return g.t }
func (g *gpuCols) selectList() *selectList { return &g.sel }
func (g *gpuCols) required() string        { return "end, deviceId or streamId" }
func (g *gpuCols) dropNote() string        { return "" }

// event reads the shared columns into an event of kind k on its GPU track.
// skip reports a NULL in a required column.
func (g *gpuCols) event(w *worker, r *row, k timeline.Kind) (e timeline.Event, skip bool, err error) {
	start, end, ok, err := r.times(g.start, g.end)
	if err != nil {
		return e, false, err
	}
	dev, dok := r.int(g.dev)
	stream, sok := r.int(g.stream)
	if !ok || !dok || !sok {
		return e, true, nil
	}
	e = timeline.Event{Start: start, End: end, Kind: k, Track: w.tracks.gpu(dev, stream)}
	e.Corr, _ = r.int(g.corr)
	if gp, ok := r.int(g.gpid); ok {
		pid, _ := splitGlobalID(gp)
		e.Proc = uint32(pid)
	}
	return e, false, nil
}

// kernelReader reads CUPTI_ACTIVITY_KIND_KERNEL.
type kernelReader struct {
	gpuCols
	name, node, graph int
}

func newKernelReader(t *table) (tableReader, error) {
	g, err := newGPUCols(t)
	if err != nil {
		return nil, err
	}
	k := &kernelReader{gpuCols: g, name: -1}
	switch {
	case t.has("shortName") && t.has("demangledName"):
		k.name = k.sel.coalesce("shortName", "demangledName")
	case t.has("shortName"):
		k.name = k.sel.col("shortName")
	case t.has("demangledName"):
		k.name = k.sel.col("demangledName")
	}
	k.node = k.sel.col("graphNodeId")
	k.graph = k.sel.col("graphId")
	return k, nil
}

func (k *kernelReader) row(w *worker, c *chunk, r *row) (bool, error) {
	e, skip, err := k.event(w, r, timeline.KindKernel)
	if skip || err != nil {
		return skip, err
	}
	e.Name = nameOf(w, r, k.name)
	if r.nonZero(k.node) || r.nonZero(k.graph) {
		e.Flags |= timeline.FlagGraph
	}
	c.add(e)
	return false, nil
}

// nameOf returns the local name of the StringIds id in column i ("" when
// the column is absent or NULL).
func nameOf(w *worker, r *row, i int) timeline.NameID {
	if sid, ok := r.int(i); ok {
		return w.names.sid(sid)
	}
	return w.names.text(nil)
}

// memcpyReader reads CUPTI_ACTIVITY_KIND_MEMCPY.
type memcpyReader struct {
	gpuCols
	bytes, kind, src, dst int
}

func newMemcpyReader(t *table) (tableReader, error) {
	g, err := newGPUCols(t)
	if err != nil {
		return nil, err
	}
	m := &memcpyReader{gpuCols: g}
	m.bytes = m.sel.col("bytes")
	m.kind = m.sel.col("copyKind")
	m.src = m.sel.col("srcKind")
	m.dst = m.sel.col("dstKind")
	return m, nil
}

func (m *memcpyReader) row(w *worker, c *chunk, r *row) (bool, error) {
	e, skip, err := m.event(w, r, timeline.KindMemcpy)
	if skip || err != nil {
		return skip, err
	}
	if e.Bytes, err = r.bytes(m.bytes); err != nil {
		return false, err
	}
	ck := intOr(r, m.kind, 0)
	sk := intOr(r, m.src, 7)
	dk := intOr(r, m.dst, 7)
	e.Copy, e.Src, e.Dst = copyKind(ck), memKind(sk), memKind(dk)
	e.Name = w.names.synth(synthKey{synthMemcpy, ck, sk, dk})
	c.add(e)
	return false, nil
}

// intOr returns column i, or dflt when it is absent or NULL.
func intOr(r *row, i int, dflt int64) int64 {
	if v, ok := r.int(i); ok {
		return v
	}
	return dflt
}

// memsetReader reads CUPTI_ACTIVITY_KIND_MEMSET.
type memsetReader struct {
	gpuCols
	bytes, kind int
}

func newMemsetReader(t *table) (tableReader, error) {
	g, err := newGPUCols(t)
	if err != nil {
		return nil, err
	}
	m := &memsetReader{gpuCols: g}
	m.bytes = m.sel.col("bytes")
	m.kind = m.sel.col("memKind")
	return m, nil
}

func (m *memsetReader) row(w *worker, c *chunk, r *row) (bool, error) {
	e, skip, err := m.event(w, r, timeline.KindMemset)
	if skip || err != nil {
		return skip, err
	}
	if e.Bytes, err = r.bytes(m.bytes); err != nil {
		return false, err
	}
	mk := intOr(r, m.kind, 7)
	e.Dst = memKind(mk)
	e.Name = w.names.synth(synthKey{kind: synthMemset, a: mk})
	c.add(e)
	return false, nil
}

// syncReader reads CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (not GPU work).
type syncReader struct {
	gpuCols
	typ int
}

func newSyncReader(t *table) (tableReader, error) {
	g, err := newGPUCols(t)
	if err != nil {
		return nil, err
	}
	s := &syncReader{gpuCols: g}
	s.typ = s.sel.col("syncType")
	return s, nil
}

func (s *syncReader) row(w *worker, c *chunk, r *row) (bool, error) {
	e, skip, err := s.event(w, r, timeline.KindGPUSync)
	if skip || err != nil {
		return skip, err
	}
	st := intOr(r, s.typ, 0)
	e.Name = w.names.synth(synthKey{kind: synthSync, a: st})
	c.add(e)
	return false, nil
}

// graphReader reads CUPTI_ACTIVITY_KIND_GRAPH_TRACE: whole CUDA graph
// executions (--cuda-graph-trace=graph), recorded as kernels with FlagGraph and
// FlagGraphExec.
// Columns (nsys 2024.x): start, end, deviceId, contextId, greenContextId,
// streamId, correlationId, globalPid, graphId, graphExecId.
type graphReader struct {
	gpuCols
	graph int
}

func newGraphReader(t *table) (tableReader, error) {
	g, err := newGPUCols(t)
	if err != nil {
		return nil, err
	}
	gr := &graphReader{gpuCols: g}
	gr.graph = gr.sel.col("graphId")
	return gr, nil
}

func (g *graphReader) dropNote() string { return "graph executions without timestamps" }

func (g *graphReader) row(w *worker, c *chunk, r *row) (bool, error) {
	e, skip, err := g.event(w, r, timeline.KindKernel)
	if skip || err != nil {
		return skip, err
	}
	if e.Start == 0 && e.End == 0 { // CUPTI: timestamps could not be collected
		c.dropped++
		return false, nil
	}
	id := intOr(r, g.graph, 0)
	e.Name = w.names.synth(synthKey{kind: synthGraph, a: id})
	e.Flags |= timeline.FlagGraph | timeline.FlagGraphExec
	c.add(e)
	return false, nil
}
