package nsys

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline"
)

// Synthetic exports for cases no fixture shows. The DDL follows the real
// exports (nsys 2024.x-2025.x column sets).
const (
	ddlStrings = `CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)`
	ddlMeta    = `CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)`
	ddlKernel  = `CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
		deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
		correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,
		mangledName INTEGER, graphNodeId INTEGER)`
	ddlRuntime = `CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
		eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
		returnValue INTEGER NOT NULL, callchainId INTEGER)`
	ddlGraph = `CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL, end INTEGER NOT NULL,
		deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
		correlationId INTEGER, globalPid INTEGER, graphId INTEGER NOT NULL, graphExecId INTEGER NOT NULL)`
	ddlNVTX = `CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
		rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
		textId INTEGER, domainId INTEGER)`
	ddlOSRT = `CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
		globalTid INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, nestingLevel INTEGER, callchainId INTEGER)`
	// gtid is globalTid (1<<48) + 1000<<24 + 1001: VM 1, pid 1000, tid 1001;
	// gpid is the matching globalPid.
	gtid = "281491753927657"
	gpid = "281491753926656"
)

// synthExport writes an export with StringIds, META_DATA_EXPORT and the
// given statements into a new temporary folder.
func synthExport(t testing.TB, stmts ...string) string {
	t.Helper()
	base := []string{ddlStrings, ddlMeta,
		`INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2099.1.0'), ('EXPORT_PARAM_LAZY', 'true')`}
	return synthDB(t, filepath.Join(t.TempDir(), "synth.sqlite"), append(base, stmts...)...)
}

func TestGlobalTidPacking(t *testing.T) {
	if pid, tid := splitGlobalID(281491753927657); pid != 1000 || tid != 1001 {
		t.Fatalf("pid %d tid %d", pid, tid)
	}
}

func TestGraphTrace(t *testing.T) {
	path := synthExport(t, ddlRuntime, ddlGraph,
		`INSERT INTO StringIds VALUES (1, 'cudaGraphLaunch_v10000')`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 150, 0, `+gtid+`, 7, 1, 0, NULL)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (200, 900, 0, 1, NULL, 13, 7, `+gpid+`, 5, 9)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (0, 0, 0, 1, NULL, 13, 8, `+gpid+`, 5, 9)`)
	var warns []string
	tl, err := ReadFile(path, Options{Warn: func(m string) { warns = append(warns, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Events) != 2 {
		t.Fatalf("%d events, want 2", len(tl.Events))
	}
	g := &tl.Events[1]
	if g.Kind != timeline.KindKernel || !g.Has(timeline.FlagGraph) || tl.Name(g.Name) != "CUDA Graph 5" ||
		g.Start != 200 || g.End != 900 || g.Proc != 1000 || g.Link != 0 {
		t.Errorf("graph event %+v %q", *g, tl.Name(g.Name))
	}
	if tr := tl.TrackOf(1); tr.Kind != timeline.TrackGPU || tr.Device != 0 || tr.Stream != 13 {
		t.Errorf("graph track %+v", tr)
	}
	if api := &tl.Events[0]; api.API != timeline.APILaunch || api.Link != 1 {
		t.Errorf("launch %+v", *api)
	}
	if !tl.Observed.GPU || !tl.Observed.APICalls || tl.Observed.MemoryKinds || tl.Observed.NVTX || tl.Observed.OSCalls {
		t.Errorf("observed %+v", tl.Observed)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "CUPTI_ACTIVITY_KIND_GRAPH_TRACE: skipped 1 graph executions without timestamps") {
		t.Errorf("warnings %q", warns)
	}
}

func TestMissingTables(t *testing.T) {
	// Kernels only: no API, OS, NVTX, copies, threads or GPU info.
	path := synthExport(t, ddlKernel,
		`INSERT INTO StringIds VALUES (1, 'k_short'), (2, 'void k_long<int>()')`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 1, NULL, 7, 3, `+gpid+`, 2, 1, NULL, 0)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (30, 40, 0, 1, NULL, 7, 4, `+gpid+`, 2, 1, NULL, 12)`)
	tl := read(t, path)
	want := timeline.Observed{GPU: true, CanOSCalls: true, CanNVTX: true}
	if tl.Observed != want {
		t.Errorf("observed %+v, want %+v", tl.Observed, want)
	}
	if len(tl.Events) != 2 || tl.EventName(0) != "k_short" || tl.Events[0].Has(timeline.FlagGraph) ||
		!tl.Events[1].Has(timeline.FlagGraph) || tl.Events[0].Link != -1 {
		t.Errorf("events %+v", tl.Events)
	}
	if tl.Source.Version != "2099.1.0" || len(tl.Devices) != 0 {
		t.Errorf("source %+v devices %v", tl.Source, tl.Devices)
	}
}

func TestErrNoCUDA(t *testing.T) {
	path := synthExport(t, ddlOSRT,
		`INSERT INTO StringIds VALUES (1, 'munmap')`,
		`INSERT INTO OSRT_API VALUES (10, 20, 27, `+gtid+`, 1, 0, 0, NULL)`)
	_, err := ReadFile(path, Options{})
	if !errors.Is(err, ErrNoCUDA) || err.Error() != "nsys: no CUDA activity: capture with --trace=cuda" {
		t.Errorf("err = %v", err)
	}
}

func TestErrNotNsys(t *testing.T) {
	dir := t.TempDir()
	other := synthDB(t, filepath.Join(dir, "other.sqlite"),
		`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)`, `INSERT INTO users VALUES (1, 'a')`)
	strs := synthDB(t, filepath.Join(dir, "strings.sqlite"), ddlStrings) // StringIds alone
	text := filepath.Join(dir, "trace.json")
	if err := os.WriteFile(text, []byte(`{"traceEvents": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.sqlite")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{other, strs, text, empty, dir} {
		_, err := ReadFile(p, Options{})
		if !errors.Is(err, ErrNotNsys) || !strings.HasPrefix(err.Error(), "nsys: not an nsys export") {
			t.Errorf("%s: err = %v", filepath.Base(p), err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "absent.sqlite"), Options{}); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: err = %v", err)
	}
}

func TestNVTXKinds(t *testing.T) {
	path := synthExport(t, ddlRuntime, ddlNVTX,
		`INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'registered')`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 5000, 0, `+gtid+`, 1, 1, 0, NULL)`,
		`INSERT INTO NVTX_EVENTS (start, end, eventType, text, textId, globalTid) VALUES
			(50, 60, 59, 'step', NULL, `+gtid+`),
			(70, NULL, 59, 'enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__', NULL, `+gtid+`),
			(80, 90, 60, NULL, 2, `+gtid+`),
			(95, NULL, 34, 'mark', NULL, `+gtid+`),
			(96, NULL, 39, 'thread name', NULL, `+gtid+`),
			(97, NULL, 75, 'domain', NULL, `+gtid+`)`)
	tl := read(t, path)
	var got []string
	for i := range tl.Events {
		e := &tl.Events[i]
		got = append(got, e.Kind.String()+" "+tl.Name(e.Name))
		switch tl.Name(e.Name) {
		case "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__":
			if e.Range != timeline.RangeDataLoader || !e.Has(timeline.FlagOpenEnd) || e.End != 5000 {
				t.Errorf("open DataLoader range %+v", *e)
			}
		case "step", "registered":
			if e.Range != timeline.RangeNVTX || e.Has(timeline.FlagOpenEnd) {
				t.Errorf("range %+v", *e)
			}
		case "mark":
			if e.Kind != timeline.KindMarker || e.End != e.Start {
				t.Errorf("mark %+v", *e)
			}
		}
	}
	want := []string{"range step", "range enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
		"range registered", "marker mark", "api cudaLaunchKernel_v7000"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if !tl.Observed.NVTX || !tl.Observed.DataLoader {
		t.Errorf("observed %+v", tl.Observed)
	}
}

// allFixtures lists the shared nsys and H200 exports (skipping when the
// shared corpus is absent).
func allFixtures(t *testing.T) []string {
	t.Helper()
	files := testfix.SharedGlob(t, "nsys", "*.sqlite")
	return append(files, testfix.SharedGlob(t, "h200", "*.sqlite")...)
}

// nsysFixture returns ../shared/fixtures/nsys/<name>.
func nsysFixture(t *testing.T, name string) string {
	t.Helper()
	return testfix.Shared(t, "nsys", name)
}

// openSQL opens path read-only through database/sql, for computing expected
// figures a second, independent way.
func openSQL(t testing.TB, path string) *sql.DB {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: "mode=ro"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// hasTable reports whether db has table name.
func hasTable(t testing.TB, db *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// countRows is SELECT count(*) FROM table WHERE where (0 for an absent table).
func countRows(t testing.TB, db *sql.DB, table, where string) int64 {
	t.Helper()
	if !hasTable(t, db, table) {
		return 0
	}
	q := "SELECT count(*) FROM " + table
	if where != "" {
		q += " WHERE " + where
	}
	var n int64
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// read reads path, failing the test on error, and validates the result.
func read(t testing.TB, path string) *timeline.Timeline {
	t.Helper()
	tl, err := ReadFile(path, Options{})
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", filepath.Base(path), err)
	}
	if err := tl.Validate(); err != nil {
		t.Fatalf("%s: Validate: %v", filepath.Base(path), err)
	}
	return tl
}

// kinds counts events by kind.
func kinds(tl *timeline.Timeline) map[timeline.Kind]int64 {
	m := map[timeline.Kind]int64{}
	for i := range tl.Events {
		m[tl.Events[i].Kind]++
	}
	return m
}

// copyTemp copies src into dir under name and returns the new path.
func copyTemp(t testing.TB, src, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// listDir returns "name size" for every entry of dir, sorted.
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d %v", e.Name(), info.Size(), info.ModTime().UnixNano()))
	}
	slices.Sort(out)
	return out
}

// synthDB creates an SQLite database at path by running stmts.
func synthDB(t testing.TB, path string, stmts ...string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}
