package nsys

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/traceaudit/traceaudit/ingest/nsys/internal/sqlitefile"
)

// The fast path reads the event tables' rows straight from the file's
// b-tree pages (package sqlitefile) instead of stepping SQLite's virtual
// machine: for the 2 M-row benchmark export, decoding a row that way costs
// about 70 ns against several hundred through SQLite. SQLite still reads
// the schema, the metadata and the small tables, and it reads a whole task
// again whenever the fast path meets anything it does not handle exactly
// as SQLite would (see errSlowPath) or fails for any reason, so that the
// result, errors included, is what SQLite gives.

// errSlowPath makes a task be read again through SQLite: a value whose
// conversion the fast path leaves to SQLite (a number read as text, a
// default value of a column that a row predates).
var errSlowPath = errors.New("read through SQLite")

// colRowid and colNone stand for the rowid and for no column in fastCol.
const (
	colRowid = -2
	colNone  = -1
)

// fastCol is where one select-list item is in a table's records: column a,
// or the first non-NULL of a and b (COALESCE).
type fastCol struct {
	a, b int
}

// fastLayout is how the columns of a table lie in its records.
type fastLayout struct {
	root uint32
	// pos is each column's position in the record, by name; real marks
	// REAL affinity and dflt a non-NULL default, by position.
	pos        map[string]int
	real, dflt []bool
	// alias is the position of the INTEGER PRIMARY KEY column, which holds
	// the rowid (-1: none).
	alias int
}

// readLayout reads t's record layout (PRAGMA table_xinfo) and sets t.fast,
// unless the table is not one the fast path reads: without a rowid,
// virtual, with hidden or generated columns, or with a primary key that
// may or may not be the rowid. Errors leave t.fast nil.
func (x *export) readLayout(t *table) {
	root := t.root
	if root <= 0 || root > math.MaxUint32 || t.rowid == "" || strings.HasPrefix(strings.ToUpper(strings.TrimSpace(t.sql)), "CREATE VIRTUAL") {
		return
	}
	rows, err := x.db.Query("SELECT name, type, dflt_value IS NOT NULL, pk, hidden FROM pragma_table_xinfo(?)", t.name)
	if err != nil {
		return
	}
	defer rows.Close()
	l := &fastLayout{root: uint32(root), pos: map[string]int{}, alias: -1}
	pks, pkInt := 0, -1
	for rows.Next() {
		var name, typ string
		var dflt bool
		var pk, hidden int
		if err := rows.Scan(&name, &typ, &dflt, &pk, &hidden); err != nil || hidden != 0 {
			return
		}
		k := len(l.real)
		l.pos[name] = k
		l.real = append(l.real, sqlitefile.RealAffinity(typ))
		l.dflt = append(l.dflt, dflt)
		if pk > 0 {
			pks++
			if strings.EqualFold(strings.TrimSpace(typ), "INTEGER") {
				pkInt = k
			}
		}
	}
	if rows.Err() != nil {
		return
	}
	if pks == 1 && pkInt >= 0 {
		// "INTEGER PRIMARY KEY" makes the column the rowid, except in the
		// form "INTEGER PRIMARY KEY DESC": leave any DESC to SQLite.
		if strings.Contains(strings.ToUpper(t.sql), "DESC") {
			return
		}
		l.alias = pkInt
	}
	t.fast = l
}

// fastCol returns the record position of column name ("" or absent: none).
func (l *fastLayout) col(name string) int {
	k, ok := l.pos[name]
	switch {
	case !ok:
		return colNone
	case k == l.alias:
		return colRowid
	}
	return k
}

// ncol is the number of record columns the select list needs decoded.
func (s *selectList) ncol() int {
	n := 0
	for _, c := range s.fast {
		n = max(n, c.a+1, c.b+1)
	}
	return n
}

// runFast reads task t's rows from the file's b-tree into c. It returns
// the rows it counted for progress.
func (p *pool) runFast(w *worker, t *task, c *chunk) (ticked int64, err error) {
	tab := t.rd.table()
	sel := t.rd.selectList()
	cur := p.file.Scan(tab.fast.root, t.lo, t.hi, sel.ncol())
	for k, r := range tab.fast.real {
		if r {
			cur.SetReal(k)
		}
	}
	r := &row{c: cur, fast: sel.fast, dflt: tab.fast.dflt, names: sel.names}
	var pending int64
	for cur.Next() {
		r.err = nil
		skip, err := t.rd.row(w, c, r)
		if err == nil {
			err = r.err
		}
		if err != nil {
			return ticked, fmt.Errorf("nsys: %s row %d: %w", tab.name, cur.Rowid(), err)
		}
		if skip {
			c.skipped++
		}
		if pending++; pending == checkEvery {
			p.tick(pending)
			ticked += pending
			pending = 0
			if int64(t.idx) > p.errTask.Load() {
				return ticked, nil // an earlier task failed: its error is returned
			}
		}
	}
	if err := cur.Err(); err != nil {
		return ticked, fmt.Errorf("nsys: %s: %w", tab.name, err)
	}
	p.tick(pending)
	return ticked + pending, nil
}

// pick returns the record position of select-list item i for the current
// row, resolving COALESCE.
func (r *row) pick(i int) int {
	f := r.fast[i]
	if f.b != colNone && f.a != colRowid && r.c.Type(f.a) == sqlitefile.Null && r.has(f.a) {
		return f.b
	}
	return f.a
}

// has reports whether the current record holds position k; where it does
// not (the row predates an added column) and the column has a default,
// the row is left to SQLite.
func (r *row) has(k int) bool {
	if k >= 0 && !r.c.Has(k) && r.dflt[k] {
		r.err = errSlowPath
		return false
	}
	return true
}

// fastInt is row.int on the fast path.
func (r *row) fastInt(i int) (int64, bool) {
	k := r.pick(i)
	if k == colRowid {
		return r.c.Rowid(), true
	}
	if k == colNone || !r.has(k) {
		return 0, false
	}
	switch r.c.Type(k) {
	case sqlitefile.Integer:
		return r.c.Int(k), true
	case sqlitefile.Null:
		return 0, false
	case sqlitefile.Float:
		if f := r.c.Float(k); f == math.Trunc(f) && f >= -(1<<62) && f <= 1<<62 {
			return int64(f), true
		}
	}
	if r.err == nil {
		r.err = fmt.Errorf("column %s: not an integer", r.names[i])
	}
	return 0, false
}

// fastText is row.text on the fast path.
func (r *row) fastText(i int) ([]byte, bool) {
	k := r.pick(i)
	if k == colNone || !r.has(k) {
		return nil, false
	}
	if k == colRowid {
		r.err = errSlowPath
		return nil, false
	}
	switch r.c.Type(k) {
	case sqlitefile.Null:
		return nil, false
	case sqlitefile.Text, sqlitefile.Blob:
		return r.c.Bytes(k), true
	}
	r.err = errSlowPath // SQLite's text of a number
	return nil, false
}
