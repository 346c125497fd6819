package nsys

import (
	"github.com/traceaudit/traceaudit/timeline"
)

// StringIds(id, value) holds every name in an export: kernel, API and OS call
// names, registered NVTX strings, thread names, and also the captured
// environment. It is loaded once; only the strings that events, ranges and
// threads use are interned into the timeline, so the environment never is.

// sidString is one StringIds row.
type sidString struct {
	id int64
	s  string
}

// stringTable resolves StringIds ids: a slice when the ids are dense (the
// usual 0..n-1), a map when they are sparse (exports cut to a time window
// keep a few ids out of millions).
type stringTable struct {
	dense  []string
	has    []bool
	sparse map[int64]string
}

// newStringTable builds the table from the rows read.
func newStringTable(rows []sidString) *stringTable {
	t := &stringTable{}
	var hi int64 = -1
	dense := true
	for _, r := range rows {
		if r.id < 0 {
			dense = false
			break
		}
		hi = max(hi, r.id)
	}
	if dense && hi < 2*int64(len(rows))+1024 {
		t.dense = make([]string, hi+1)
		t.has = make([]bool, hi+1)
		for _, r := range rows {
			t.dense[r.id] = r.s
			t.has[r.id] = true
		}
		return t
	}
	t.sparse = make(map[int64]string, len(rows))
	for _, r := range rows {
		t.sparse[r.id] = r.s
	}
	return t
}

// get returns the string of id; ok is false when StringIds lacks it.
func (t *stringTable) get(id int64) (s string, ok bool) {
	if t.sparse != nil {
		s, ok = t.sparse[id]
		return s, ok
	}
	if id >= 0 && id < int64(len(t.dense)) && t.has[id] {
		return t.dense[id], true
	}
	return "", false
}

// stringsReader reads StringIds(id, value) into chunk.strs.
type stringsReader struct {
	t         *table
	sel       selectList
	id, value int
}

func newStringsReader(t *table) (tableReader, error) {
	s := &stringsReader{t: t, sel: selectList{t: t}}
	if err := s.sel.need("id", "value"); err != nil {
		return nil, err
	}
	s.id = s.sel.col("id")
	s.value = s.sel.col("value")
	return s, nil
}

func (s *stringsReader) table() *table           { return s.t }
func (s *stringsReader) selectList() *selectList { return &s.sel }
func (s *stringsReader) required() string        { return "id" }
func (s *stringsReader) dropNote() string        { return "" }

func (s *stringsReader) row(w *worker, c *chunk, r *row) (bool, error) {
	id, ok := r.int(s.id)
	if !ok {
		return r.err == nil, nil
	}
	b, _ := r.text(s.value)
	c.strs = append(c.strs, sidString{id: id, s: string(b)})
	return false, nil
}

// Workers read tables concurrently while the Builder is single-threaded, so
// each worker keeps its own tables of the names and tracks it has seen, and
// its events carry indexes into them in Event.Name and Event.Track. The merge
// (merge.go) resolves them into the Builder once per distinct name and track.

// nameRef is a worker-local name: a StringIds id or a literal text.
type nameRef struct {
	sid   int64
	text  string
	isSID bool
}

// synthKey identifies a name the reader makes up (memcpy, memset, sync and
// graph rows have no name column).
type synthKey struct {
	kind    uint8
	a, b, c int64
}

const (
	synthMemcpy uint8 = iota + 1
	synthMemset
	synthSync
	synthGraph
)

// synthName makes the name of k.
func synthName(k synthKey) string {
	switch k.kind {
	case synthMemcpy:
		return memcpyName(k.a, k.b, k.c)
	case synthMemset:
		return memsetName(k.a)
	case synthSync:
		return syncName(k.a)
	case synthGraph:
		return graphName(k.a)
	}
	return ""
}

// localNames numbers the names one worker has seen.
type localNames struct {
	bySID  map[int64]uint32
	byText map[string]uint32
	bySyn  map[synthKey]uint32
	list   []nameRef
}

func newLocalNames() localNames {
	return localNames{bySID: map[int64]uint32{}, byText: map[string]uint32{}, bySyn: map[synthKey]uint32{}}
}

// sid returns the local index of StringIds id.
func (l *localNames) sid(id int64) timeline.NameID {
	if i, ok := l.bySID[id]; ok {
		return timeline.NameID(i)
	}
	i := uint32(len(l.list))
	l.list = append(l.list, nameRef{sid: id, isSID: true})
	l.bySID[id] = i
	return timeline.NameID(i)
}

// text returns the local index of a literal name; b is not retained.
func (l *localNames) text(b []byte) timeline.NameID {
	if i, ok := l.byText[string(b)]; ok {
		return timeline.NameID(i)
	}
	s := string(b)
	i := uint32(len(l.list))
	l.list = append(l.list, nameRef{text: s})
	l.byText[s] = i
	return timeline.NameID(i)
}

// synth returns the local index of a made-up name.
func (l *localNames) synth(k synthKey) timeline.NameID {
	if i, ok := l.bySyn[k]; ok {
		return timeline.NameID(i)
	}
	i := uint32(len(l.list))
	l.list = append(l.list, nameRef{text: synthName(k)})
	l.bySyn[k] = i
	return timeline.NameID(i)
}
