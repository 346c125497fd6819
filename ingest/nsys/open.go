package nsys

import (
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// sqliteMagic starts every SQLite 3 database file.
const sqliteMagic = "SQLite format 3\x00"

// export is an opened nsys SQLite export: its schema and metadata.
type export struct {
	uri string
	db  *sql.DB
	// tables holds every table of the schema by name.
	tables map[string]*table
	// version is EXPORT_PRODUCT_VERSION ("" when unknown).
	version string
	// lazy is false for exports written with --lazy=false, which create
	// every table, empty or not.
	lazy bool
	// osrtTraced: META_DATA_CAPTURE records OS runtime trace options.
	osrtTraced bool
}

// table is one table of the schema.
type table struct {
	name string
	sql  string
	cols map[string]bool
	// rowid is the name under which the table's rowid can be selected
	// ("" for a WITHOUT ROWID table).
	rowid string
	// present: the table exists and, in a non-lazy export, has rows.
	present bool
	// root is the table's root page (0: none, as for a virtual table);
	// fast, when set, says where its columns lie in its records.
	root int64
	fast *fastLayout
}

// has reports whether the table has column c.
func (t *table) has(c string) bool { return t != nil && t.cols[c] }

// fileURI returns the read-only SQLite URI of path. A WAL-mode database is
// opened immutable, because a read-only WAL reader would otherwise create
// -shm and -wal files next to the user's file.
func fileURI(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("nsys: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("nsys: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("nsys: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("nsys: %w (not a regular file)", ErrNotNsys)
	}
	var hdr [100]byte
	n, err := io.ReadFull(f, hdr[:])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return "", fmt.Errorf("nsys: %w", err)
	}
	m := min(n, len(sqliteMagic))
	if n == 0 || string(hdr[:m]) != sqliteMagic[:m] {
		return "", fmt.Errorf("nsys: %w (not an SQLite file)", ErrNotNsys)
	}
	if n < len(hdr) {
		return "", fmt.Errorf("nsys: truncated SQLite header (%d bytes)", n)
	}
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows: file:///C:/...
	}
	q := "mode=ro"
	if hdr[18] == 2 || hdr[19] == 2 { // WAL file format
		q += "&immutable=1"
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: q}
	return u.String(), nil
}

// openExport opens path read-only and reads its schema and metadata.
func openExport(path string) (*export, error) {
	uri, err := fileURI(path)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, fmt.Errorf("nsys: open: %w", err)
	}
	db.SetMaxOpenConns(1)
	x := &export{uri: uri, db: db, tables: map[string]*table{}, lazy: true}
	if err := x.readSchema(); err != nil {
		db.Close()
		return nil, err
	}
	return x, nil
}

func (x *export) close() {
	if x.db != nil {
		x.db.Close()
		x.db = nil
	}
}

// readSchema lists the tables, checks that the file is an nsys export and
// reads the metadata and the columns of the tables the reader uses.
func (x *export) readSchema() error {
	rows, err := x.db.Query("SELECT name, COALESCE(sql, ''), CASE WHEN typeof(rootpage) = 'integer' THEN rootpage ELSE 0 END FROM sqlite_master WHERE type = 'table'")
	if err != nil {
		return fmt.Errorf("nsys: reading schema: %w", err)
	}
	for rows.Next() {
		t := &table{}
		if err := rows.Scan(&t.name, &t.sql, &t.root); err != nil {
			rows.Close()
			return fmt.Errorf("nsys: reading schema: %w", err)
		}
		x.tables[t.name] = t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("nsys: reading schema: %w", err)
	}
	if err := x.checkNsys(); err != nil {
		return err
	}
	if err := x.readMeta(); err != nil {
		return err
	}
	for _, name := range []string{tabKernel, tabMemcpy, tabMemset, tabSync, tabGraph, tabRuntime,
		tabOSRT, tabNVTX, tabStrings, tabThreads, tabGPU} {
		t := x.tables[name]
		if t == nil {
			continue
		}
		if err := x.readColumns(t); err != nil {
			return err
		}
		x.readLayout(t)
		t.present = true
		if !x.lazy {
			var one int
			err := x.db.QueryRow("SELECT 1 FROM " + quote(name) + " LIMIT 1").Scan(&one)
			if err == sql.ErrNoRows {
				t.present = false
			} else if err != nil {
				return fmt.Errorf("nsys: %s: %w", name, err)
			}
		}
	}
	return nil
}

// checkNsys requires StringIds and one of the nsys metadata, target-info
// or CUPTI activity tables.
func (x *export) checkNsys() error {
	if x.tables[tabStrings] == nil {
		return fmt.Errorf("nsys: %w (no StringIds table)", ErrNotNsys)
	}
	if x.tables[tabMeta] != nil || x.tables[tabMetaOld] != nil {
		return nil
	}
	for name := range x.tables {
		if strings.HasPrefix(name, prefixInfo) || strings.HasPrefix(name, prefixCUPTI) {
			return nil
		}
	}
	return fmt.Errorf("nsys: %w (no metadata, target or CUDA tables)", ErrNotNsys)
}

// readColumns fills t.cols from PRAGMA table_info and picks a rowid alias.
func (x *export) readColumns(t *table) error {
	rows, err := x.db.Query("PRAGMA table_info(" + quote(t.name) + ")")
	if err != nil {
		return fmt.Errorf("nsys: %s: %w", t.name, err)
	}
	defer rows.Close()
	t.cols = map[string]bool{}
	cols, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("nsys: %s: %w", t.name, err)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("nsys: %s: %w", t.name, err)
		}
		for i, c := range cols {
			if c == "name" {
				switch v := vals[i].(type) {
				case string:
					t.cols[v] = true
				case []byte:
					t.cols[string(v)] = true
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("nsys: %s: %w", t.name, err)
	}
	if !strings.Contains(strings.ToUpper(t.sql), "WITHOUT ROWID") {
		for _, alias := range []string{"rowid", "_rowid_", "oid"} {
			if !t.hasFold(alias) {
				t.rowid = alias
				break
			}
		}
	}
	return nil
}

// hasFold reports whether t has a column named c in any letter case.
func (t *table) hasFold(c string) bool {
	for k := range t.cols {
		if strings.EqualFold(k, c) {
			return true
		}
	}
	return false
}

// quote quotes an SQL identifier.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
