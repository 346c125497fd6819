package sqlitefile

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// makeDB creates a database at path with the given statements.
func makeDB(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func openRO(t testing.TB, path string) *sql.DB {
	t.Helper()
	abs, _ := filepath.Abs(path)
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: "mode=ro"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// value is one column as both readers see it.
type value struct {
	typ Type
	i   int64
	f   float64
	b   string
}

func (v value) String() string {
	switch v.typ {
	case Integer:
		return fmt.Sprintf("int %d", v.i)
	case Float:
		return fmt.Sprintf("float %v", v.f)
	case Text:
		return fmt.Sprintf("text %d bytes %.20q", len(v.b), v.b)
	case Blob:
		return fmt.Sprintf("blob %d bytes", len(v.b))
	}
	return "null"
}

// sqliteRows reads rowid and columns 0..ncol-1 of rows with rowid in
// [lo, hi] through SQLite, with each value's storage class.
func sqliteRows(t testing.TB, db *sql.DB, table string, cols []string, lo, hi int64) ([]int64, [][]value) {
	t.Helper()
	var sel []string
	for _, c := range cols {
		sel = append(sel, fmt.Sprintf("typeof(%s), %s", c, c))
	}
	q := fmt.Sprintf("SELECT rowid, %s FROM %s WHERE rowid BETWEEN %d AND %d", strings.Join(sel, ", "), table, lo, hi)
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	var out [][]value
	for rows.Next() {
		dst := make([]any, 1+2*len(cols))
		var id int64
		dst[0] = &id
		typs := make([]string, len(cols))
		vals := make([]any, len(cols))
		for k := range cols {
			dst[1+2*k], dst[2+2*k] = &typs[k], &vals[k]
		}
		if err := rows.Scan(dst...); err != nil {
			t.Fatal(err)
		}
		row := make([]value, len(cols))
		for k := range cols {
			switch typs[k] {
			case "integer":
				row[k] = value{typ: Integer, i: vals[k].(int64)}
			case "real":
				row[k] = value{typ: Float, f: vals[k].(float64)}
			case "text":
				row[k] = value{typ: Text, b: vals[k].(string)}
			case "blob":
				row[k] = value{typ: Blob, b: string(vals[k].([]byte))}
			}
		}
		ids = append(ids, id)
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids, out
}

// fileRows is sqliteRows through a Cursor.
func fileRows(f *File, root uint32, ncol int, lo, hi int64, real []bool) ([]int64, [][]value, error) {
	c := f.Scan(root, lo, hi, ncol)
	for k, r := range real {
		if r {
			c.SetReal(k)
		}
	}
	var ids []int64
	var out [][]value
	for c.Next() {
		row := make([]value, ncol)
		for k := range row {
			v := value{typ: c.Type(k)}
			switch v.typ {
			case Integer:
				v.i = c.Int(k)
			case Float:
				v.f = c.Float(k)
			case Text, Blob:
				v.b = string(c.Bytes(k))
			}
			row[k] = v
		}
		ids = append(ids, c.Rowid())
		out = append(out, row)
	}
	return ids, out, c.Err()
}

// realCols says which of cols have REAL affinity, from their declared types.
func realCols(t testing.TB, db *sql.DB, table string, cols []string) []bool {
	t.Helper()
	decl := map[string]string{}
	rows, err := db.Query("SELECT name, type FROM pragma_table_info(?)", table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n, ty string
		if err := rows.Scan(&n, &ty); err != nil {
			t.Fatal(err)
		}
		decl[n] = ty
	}
	out := make([]bool, len(cols))
	for k, c := range cols {
		out[k] = RealAffinity(decl[c])
	}
	return out
}

func rootOf(t testing.TB, db *sql.DB, table string) uint32 {
	t.Helper()
	var root uint32
	if err := db.QueryRow("SELECT rootpage FROM sqlite_master WHERE name = ?", table).Scan(&root); err != nil {
		t.Fatal(err)
	}
	return root
}

// compare scans [lo, hi] both ways and reports the first difference.
func compare(t *testing.T, path, table string, cols []string, lo, hi int64) int {
	t.Helper()
	db := openRO(t, path)
	wantIDs, want := sqliteRows(t, db, table, cols, lo, hi)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gotIDs, got, err := fileRows(f, rootOf(t, db, table), len(cols), lo, hi, realCols(t, db, table, cols))
	if err != nil {
		t.Fatalf("%s [%d, %d]: %v", table, lo, hi, err)
	}
	if len(gotIDs) != len(wantIDs) {
		t.Fatalf("%s [%d, %d]: %d rows, SQLite %d", table, lo, hi, len(gotIDs), len(wantIDs))
	}
	for r := range gotIDs {
		if gotIDs[r] != wantIDs[r] {
			t.Fatalf("%s row %d: rowid %d, SQLite %d", table, r, gotIDs[r], wantIDs[r])
		}
		for k := range cols {
			g, w := got[r][k], want[r][k]
			if g.typ != w.typ || g.i != w.i || g.b != w.b || (g.f != w.f && !(math.IsNaN(g.f) && math.IsNaN(w.f))) {
				t.Fatalf("%s rowid %d column %s: %v, SQLite %v", table, gotIDs[r], cols[k], g, w)
			}
		}
	}
	return len(gotIDs)
}

// mixedDB writes a table of every storage class and integer width, long
// texts and blobs that spill onto overflow pages, deleted rows and a
// column added after some rows were written.
func mixedDB(t testing.TB, pageSize int) string {
	path := filepath.Join(t.TempDir(), fmt.Sprintf("mixed-%d.sqlite", pageSize))
	stmts := []string{fmt.Sprintf("PRAGMA page_size=%d", pageSize),
		"CREATE TABLE t (a INTEGER, b REAL, c TEXT, d BLOB, e)", "BEGIN"}
	rng := rand.New(rand.NewPCG(uint64(pageSize), 7))
	ints := []int64{0, 1, -1, 2, 127, -128, 128, 32767, -32768, 1<<23 - 1, -1 << 23, 1 << 23, 1<<31 - 1, -1 << 31,
		1 << 31, 1<<47 - 1, -1 << 47, 1 << 47, math.MaxInt64, math.MinInt64}
	for i := 0; i < 3000; i++ {
		a := fmt.Sprint(ints[i%len(ints)])
		if i%17 == 0 {
			a = "NULL"
		}
		b := fmt.Sprintf("%v", float64(i)*1.5-700)
		switch i % 5 {
		case 0:
			b = "NULL"
		case 1:
			b = fmt.Sprint(i) // an integral REAL, stored as an integer
		case 2:
			b = "1e300"
		}
		n := rng.IntN(40)
		if i%50 == 0 {
			n = rng.IntN(3 * pageSize) // spills onto overflow pages
		}
		if i == 1000 {
			n = 70000 // a chain of many overflow pages at every page size
		}
		c := "'" + strings.Repeat(string(rune('a'+i%26)), n) + "'"
		if i%11 == 0 {
			c = "''"
		}
		d := fmt.Sprintf("randomblob(%d)", rng.IntN(30))
		if i%70 == 0 {
			d = fmt.Sprintf("zeroblob(%d)", rng.IntN(2*pageSize))
		}
		e := []string{"NULL", "42", "'x'", "x'00ff'", "3.25", "-9000000000"}[i%6]
		stmts = append(stmts, fmt.Sprintf("INSERT INTO t VALUES (%s, %s, %s, %s, %s)", a, b, c, d, e))
	}
	stmts = append(stmts, "COMMIT", "DELETE FROM t WHERE rowid % 7 = 3", "ALTER TABLE t ADD COLUMN f INTEGER",
		"INSERT INTO t (a, f) VALUES (5, 6)", "INSERT INTO t (rowid, a, c, f) VALUES (1000000, -3, 'far', 1 << 40)",
		"INSERT INTO t (rowid, a) VALUES (-5, 1)")
	makeDB(t, path, stmts...)
	return path
}

func TestScanMatchesSQLite(t *testing.T) {
	cols := []string{"a", "b", "c", "d", "e", "f"}
	for _, ps := range []int{512, 4096, 65536} {
		path := mixedDB(t, ps)
		n := compare(t, path, "t", cols, math.MinInt64, math.MaxInt64)
		if n != 3000-3000/7+2 {
			t.Errorf("page size %d: %d rows", ps, n)
		}
		for _, r := range [][2]int64{{1, 1}, {-10, 0}, {0, 100}, {3, 3}, {500, 1499}, {2000, 2999}, {2990, 1e9}, {5, 4}, {1e6, 1e6}, {1e6 + 1, math.MaxInt64}} {
			compare(t, path, "t", cols, r[0], r[1])
		}
		// Fewer columns than the record holds.
		compare(t, path, "t", cols[:2], 100, 200)
	}
}

func TestIntegerPrimaryKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pk.sqlite")
	stmts := []string{"CREATE TABLE s (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)", "BEGIN"}
	for i := 0; i < 2000; i++ {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO s VALUES (%d, 'name %d')", i*3+1, i))
	}
	makeDB(t, path, append(stmts, "COMMIT")...)
	// The alias column is stored as NULL: the caller reads the rowid.
	db := openRO(t, path)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids, rows, err := fileRows(f, rootOf(t, db, "s"), 2, 0, math.MaxInt64, nil)
	if err != nil || len(ids) != 2000 {
		t.Fatalf("%d rows, %v", len(ids), err)
	}
	for k, id := range ids {
		if id != int64(k*3+1) || rows[k][0].typ != Null || rows[k][1].b != fmt.Sprintf("name %d", k) {
			t.Fatalf("row %d: rowid %d, %v", k, id, rows[k])
		}
	}
}

func TestUnsupported(t *testing.T) {
	dir := t.TempDir()
	wal := filepath.Join(dir, "wal.sqlite")
	makeDB(t, wal, "PRAGMA journal_mode=WAL", "CREATE TABLE t (a)", "INSERT INTO t VALUES (1)")
	utf16 := filepath.Join(dir, "utf16.sqlite")
	makeDB(t, utf16, "PRAGMA encoding='UTF-16le'", "CREATE TABLE t (a)", "INSERT INTO t VALUES ('x')")
	journal := filepath.Join(dir, "journal.sqlite")
	makeDB(t, journal, "CREATE TABLE t (a)")
	if err := os.WriteFile(journal+"-journal", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{wal, utf16, journal} {
		if _, err := Open(p); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", filepath.Base(p), err)
		}
	}
}

// TestCorrupt checks that damaged pages give ErrCorrupt, never a panic or
// rows SQLite would not return.
func TestCorrupt(t *testing.T) {
	path := mixedDB(t, 512)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root := rootOf(t, openRO(t, path), "t")
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	errs := 0
	for trial := range 300 {
		b := bytes.Clone(data)
		for range 1 + trial%8 {
			b[512+rng.IntN(len(b)-512)] = byte(rng.Uint32())
		}
		if trial%10 == 0 {
			b = b[:rng.IntN(len(b))]
		}
		p := filepath.Join(dir, fmt.Sprintf("c%d.sqlite", trial))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(p)
		if err != nil {
			errs++
			continue
		}
		if _, _, err := fileRows(f, root, 6, math.MinInt64, math.MaxInt64, []bool{false, true}); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("trial %d: %v", trial, err)
			}
			errs++
		}
		f.Close()
	}
	if errs == 0 {
		t.Error("no damaged file was refused")
	}
}

func TestVarint(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 16383, 16384, 1<<56 - 1, 1 << 56, math.MaxUint64} {
		b := putVarint(v)
		got, n := varint(b)
		if got != v || n != len(b) {
			t.Errorf("%d: got %d in %d bytes of %d", v, got, n, len(b))
		}
		if _, n := varint(b[:len(b)-1]); n != 0 {
			t.Errorf("%d: short input decoded", v)
		}
	}
}

// putVarint encodes v as SQLite does (for the test).
func putVarint(v uint64) []byte {
	if v>>56 != 0 {
		b := make([]byte, 9)
		b[8] = byte(v)
		v >>= 8
		for i := 7; i >= 0; i-- {
			b[i] = byte(v&0x7f) | 0x80
			v >>= 7
		}
		return b
	}
	var rev []byte
	for {
		rev = append(rev, byte(v&0x7f))
		v >>= 7
		if v == 0 {
			break
		}
	}
	b := make([]byte, len(rev))
	for i := range rev {
		b[i] = rev[len(rev)-1-i]
		if i < len(rev)-1 {
			b[i] |= 0x80
		}
	}
	return b
}

// FuzzScan reads damaged files: every outcome is a row, ErrCorrupt or an
// error from Open, never a panic or a loop.
func FuzzScan(f *testing.F) {
	path := mixedDB(f, 512)
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	root := rootOf(f, openRO(f, path), "t")
	f.Add(data, uint32(root))
	f.Add(data[:len(data)/2], uint32(root))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, root uint32) {
		p := filepath.Join(dir, "f.sqlite")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		fl, err := Open(p)
		if err != nil {
			return
		}
		defer fl.Close()
		if _, _, err := fileRows(fl, root, 6, math.MinInt64, math.MaxInt64, []bool{false, true}); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("not ErrCorrupt: %v", err)
		}
	})
}
