package nsys

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline"
)

// readBoth reads path through SQLite only and with the fast path, and
// returns both results, their warnings and how many tasks each way the
// second read took.
type readResult struct {
	tl    *timeline.Timeline
	err   error
	warns []string
}

func readWith(path string, slow bool) (r readResult, fast, viaSQLite int) {
	defer func(v bool) { noFastPath = v; onTask = nil }(noFastPath)
	noFastPath = slow
	var mu sync.Mutex
	onTask = func(_ string, f bool) {
		mu.Lock()
		defer mu.Unlock()
		if f {
			fast++
		} else {
			viaSQLite++
		}
	}
	r.tl, r.err = ReadFile(path, Options{Warn: func(m string) { r.warns = append(r.warns, m) }})
	return r, fast, viaSQLite
}

// sameTimeline fails unless a and b are identical: events, names, tracks,
// devices, what was observed.
func sameTimeline(t *testing.T, a, b *timeline.Timeline) {
	t.Helper()
	if len(a.Events) != len(b.Events) || a.NumNames() != b.NumNames() || len(a.Tracks) != len(b.Tracks) {
		t.Fatalf("%d/%d events, %d/%d names, %d/%d tracks", len(a.Events), len(b.Events), a.NumNames(), b.NumNames(), len(a.Tracks), len(b.Tracks))
	}
	for i := range a.Events {
		if a.Events[i] != b.Events[i] {
			t.Fatalf("event %d: %+v, SQLite %+v", i, a.Events[i], b.Events[i])
		}
	}
	for i := 0; i < a.NumNames(); i++ {
		if n, m := a.Name(timeline.NameID(i)), b.Name(timeline.NameID(i)); n != m {
			t.Fatalf("name %d: %q, SQLite %q", i, n, m)
		}
	}
	if !reflect.DeepEqual(a.Tracks, b.Tracks) || !reflect.DeepEqual(a.Devices, b.Devices) ||
		a.Observed != b.Observed || a.Source != b.Source {
		t.Fatal("tracks, devices, source or observed differ")
	}
}

// TestFastPathMatchesSQLite reads every fixture export through SQLite and
// with the fast path (in small rowid ranges, on several workers) and
// requires the same timeline and warnings, with every task read fast.
func TestFastPathMatchesSQLite(t *testing.T) {
	files := append(allFixtures(t), testfix.SharedGlob(t, "h200-ddp", "*.sqlite")...)
	defer func(c uint64, w int) { chunkRows, maxWorkers = c, w }(chunkRows, maxWorkers)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			chunkRows, maxWorkers = 1<<18, 0
			want, _, _ := readWith(path, true)
			if want.err != nil {
				t.Fatal(want.err)
			}
			for _, rows := range []uint64{1 << 18, 1013} {
				chunkRows, maxWorkers = rows, 3
				got, fast, slow := readWith(path, false)
				if got.err != nil {
					t.Fatal(got.err)
				}
				if slow > 0 || fast == 0 {
					t.Errorf("chunks of %d rows: %d tasks fast, %d through SQLite", rows, fast, slow)
				}
				sameTimeline(t, got.tl, want.tl)
				if strings.Join(got.warns, "\n") != strings.Join(want.warns, "\n") {
					t.Errorf("warnings:\n%v\nSQLite:\n%v", got.warns, want.warns)
				}
			}
		})
	}
}

// TestFastPathLeavesToSQLite covers what the fast path hands to SQLite or
// reads in its own way: numbers in a text column, a column added with a
// default after rows were written, REAL columns, a DESC primary key, NULL
// and oversized values, and rows that are errors. The result must be the
// one SQLite gives.
func TestFastPathLeavesToSQLite(t *testing.T) {
	ddlText := `CREATE TABLE NVTX_EVENTS (start, end, eventType, text, textId, globalTid)`
	kernel := `CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, shortName)`
	cases := []struct {
		name      string
		stmts     []string
		wantSlow  bool // some task must be read again through SQLite
		wantError bool
	}{
		{"number-as-text", []string{ddlText, kernel,
			`INSERT INTO NVTX_EVENTS VALUES (1, 5, 59, 'a', NULL, ` + gtid + `), (2, 4, 59, 12, NULL, ` + gtid + `), (3, 4, 59, 2.5, NULL, ` + gtid + `)`},
			true, false},
		{"blob-text", []string{ddlText, kernel,
			`INSERT INTO NVTX_EVENTS VALUES (1, 5, 59, x'6869', NULL, ` + gtid + `)`}, false, false},
		{"added-column-default", []string{
			`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, shortName INTEGER)`,
			`INSERT INTO StringIds VALUES (1, 'k')`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 1)`,
			`ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN correlationId INTEGER DEFAULT 99`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (30, 40, 0, 7, 1, 5)`}, true, false},
		{"added-column-null", []string{
			`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, shortName INTEGER)`,
			`INSERT INTO StringIds VALUES (1, 'k')`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 1)`,
			`ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN correlationId INTEGER`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (30, 40, 0, 7, 1, 5)`}, false, false},
		{"real-columns", []string{
			`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start REAL, end DOUBLE, deviceId FLOAT, streamId INTEGER, shortName INTEGER, correlationId REAL)`,
			`INSERT INTO StringIds VALUES (1, 'k')`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20.0, 0, 7, 1, 3), (30, 40, 0, 7, 1, 4.0)`}, false, false},
		{"real-not-integral", []string{
			`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start REAL, end REAL, deviceId INTEGER, streamId INTEGER, shortName INTEGER)`,
			`INSERT INTO StringIds VALUES (1, 'k')`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20.5, 0, 7, 1)`}, true, true},
		{"desc-key", []string{`DROP TABLE StringIds`,
			`CREATE TABLE StringIds (id INTEGER PRIMARY KEY DESC, value TEXT)`,
			`INSERT INTO StringIds VALUES (1, 'k'), (5, 'cudaLaunchKernel')`,
			ddlRuntime,
			`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 150, 0, ` + gtid + `, 7, 5, 0, NULL)`,
			`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, shortName INTEGER)`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (160, 170, 0, 7, 1)`}, true, false},
		{"coalesce", []string{ddlKernel,
			`INSERT INTO StringIds VALUES (1, 'short'), (2, 'long name')`,
			`DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL`,
			`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, demangledName, shortName)`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 2, 1), (30, 40, 0, 7, 2, NULL), (50, 60, 0, 7, NULL, NULL)`}, false, false},
		{"text-in-int", []string{
			`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, shortName)`,
			`INSERT INTO StringIds VALUES (1, 'k')`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 'seven', 1)`}, true, true},
		{"huge-float", []string{
			`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, shortName)`,
			`INSERT INTO StringIds VALUES (1, 'k')`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 1e300, 0, 7, 1)`}, true, true},
		{"long-names", []string{
			`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, shortName)`,
			`INSERT INTO StringIds VALUES (1, '` + strings.Repeat("void kernel<float>", 3000) + `')`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 1)`}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := synthExport(t, c.stmts...)
			want, _, _ := readWith(path, true)
			got, fast, slow := readWith(path, false)
			if (want.err != nil) != c.wantError {
				t.Fatalf("SQLite path: %v", want.err)
			}
			if (slow > 0) != c.wantSlow || (!c.wantSlow && fast == 0) {
				t.Errorf("%d tasks fast, %d through SQLite", fast, slow)
			}
			if fmt.Sprint(got.err) != fmt.Sprint(want.err) {
				t.Fatalf("error %v, SQLite %v", got.err, want.err)
			}
			if want.err == nil {
				sameTimeline(t, got.tl, want.tl)
			}
			if strings.Join(got.warns, "\n") != strings.Join(want.warns, "\n") {
				t.Errorf("warnings:\n%v\nSQLite:\n%v", got.warns, want.warns)
			}
		})
	}
}

// TestFastPathCorrupt damages table pages of a real export: where the fast
// path fails, SQLite reads the task again and its result (an error, here)
// is the one returned.
func TestFastPathCorrupt(t *testing.T) {
	src := nsysFixture(t, "nsys-2024.5.1_cloverleaf-syncmemcpy-devsync-osrt_pipit.sqlite")
	dir := t.TempDir()
	vac := copyTemp(t, src, dir, "vacuumed.sqlite")
	synthDB(t, vac, "VACUUM")
	data, err := os.ReadFile(vac)
	if err != nil {
		t.Fatal(err)
	}
	for k, at := range []float64{0.5, 0.7, 0.9} {
		b := append([]byte{}, data...)
		ps := 4096
		pg := int(float64(len(b)/ps)*at) * ps
		for i := pg; i < pg+ps; i += 7 {
			b[i] ^= 0x5a
		}
		p := filepath.Join(dir, fmt.Sprintf("c%d.sqlite", k))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		want, _, _ := readWith(p, true)
		got, _, _ := readWith(p, false)
		if fmt.Sprint(got.err) != fmt.Sprint(want.err) {
			t.Errorf("page at %.0f%%: error %v, SQLite %v", at*100, got.err, want.err)
		}
		if want.err == nil && got.err == nil {
			sameTimeline(t, got.tl, want.tl)
		}
	}
}
