package nsys

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/traceaudit/traceaudit/ingest/nsys/internal/sqlitefile"
	"github.com/traceaudit/traceaudit/timeline"
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The bulk event tables are read through SQLite's statement API of the same
// pure-Go library that backs the database/sql driver (modernc.org/sqlite/lib),
// not through database/sql. For the 2.4 M-row benchmark export that is 2.7
// times faster (0.75 s against 2.0 s on one core): database/sql boxes every
// column value in an interface and converts it again in Scan. The metadata
// and small tables still go through database/sql (open.go).

// Column types as sqlite3_column_type reports them.
const (
	colInteger = sqlite3.SQLITE_INTEGER
	colFloat   = sqlite3.SQLITE_FLOAT
	colNull    = sqlite3.SQLITE_NULL
)

// rawConn is one read-only SQLite connection used by one goroutine.
type rawConn struct {
	tls *libc.TLS
	db  uintptr
}

// openRaw opens uri (a file: URI carrying mode=ro) read-only.
func openRaw(uri string) (*rawConn, error) {
	c := &rawConn{tls: libc.NewTLS()}
	name, err := libc.CString(uri)
	if err != nil {
		c.tls.Close()
		return nil, err
	}
	defer libc.Xfree(c.tls, name)
	pp := c.tls.Alloc(8)
	defer c.tls.Free(8)
	flags := int32(sqlite3.SQLITE_OPEN_READONLY | sqlite3.SQLITE_OPEN_URI | sqlite3.SQLITE_OPEN_NOMUTEX)
	rc := sqlite3.Xsqlite3_open_v2(c.tls, name, pp, flags, 0)
	c.db = readPtr(pp)
	if rc != sqlite3.SQLITE_OK {
		err := c.err(rc)
		c.close()
		return nil, err
	}
	// Read pages through a memory map of the file instead of one pread
	// per 4 kB page: on the bench machine the system calls were 10 % of an
	// nsys analysis's CPU (0.32 s for the 113 MB export). SQLite maps at
	// most the file's size and reads past the map with pread, so a short
	// or corrupt file is handled as before. Best effort: an error leaves
	// the connection reading as before.
	if st, err := c.prepare("PRAGMA mmap_size=" + strconv.Itoa(mmapSize)); err == nil {
		st.step()
		st.close()
	}
	return c, nil
}

// mmapSize is the largest part of the file a connection maps (SQLite caps
// it further at its compile-time limit).
const mmapSize = 1 << 30

// readPtr reads a C pointer stored in C memory at p.
func readPtr(p uintptr) uintptr {
	b := libc.GoBytes(p, int(unsafe.Sizeof(p)))
	if len(b) == 8 {
		return uintptr(binary.NativeEndian.Uint64(b))
	}
	return uintptr(binary.NativeEndian.Uint32(b))
}

// err describes result code rc, with the connection's message when there is one.
func (c *rawConn) err(rc int32) error {
	msg := libc.GoString(sqlite3.Xsqlite3_errstr(c.tls, rc))
	if c.db != 0 {
		if m := libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db)); m != "" && m != msg && !strings.Contains(msg, m) {
			msg += ": " + m
		}
	}
	if msg == "" {
		msg = fmt.Sprintf("sqlite error %d", rc)
	}
	return errors.New(msg)
}

func (c *rawConn) close() {
	if c.db != 0 {
		sqlite3.Xsqlite3_close_v2(c.tls, c.db)
		c.db = 0
	}
	if c.tls != nil {
		c.tls.Close()
		c.tls = nil
	}
}

// rawStmt is a prepared statement being stepped through.
type rawStmt struct {
	c  *rawConn
	st uintptr
	n  int
}

func (c *rawConn) prepare(query string) (*rawStmt, error) {
	z, err := libc.CString(query)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(c.tls, z)
	pp := c.tls.Alloc(8)
	defer c.tls.Free(8)
	rc := sqlite3.Xsqlite3_prepare_v2(c.tls, c.db, z, -1, pp, 0)
	st := readPtr(pp)
	if rc != sqlite3.SQLITE_OK {
		if st != 0 {
			sqlite3.Xsqlite3_finalize(c.tls, st)
		}
		return nil, c.err(rc)
	}
	if st == 0 {
		return nil, errors.New("empty statement")
	}
	return &rawStmt{c: c, st: st, n: int(sqlite3.Xsqlite3_column_count(c.tls, st))}, nil
}

// step advances to the next row; it reports false at the end or on error.
func (s *rawStmt) step() (bool, error) {
	switch rc := sqlite3.Xsqlite3_step(s.c.tls, s.st); rc {
	case sqlite3.SQLITE_ROW:
		return true, nil
	case sqlite3.SQLITE_DONE:
		return false, nil
	default:
		return false, s.c.err(rc)
	}
}

func (s *rawStmt) typ(i int) int32 { return sqlite3.Xsqlite3_column_type(s.c.tls, s.st, int32(i)) }

func (s *rawStmt) int64(i int) int64 { return sqlite3.Xsqlite3_column_int64(s.c.tls, s.st, int32(i)) }

func (s *rawStmt) float(i int) float64 {
	return sqlite3.Xsqlite3_column_double(s.c.tls, s.st, int32(i))
}

// text returns column i as bytes that stay valid only until the next step.
func (s *rawStmt) text(i int) []byte {
	p := sqlite3.Xsqlite3_column_text(s.c.tls, s.st, int32(i))
	n := sqlite3.Xsqlite3_column_bytes(s.c.tls, s.st, int32(i))
	if p == 0 || n <= 0 {
		return nil
	}
	return libc.GoBytes(p, int(n))
}

func (s *rawStmt) close() {
	if s.st != 0 {
		sqlite3.Xsqlite3_finalize(s.c.tls, s.st)
		s.st = 0
	}
}

// selectList builds the column list of one table's SELECT from the columns
// the table actually has (detected with PRAGMA table_info), and where the
// fast path finds them in the table's records.
type selectList struct {
	t     *table
	exprs []string
	names []string
	fast  []fastCol // when t.fast is set
}

// col adds column name and returns its index in the list, or -1 when the
// table lacks it.
func (s *selectList) col(name string) int {
	if !s.t.has(name) {
		return -1
	}
	return s.add(quote(name), name, name, "")
}

// coalesce adds COALESCE(a, b), named a in messages, and returns its index.
func (s *selectList) coalesce(a, b string) int {
	return s.add("COALESCE("+quote(a)+", "+quote(b)+")", a, a, b)
}

// add adds an SQL expression named name, which is column a or the first
// non-NULL of columns a and b, and returns its index.
func (s *selectList) add(sql, name, a, b string) int {
	s.exprs = append(s.exprs, sql)
	s.names = append(s.names, name)
	if l := s.t.fast; l != nil {
		f := fastCol{a: l.col(a), b: colNone}
		if b != "" {
			f.b = l.col(b)
		}
		s.fast = append(s.fast, f)
	}
	return len(s.exprs) - 1
}

// need fails unless the table has all the named columns.
func (s *selectList) need(names ...string) error {
	for _, n := range names {
		if !s.t.has(n) {
			return fmt.Errorf("nsys: %s: no column %q", s.t.name, n)
		}
	}
	return nil
}

// row gives typed access to the current row of a scan: through SQLite
// (s), or on the fast path from the record (c).
type row struct {
	s     *rawStmt
	base  int // columns before the select list (the rowid)
	names []string
	err   error
	// The fast path: the cursor, where each select-list item is, and which
	// record positions have a default value.
	c    *sqlitefile.Cursor
	fast []fastCol
	dflt []bool
}

// int returns column i as an integer; ok is false for NULL or an absent
// column (i < 0). A value that is not an integer records an error in r.err.
func (r *row) int(i int) (v int64, ok bool) {
	if i < 0 {
		return 0, false
	}
	if r.c != nil {
		return r.fastInt(i)
	}
	j := i + r.base
	switch r.s.typ(j) {
	case colInteger:
		return r.s.int64(j), true
	case colNull:
		return 0, false
	case colFloat:
		if f := r.s.float(j); f == math.Trunc(f) && f >= -(1<<62) && f <= 1<<62 {
			return int64(f), true
		}
	}
	if r.err == nil {
		r.err = fmt.Errorf("column %s: not an integer", r.names[i])
	}
	return 0, false
}

// text returns column i as bytes valid until the next row; ok is false for
// NULL or an absent column.
func (r *row) text(i int) (b []byte, ok bool) {
	if i < 0 {
		return nil, false
	}
	if r.c != nil {
		return r.fastText(i)
	}
	j := i + r.base
	if r.s.typ(j) == colNull {
		return nil, false
	}
	return r.s.text(j), true
}

var (
	errStartNull = errors.New("start is NULL")
	errEndBefore = errors.New("end before start")
	errTimeRange = errors.New("timestamp out of range")
	errNegBytes  = errors.New("negative bytes")
)

// times reads the start and end columns. ok is false when end is NULL (the
// caller skips the row); a NULL start, a time beyond timeline.MaxTime or an
// end before the start are errors.
func (r *row) times(si, ei int) (start, end int64, ok bool, err error) {
	start, sok := r.int(si)
	end, eok := r.int(ei)
	if r.err != nil {
		return 0, 0, false, r.err
	}
	if !sok {
		return 0, 0, false, errStartNull
	}
	if start < -timeline.MaxTime || start > timeline.MaxTime || end < -timeline.MaxTime || end > timeline.MaxTime {
		return 0, 0, false, errTimeRange
	}
	if !eok {
		return start, 0, false, nil
	}
	if end < start {
		return 0, 0, false, errEndBefore
	}
	return start, end, true, nil
}

// bytes reads a size column; NULL is 0, a negative size is an error.
func (r *row) bytes(i int) (int64, error) {
	v, _ := r.int(i)
	if r.err != nil {
		return 0, r.err
	}
	if v < 0 {
		return 0, errNegBytes
	}
	return v, nil
}

// nonZero reports whether column i is present, non-NULL and non-zero.
func (r *row) nonZero(i int) bool {
	v, ok := r.int(i)
	return ok && v != 0
}
