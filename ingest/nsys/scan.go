package nsys

import (
	"database/sql"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/traceaudit/traceaudit/ingest/nsys/internal/sqlitefile"
	"github.com/traceaudit/traceaudit/internal/hugepage"
	"github.com/traceaudit/traceaudit/timeline"
)

// Tables are read in rowid ranges of chunkRows rows ("tasks") by a pool of
// workers, each on its own read-only connection. A task's events are sorted
// by the worker and merged in time order afterwards, so the result does not
// depend on how tasks were spread over workers.
const (
	maxChunksPerTab  = 64
	progressEvery    = 1 << 16
	checkEvery       = 1 << 12
	defaultMaxWorker = 4
)

// chunkRows is the number of rowids per task (a variable for tests).
var chunkRows uint64 = 1 << 18

// noFastPath makes every task read through SQLite (tests compare the two
// paths); onTask, when set, learns how each task was read.
var (
	noFastPath bool
	onTask     func(table string, fast bool)
)

// maxWorkers caps the number of concurrent connections (0: automatic).
// Benchmarks set it to compare sequential and concurrent reading.
var maxWorkers = 0

// openEnd stands for the capture's last timestamp on events whose end the
// export did not record, until the merge knows that timestamp.
const openEnd = math.MaxInt64

// tableReader converts the rows of one table into events.
type tableReader interface {
	// table is the table read.
	table() *table
	// selectList is the columns read, after the rowid.
	selectList() *selectList
	// row converts the current row, adding events to c. It returns
	// skip=true for a row with NULL in a required column.
	row(w *worker, c *chunk, r *row) (skip bool, err error)
	// required names the columns whose NULL makes a row be skipped.
	required() string
	// dropNote describes the rows counted in chunk.dropped ("" if none).
	dropNote() string
}

// task is one rowid range of one table.
type task struct {
	idx    int
	rd     tableReader
	lo, hi int64 // inclusive rowid range; used when ranged
	ranged bool
	est    int64 // estimated rows, for progress
}

// chunk is the result of one task.
type chunk struct {
	task    *task
	w       *worker
	events  []timeline.Event
	maxTS   int64       // largest timestamp seen (start, or recorded end)
	skipped int         // rows with NULL in a required column
	dropped int         // rows dropped for a reader-specific reason (see dropNote)
	strs    []sidString // StringIds rows (stringsReader only)
	err     error
	// firstNames and firstTracks hold, for each local name and track the
	// sorted events use, the index of the first event that does (see
	// merger.resolve).
	firstNames, firstTracks []firstUse
}

// firstUse is the first event of a chunk with a local name or track.
type firstUse struct {
	local uint32 // the worker's local name or track
	at    int32  // index in the chunk's sorted events
}

// add appends e and tracks the largest timestamp.
func (c *chunk) add(e timeline.Event) {
	if e.Start > c.maxTS {
		c.maxTS = e.Start
	}
	if e.End != openEnd && e.End > c.maxTS {
		c.maxTS = e.End
	}
	c.events = append(c.events, e)
}

// worker owns one connection and the local name and track tables of the
// events it produced.
type worker struct {
	id     int
	conn   *rawConn
	names  localNames
	tracks localTracks
	// seenNames and seenTracks mark, per local name and track, the last
	// task (its index + 1) whose first uses were noted.
	seenNames, seenTracks []int32
}

// planTasks splits each readers' table into rowid ranges.
func planTasks(db *sql.DB, readers []tableReader) ([]*task, error) {
	var tasks []*task
	for _, rd := range readers {
		t := rd.table()
		if t.rowid == "" {
			var n int64
			if err := db.QueryRow("SELECT count(*) FROM " + quote(t.name)).Scan(&n); err != nil {
				return nil, fmt.Errorf("nsys: %s: %w", t.name, err)
			}
			tasks = append(tasks, &task{idx: len(tasks), rd: rd, est: n})
			continue
		}
		var lo, hi sql.NullInt64
		// Two subqueries: SQLite answers a lone min() or max() of the rowid
		// from the b-tree's ends, but scans the table for both at once.
		q := fmt.Sprintf("SELECT (SELECT min(%[1]s) FROM %[2]s), (SELECT max(%[1]s) FROM %[2]s)", t.rowid, quote(t.name))
		if err := db.QueryRow(q).Scan(&lo, &hi); err != nil {
			return nil, fmt.Errorf("nsys: %s: %w", t.name, err)
		}
		if !lo.Valid || !hi.Valid || hi.Int64 < lo.Int64 {
			continue // empty
		}
		last := uint64(hi.Int64) - uint64(lo.Int64) // rowid span - 1
		n := min(last/chunkRows+1, maxChunksPerTab)
		step := last/n + 1
		for off := uint64(0); ; off += step {
			end := off + step - 1
			if end >= last || end < off {
				end = last
			}
			est := int64(min(end-off, 1<<40)) + 1
			tasks = append(tasks, &task{idx: len(tasks), rd: rd, lo: int64(uint64(lo.Int64) + off),
				hi: int64(uint64(lo.Int64) + end), ranged: true, est: est})
			if end == last {
				break
			}
		}
	}
	return tasks, nil
}

// pool runs tasks on up to maxWorkers connections.
type pool struct {
	uri string
	// file, when set, reads the tables that have a fast layout (fast.go).
	file     *sqlitefile.File
	tasks    []*task
	total    int64
	done     atomic.Int64
	progress func(done, total int64)
	progMu   sync.Mutex
	reported int64        // last count reported, under progMu
	errTask  atomic.Int64 // lowest index of a failed task
}

// run executes all tasks and returns their chunks in task order.
func (p *pool) run() ([]*chunk, []*worker, error) {
	p.errTask.Store(math.MaxInt64)
	for _, t := range p.tasks {
		p.total += t.est
	}
	n := maxWorkers
	if n <= 0 {
		n = min(runtime.GOMAXPROCS(0), defaultMaxWorker)
	}
	n = max(1, min(n, len(p.tasks)))
	chunks := make([]*chunk, len(p.tasks))
	workers := make([]*worker, n)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for wi := range n {
		w := &worker{id: wi, names: newLocalNames(), tracks: newLocalTracks()}
		workers[wi] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(p.tasks) || int64(i) > p.errTask.Load() {
					return
				}
				c := p.runTask(w, p.tasks[i])
				chunks[i] = c
				if c.err != nil {
					p.fail(int64(i))
				}
			}
		}()
	}
	wg.Wait()
	for _, w := range workers {
		if w.conn != nil {
			w.conn.close()
		}
	}
	for _, c := range chunks {
		if c != nil && c.err != nil {
			return nil, nil, c.err
		}
	}
	return chunks, workers, nil
}

// fail records that task i failed, so that later tasks stop.
func (p *pool) fail(i int64) {
	for {
		cur := p.errTask.Load()
		if i >= cur || p.errTask.CompareAndSwap(cur, i) {
			return
		}
	}
}

// tick adds n rows to the progress count and reports every progressEvery
// rows. The count is read under the lock, so reports never go backwards.
func (p *pool) tick(n int64) {
	d := p.done.Add(n)
	if p.progress != nil && d/progressEvery != (d-n)/progressEvery {
		p.progMu.Lock()
		if d = p.done.Load(); d > p.reported {
			p.reported = d
			p.progress(d, max(p.total, d))
		}
		p.progMu.Unlock()
	}
}

// runTask reads one task's rows, on the fast path where it can, else (or
// when the fast path fails) on w's connection.
func (p *pool) runTask(w *worker, t *task) *chunk {
	c := &chunk{task: t, w: w, maxTS: math.MinInt64}
	tab := t.rd.table()
	c.alloc(t)
	if p.file != nil && tab.fast != nil && t.ranged && !noFastPath {
		ticked, err := p.runFast(w, t, c)
		if err == nil {
			if onTask != nil {
				onTask(tab.name, true)
			}
			c.sort()
			return c
		}
		// Start again through SQLite, which gives the result or the error.
		p.done.Add(-ticked)
		c.reset()
	}
	if w.conn == nil {
		conn, err := openRaw(p.uri)
		if err != nil {
			c.err = fmt.Errorf("nsys: open: %w", err)
			return c
		}
		w.conn = conn
	}
	if onTask != nil {
		onTask(tab.name, false)
	}
	sel := t.rd.selectList()
	var q strings.Builder
	q.WriteString("SELECT ")
	base := 0
	if tab.rowid != "" {
		q.WriteString(tab.rowid)
		base = 1
	}
	for i, e := range sel.exprs {
		if i > 0 || base > 0 {
			q.WriteString(", ")
		}
		q.WriteString(e)
	}
	if base == 0 && len(sel.exprs) == 0 {
		q.WriteString("1")
	}
	q.WriteString(" FROM " + quote(tab.name))
	if t.ranged {
		q.WriteString(" WHERE " + tab.rowid + " BETWEEN " + strconv.FormatInt(t.lo, 10) + " AND " + strconv.FormatInt(t.hi, 10))
	}
	st, err := w.conn.prepare(q.String())
	if err != nil {
		c.err = fmt.Errorf("nsys: %s: %w", tab.name, err)
		return c
	}
	defer st.close()
	r := &row{s: st, base: base, names: sel.names}
	var ord, pending int64
	for {
		more, err := st.step()
		if err != nil {
			c.err = fmt.Errorf("nsys: %s: %w", tab.name, err)
			return c
		}
		if !more {
			break
		}
		ord++
		r.err = nil
		skip, err := t.rd.row(w, c, r)
		if err == nil {
			err = r.err
		}
		if err != nil {
			id := ord
			if base == 1 {
				id = st.int64(0)
			}
			c.err = fmt.Errorf("nsys: %s row %d: %w", tab.name, id, err)
			return c
		}
		if skip {
			c.skipped++
		}
		if pending++; pending == checkEvery {
			p.tick(pending)
			pending = 0
			if int64(t.idx) > p.errTask.Load() {
				return c // an earlier task failed: its error is returned
			}
		}
	}
	p.tick(pending)
	c.sort()
	return c
}

// alloc makes room for task t's rows.
func (c *chunk) alloc(t *task) {
	if n := min(t.est, int64(chunkRows)); n > 0 {
		if _, ok := t.rd.(*stringsReader); ok {
			c.strs = make([]sidString, 0, n)
		} else {
			// From 1 MB on, a task's events take whole huge pages (from
			// Make's 2 MB), which the merge gives back once it has copied
			// them: ordinary memory would stay resident to the end.
			const size = int64(unsafe.Sizeof(timeline.Event{}))
			if n*size >= 1<<20 {
				n = max(n, (hugepage.MinBytes+size-1)/size)
			}
			c.events = hugepage.Make[timeline.Event](0, int(n))
		}
	}
}

// reset empties c for reading its task again.
func (c *chunk) reset() {
	c.events, c.strs = c.events[:0], c.strs[:0]
	c.maxTS, c.skipped, c.dropped = math.MinInt64, 0, 0
}

// sort puts the chunk's events in timeline order and notes the first
// event of each local name and track.
func (c *chunk) sort() {
	slices.SortFunc(c.events, func(x, y timeline.Event) int { return timeline.Before(&x, &y) })
	w, stamp := c.w, int32(c.task.idx)+1
	w.seenNames = extend(w.seenNames, len(w.names.list))
	w.seenTracks = extend(w.seenTracks, len(w.tracks.list))
	c.firstNames, c.firstTracks = c.firstNames[:0], c.firstTracks[:0]
	for i := range c.events {
		e := &c.events[i]
		if w.seenNames[e.Name] != stamp {
			w.seenNames[e.Name] = stamp
			c.firstNames = append(c.firstNames, firstUse{local: uint32(e.Name), at: int32(i)})
		}
		if w.seenTracks[e.Track] != stamp {
			w.seenTracks[e.Track] = stamp
			c.firstTracks = append(c.firstTracks, firstUse{local: uint32(e.Track), at: int32(i)})
		}
	}
}

// extend returns s with length at least n, new elements zero.
func extend(s []int32, n int) []int32 {
	if len(s) < n {
		s = append(s, make([]int32, n-len(s))...)
	}
	return s
}
