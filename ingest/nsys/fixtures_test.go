package nsys

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline"
)

// Expected figures are computed here with plain SQL over the export and the
// enum tables of the nsys documentation (AG §SQLite Schema Event Values),
// independently of the reader.

// testCopyKinds is nsys's copyKind numbering.
var testCopyKinds = map[int64]timeline.CopyKind{
	0: timeline.CopyUnknown, 1: timeline.CopyHtoD, 2: timeline.CopyDtoH,
	3: timeline.CopyArray, 4: timeline.CopyArray, 5: timeline.CopyArray, 6: timeline.CopyArray, 7: timeline.CopyArray,
	8: timeline.CopyDtoD, 9: timeline.CopyHtoH, 10: timeline.CopyPtoP,
	11: timeline.CopyUnified, 12: timeline.CopyUnified, 13: timeline.CopyUnified,
}

// testMemKinds is nsys's memory-kind numbering (not CUPTI's).
var testMemKinds = map[int64]timeline.MemKind{
	0: timeline.MemPageable, 1: timeline.MemPinned, 2: timeline.MemDevice, 3: timeline.MemArray,
	4: timeline.MemManaged, 5: timeline.MemDevice, 6: timeline.MemManaged, 7: timeline.MemUnknown,
}

func TestFixtureCounts(t *testing.T) {
	for _, path := range allFixtures(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t0 := time.Now()
			tl := read(t, path)
			elapsed := time.Since(t0)
			db := openSQL(t, path)
			want := map[timeline.Kind]int64{
				timeline.KindKernel:  countRows(t, db, tabKernel, "") + countRows(t, db, tabGraph, ""),
				timeline.KindMemcpy:  countRows(t, db, tabMemcpy, ""),
				timeline.KindMemset:  countRows(t, db, tabMemset, ""),
				timeline.KindGPUSync: countRows(t, db, tabSync, ""),
				timeline.KindAPI:     countRows(t, db, tabRuntime, "eventClass IN (0, 1)"),
				timeline.KindOS:      countRows(t, db, tabOSRT, "eventClass IS NULL OR eventClass NOT IN (31, 32)"),
				timeline.KindRange:   countRows(t, db, tabNVTX, "eventType IN (59, 60)"),
				timeline.KindMarker:  countRows(t, db, tabNVTX, "eventType = 34"),
			}
			got := kinds(tl)
			for k, n := range want {
				if got[k] != n {
					t.Errorf("%s events: got %d, want %d", k, got[k], n)
				}
			}
			if len(got) > len(want) {
				t.Errorf("unexpected kinds: %v", got)
			}
			checkMemcpyBytes(t, db, tl)
			checkSource(t, db, tl, path)
			if n := countRows(t, db, tabGPU, ""); int64(len(tl.Devices)) != n {
				t.Errorf("devices: got %d, want %d", len(tl.Devices), n)
			}
			if !tl.Observed.GPU || !tl.Observed.APICalls {
				t.Errorf("observed: %+v", tl.Observed)
			}
			if tl.Observed.NVTX != (countRows(t, db, tabNVTX, "") > 0) {
				t.Errorf("observed NVTX %v", tl.Observed.NVTX)
			}
			t.Logf("%d events (%d kernels, %d memcpys, %d memsets, %d API, %d OS, %d ranges), %d tracks, read in %v",
				len(tl.Events), got[timeline.KindKernel], got[timeline.KindMemcpy], got[timeline.KindMemset],
				got[timeline.KindAPI], got[timeline.KindOS], got[timeline.KindRange], len(tl.Tracks), elapsed.Round(time.Microsecond))
		})
	}
}

// checkMemcpyBytes compares copy bytes summed by direction and memory kinds.
func checkMemcpyBytes(t *testing.T, db *sql.DB, tl *timeline.Timeline) {
	t.Helper()
	key := func(c timeline.CopyKind, s, d timeline.MemKind) string { return fmt.Sprintf("%s %s->%s", c, s, d) }
	want := map[string]int64{}
	if hasTable(t, db, tabMemcpy) {
		rows, err := db.Query("SELECT copyKind, srcKind, dstKind, sum(bytes) FROM " + tabMemcpy + " GROUP BY 1, 2, 3")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var ck, sk, dk, n int64
			if err := rows.Scan(&ck, &sk, &dk, &n); err != nil {
				t.Fatal(err)
			}
			want[key(testCopyKinds[ck], testMemKinds[sk], testMemKinds[dk])] += n
		}
	}
	got := map[string]int64{}
	for i := range tl.Events {
		if e := &tl.Events[i]; e.Kind == timeline.KindMemcpy {
			got[key(e.Copy, e.Src, e.Dst)] += e.Bytes
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("memcpy bytes:\n got %v\nwant %v", got, want)
	}
}

// checkSource compares the source with the export's metadata.
func checkSource(t *testing.T, db *sql.DB, tl *timeline.Timeline, path string) {
	t.Helper()
	var version string
	for _, meta := range []string{"META_DATA_EXPORT", "EXPORT_META_DATA"} {
		if hasTable(t, db, meta) {
			if err := db.QueryRow("SELECT value FROM " + meta + " WHERE name='EXPORT_PRODUCT_VERSION'").Scan(&version); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if version == "" {
		t.Fatal("fixture without a product version")
	}
	want := timeline.Source{Path: path, Format: "nsys-sqlite", Version: version}
	if tl.Source != want {
		t.Errorf("source %+v, want %+v", tl.Source, want)
	}
}

// BenchmarkReadFile reads the H200 r0_baseline export (about 8,000 events).
func BenchmarkReadFile(b *testing.B) {
	path := testfix.Shared(b, "h200", "r0_baseline.nsys.sqlite")
	benchRead(b, path)
}

// BenchmarkReadFileLarge reads an export of about 2.4 M rows made by
// repeating r0_baseline's activity 300 times, with 1 and 2 connections.
func BenchmarkReadFileLarge(b *testing.B) {
	if testing.Short() {
		b.Skip("large export: skipped in -short mode")
	}
	src := testfix.Shared(b, "h200", "r0_baseline.nsys.sqlite")
	path := largeExport(b, src, 300)
	defer func(n int) { maxWorkers = n }(maxWorkers)
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			maxWorkers = w
			benchRead(b, path)
		})
	}
}

// benchRead reads path b.N times and reports rows (events) per second.
func benchRead(b *testing.B, path string) {
	b.ReportAllocs()
	var events int
	for b.Loop() {
		tl, err := ReadFile(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		events = len(tl.Events)
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(events), "rows")
}

// largeExport copies src into a temporary folder and repeats the rows of its
// activity tables reps times, shifted in time and correlation id.
func largeExport(b *testing.B, src string, reps int) string {
	b.Helper()
	path := copyTemp(b, src, b.TempDir(), "large.sqlite")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var span int64
	if err := db.QueryRow("SELECT max(end) FROM " + tabRuntime).Scan(&span); err != nil {
		b.Fatal(err)
	}
	span += 1000
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range []string{tabKernel, tabRuntime, tabMemcpy, tabMemset, tabSync, tabOSRT, tabNVTX} {
		rows, err := tx.Query("SELECT name FROM pragma_table_info('" + t + "')")
		if err != nil {
			b.Fatal(err)
		}
		var cols []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				b.Fatal(err)
			}
			switch c {
			case "start", "end":
				c = fmt.Sprintf("%s + $shift", c)
			case "correlationId":
				c = "correlationId + $corr"
			}
			cols = append(cols, c)
		}
		rows.Close()
		base := "base_" + strings.ToLower(t)
		if _, err := tx.Exec("CREATE TEMP TABLE " + base + " AS SELECT * FROM " + t); err != nil {
			b.Fatal(err)
		}
		q := "INSERT INTO " + t + " SELECT " + strings.Join(cols, ", ") + " FROM " + base
		for r := 1; r < reps; r++ {
			q := strings.ReplaceAll(strings.ReplaceAll(q, "$shift", fmt.Sprint(int64(r)*span)), "$corr", fmt.Sprint(r*100000))
			if _, err := tx.Exec(q); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	b.Logf("large export: %s", filepath.Base(path))
	return path
}
