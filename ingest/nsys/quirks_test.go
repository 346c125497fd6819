package nsys

import (
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline"
)

// Version quirks, each checked on the real export that shows it.

func TestNoEnumTables2022(t *testing.T) {
	path := nsysFixture(t, "nsys-2022.2.1_saxpy-mpi-nvtx_pipit.sqlite")
	db := openSQL(t, path)
	if n := countRows(t, db, "sqlite_master", "type='table' AND name LIKE 'ENUM%'"); n != 0 {
		t.Fatalf("fixture has %d ENUM tables", n)
	}
	tl := read(t, path)
	got := map[string]int64{}
	for i := range tl.Events {
		if e := &tl.Events[i]; e.Kind == timeline.KindMemcpy {
			got[e.Copy.String()+" "+e.Src.String()+"->"+e.Dst.String()] += e.Bytes
		}
	}
	want := map[string]int64{"HtoD pageable->device": 2621440000, "DtoH device->pageable": 1310720000}
	if !equalMaps(got, want) {
		t.Errorf("memcpy bytes %v, want %v", got, want)
	}
	if tl.Observed.OSCalls {
		t.Error("OSCalls: an empty OSRT_API in a --lazy=false export is not a traced one")
	}
}

func equalMaps(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestMetadataTableNames(t *testing.T) {
	for name, version := range map[string]string{
		"nsys-2022.4.2_gaussian-threadsync-8k-kernels_rodinia.sqlite":   "2022.4.2.1",   // EXPORT_META_DATA
		"nsys-2024.5.1_cloverleaf-syncmemcpy-devsync-osrt_pipit.sqlite": "2024.5.1.113", // META_DATA_EXPORT
	} {
		if tl := read(t, nsysFixture(t, name)); tl.Source.Version != version {
			t.Errorf("%s: version %q, want %q", name, tl.Source.Version, version)
		}
	}
}

func TestBacktraceRowsDropped(t *testing.T) {
	path := nsysFixture(t, "nsys-2022.2.1_saxpy-mpi-nvtx_pipit.sqlite")
	db := openSQL(t, path)
	if n := countRows(t, db, tabRuntime, "eventClass = 67"); n != 38 {
		t.Fatalf("fixture has %d eventClass-67 rows, want 38", n)
	}
	tl := read(t, path)
	if n := kinds(tl)[timeline.KindAPI]; n != 95-38 {
		t.Errorf("%d API events, want 57", n)
	}
	for i := range tl.Events {
		if e := &tl.Events[i]; e.Kind == timeline.KindAPI && e.Flags&timeline.FlagDriver == 0 && !strings.Contains(tl.Name(e.Name), "_v") {
			t.Errorf("runtime call without ABI suffix %q: a backtrace row?", tl.Name(e.Name))
		}
	}
}

func TestNVTXTextID(t *testing.T) {
	for _, name := range []string{
		"nsys-2022.2.1_saxpy-mpi-nvtx_pipit.sqlite",
		"nsys-2026.2.1_torch-2gpu-nvtx-before-window_nsysai.sqlite",
	} {
		path := nsysFixture(t, name)
		db := openSQL(t, path)
		if n := countRows(t, db, tabNVTX, "text IS NULL AND textId IS NOT NULL"); n == 0 {
			t.Fatalf("%s: no textId ranges", name)
		}
		want := queryStrings(t, db, "SELECT COALESCE(n.text, s.value, '') FROM NVTX_EVENTS n "+
			"LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType IN (59, 60)")
		tl := read(t, path)
		var got []string
		for i := range tl.Events {
			if tl.Events[i].Kind == timeline.KindRange {
				got = append(got, tl.EventName(int32(i)))
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: range names differ (%d vs %d)", name, len(got), len(want))
		}
	}
}

// queryStrings returns the sorted first column of q.
func queryStrings(t testing.TB, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func TestDriverOnlyAPI(t *testing.T) {
	tl := read(t, nsysFixture(t, "nsys-2023.1.2_julia-driverapi-osrt_trixicuda.sqlite"))
	n := 0
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind == timeline.KindAPI && e.Flags&timeline.FlagDriver == 0 {
			t.Errorf("runtime call %q in a driver-only capture", tl.Name(e.Name))
		}
		if e.Kind != timeline.KindKernel {
			continue
		}
		n++
		if e.Link < 0 {
			t.Fatal("kernel not linked to its launch")
		}
		api := &tl.Events[e.Link]
		if name := tl.Name(api.Name); !strings.HasPrefix(name, "cuLaunchKernel") || api.API != timeline.APILaunch ||
			!api.Has(timeline.FlagDriver) || api.Link != int32(i) {
			t.Errorf("kernel linked to %q (%s, flags %b, link %d)", name, api.API, api.Flags, api.Link)
		}
	}
	if n != 1 {
		t.Errorf("%d kernels, want 1", n)
	}
}

func TestCorrelationCollisions(t *testing.T) {
	path := nsysFixture(t, "nsys-2026.2.1_torch-2gpu-nvtx-before-window_nsysai.sqlite")
	db := openSQL(t, path)
	var collisions, orphans int64
	if err := db.QueryRow(`SELECT count(*) FROM (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME
		WHERE eventClass IN (0, 1) GROUP BY correlationId HAVING count(DISTINCT (globalTid >> 24) & 16777215) > 1)`).Scan(&collisions); err != nil {
		t.Fatal(err)
	}
	if collisions != 264 {
		t.Fatalf("%d correlation ids repeat across processes, want 264", collisions)
	}
	if err := db.QueryRow(`SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS (
		SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId
		AND (r.globalTid >> 24) & 16777215 = (k.globalPid >> 24) & 16777215 AND r.eventClass IN (0, 1))`).Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	tl := read(t, path)
	var linked, unlinked int64
	procs := map[uint32]bool{}
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind != timeline.KindKernel {
			continue
		}
		procs[e.Proc] = true
		if e.Link < 0 {
			unlinked++
			continue
		}
		linked++
		if api := &tl.Events[e.Link]; api.Kind != timeline.KindAPI || api.Proc != e.Proc || api.Corr != e.Corr {
			t.Fatalf("kernel %d linked to %s of process %d", i, api.Kind, api.Proc)
		}
		if tl.TrackOf(e.Link).PID != int64(e.Proc) {
			t.Fatalf("kernel %d linked to an API call on another process's thread", i)
		}
	}
	if len(procs) != 2 || unlinked != orphans || linked+unlinked != 4010 {
		t.Errorf("%d processes, %d linked, %d unlinked kernels (want %d without an API row)", len(procs), linked, unlinked, orphans)
	}
}

func TestNoTargetInfoGPU(t *testing.T) {
	path := nsysFixture(t, "nsys-2026.2.1_torch-2gpu-nvtx-after-window_nsysai.sqlite")
	if hasTable(t, openSQL(t, path), tabGPU) {
		t.Fatal("fixture has TARGET_INFO_GPU")
	}
	tl := read(t, path)
	if len(tl.Devices) != 0 {
		t.Errorf("devices %v", tl.Devices)
	}
	devs := map[int64]bool{}
	for _, tr := range tl.Tracks {
		if tr.Kind == timeline.TrackGPU {
			devs[tr.Device] = true
		}
	}
	if len(devs) != 2 {
		t.Errorf("GPU tracks on %d devices, want 2", len(devs))
	}
}

func TestDevices(t *testing.T) {
	tl := read(t, nsysFixture(t, "nsys-2024.6.2_nvfuser-nvtx-8gpu-host_fuser.sqlite"))
	if len(tl.Devices) != 8 {
		t.Fatalf("%d devices, want 8", len(tl.Devices))
	}
	for i, d := range tl.Devices {
		if d.ID != int64(i) || d.Name != "NVIDIA H100 80GB HBM3" || d.SMs != 132 || d.MemoryBytes != 84942979072 {
			t.Errorf("device %d: %+v", i, d)
		}
	}
}

func TestH200Baseline(t *testing.T) {
	path := testfix.Shared(t, "h200", "r0_baseline.nsys.sqlite")
	tl := read(t, path)
	big := 0
	ranges := map[string]int{}
	os := map[string]int{}
	for i := range tl.Events {
		e := &tl.Events[i]
		switch e.Kind {
		case timeline.KindMemcpy:
			if e.Bytes == 64*3*512*512*4 { // one 201 MB float32 batch
				big++
				if e.Copy != timeline.CopyHtoD || e.Src != timeline.MemPageable || e.Dst != timeline.MemDevice {
					t.Errorf("batch copy %s %s -> %s", e.Copy, e.Src, e.Dst)
				}
				if name := tl.Name(e.Name); name != "Memcpy HtoD (Pageable -> Device)" {
					t.Errorf("batch copy named %q", name)
				}
				if e.Link < 0 || tl.Events[e.Link].API != timeline.APIMemcpyAsync {
					t.Errorf("batch copy not linked to cudaMemcpyAsync")
				}
			}
		case timeline.KindRange:
			ranges[tl.Name(e.Name)]++
		case timeline.KindOS:
			os[tl.Name(e.Name)]++
		}
	}
	if big != 6 {
		t.Errorf("%d batch copies, want 6 (one per step)", big)
	}
	for _, name := range []string{"get batch", "copy batch", "compute"} {
		if ranges[name] != 6 {
			t.Errorf("%d %q ranges, want 6", ranges[name], name)
		}
	}
	// This capture recorded no munmap (its OS calls are polls and condition
	// waits); the streams variant has them.
	if os["poll"] != 41 || os["pthread_cond_wait"] != 11 || os["munmap"] != 0 {
		t.Errorf("OS calls %v", os)
	}
	if !tl.Observed.OSCalls || !tl.Observed.NVTX || !tl.Observed.MemoryKinds || tl.Observed.DataLoader {
		t.Errorf("observed %+v", tl.Observed)
	}
	named := false
	for _, tr := range tl.Tracks {
		named = named || (tr.Kind == timeline.TrackHost && tr.Name == "python3")
	}
	if !named {
		t.Error("no host track named python3")
	}

	tl = read(t, testfix.Shared(t, "h200", "r3_streams.nsys.sqlite"))
	munmap := 0
	for i := range tl.Events {
		if e := &tl.Events[i]; e.Kind == timeline.KindOS && tl.Name(e.Name) == "munmap" {
			munmap++
		}
	}
	if munmap != 62 {
		t.Errorf("r3_streams: %d munmap calls, want 62", munmap)
	}
}

// Synthetic quirks.

func TestEnumMaps(t *testing.T) {
	mem := []timeline.MemKind{timeline.MemPageable, timeline.MemPinned, timeline.MemDevice, timeline.MemArray,
		timeline.MemManaged, timeline.MemDevice, timeline.MemManaged, timeline.MemUnknown, timeline.MemUnknown}
	for code, want := range mem {
		if got := memKind(int64(code)); got != want {
			t.Errorf("memKind(%d) = %s, want %s (nsys numbering, not CUPTI's)", code, got, want)
		}
	}
	if memKind(-1) != timeline.MemUnknown || copyKind(-1) != timeline.CopyUnknown || copyKind(14) != timeline.CopyUnknown {
		t.Error("out-of-range codes must be unknown")
	}
	for code, want := range map[int64]timeline.CopyKind{1: timeline.CopyHtoD, 2: timeline.CopyDtoH, 3: timeline.CopyArray,
		7: timeline.CopyArray, 8: timeline.CopyDtoD, 9: timeline.CopyHtoH, 10: timeline.CopyPtoP, 11: timeline.CopyUnified, 13: timeline.CopyUnified} {
		if got := copyKind(code); got != want {
			t.Errorf("copyKind(%d) = %s, want %s", code, got, want)
		}
	}
	for _, tc := range [][2]string{
		{memcpyName(1, 0, 2), "Memcpy HtoD (Pageable -> Device)"},
		{memcpyName(2, 2, 1), "Memcpy DtoH (Device -> Pinned)"},
		{memcpyName(12, 7, 7), "Unified Memcpy DtoH"},
		{memcpyName(99, 5, 99), "Memcpy Unknown (Device Static -> Unknown)"},
		{memsetName(2), "Memset (Device)"},
		{syncName(3), "Stream Sync"},
	} {
		if tc[0] != tc[1] {
			t.Errorf("name %q, want %q", tc[0], tc[1])
		}
	}
}

// TestNonLazyExport: with --lazy=false every table exists, so an empty one
// means "not traced"; the metadata table is the older EXPORT_META_DATA.
func TestNonLazyExport(t *testing.T) {
	ddl := []string{ddlStrings, `CREATE TABLE EXPORT_META_DATA (name TEXT, value TEXT)`,
		`INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_PRODUCT_VERSION', '2022.2.1.31'), ('EXPORT_LAZY', 'false')`,
		ddlKernel, ddlRuntime, ddlOSRT, ddlNVTX}
	dir := t.TempDir()
	empty := synthDB(t, filepath.Join(dir, "empty.sqlite"), ddl...)
	if _, err := ReadFile(empty, Options{}); !errors.Is(err, ErrNoCUDA) {
		t.Errorf("all tables empty: err = %v", err)
	}
	path := synthDB(t, filepath.Join(dir, "kernels.sqlite"), append(ddl,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 1, NULL, 7, 3, `+gpid+`, 0, 0, NULL, 0)`)...)
	tl := read(t, path)
	if want := (timeline.Observed{GPU: true, CanOSCalls: true, CanNVTX: true}); tl.Observed != want || tl.Source.Version != "2022.2.1.31" {
		t.Errorf("observed %+v, version %q", tl.Observed, tl.Source.Version)
	}
}

// TestOSRTTracedWithoutRows: META_DATA_CAPTURE records the OS runtime trace
// options even when no call passed the duration threshold.
func TestOSRTTracedWithoutRows(t *testing.T) {
	path := synthExport(t, ddlLooseKernel, `CREATE TABLE META_DATA_CAPTURE (name TEXT, value TEXT)`,
		`INSERT INTO META_DATA_CAPTURE VALUES ('OS_RUNTIME_OPTIONS:DURATION_THRESHOLD_NS', '1000')`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 1, 0, NULL, NULL)`)
	if tl := read(t, path); !tl.Observed.OSCalls || kinds(tl)[timeline.KindOS] != 0 {
		t.Errorf("observed %+v", tl.Observed)
	}
}

// TestOddRowids: a WITHOUT ROWID table is read whole and its rows are
// numbered in scan order; a column named rowid is not taken for the rowid.
func TestOddRowids(t *testing.T) {
	path := synthExport(t, `CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId,
		correlationId PRIMARY KEY, globalPid, shortName) WITHOUT ROWID`,
		`CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (rowid, start, end, eventClass, globalTid, correlationId, nameId)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 1, 0, NULL), (30, 40, 0, 7, 2, 0, NULL)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (NULL, 1, 2, 0, `+gtid+`, 1, NULL), (NULL, 3, 4, 0, `+gtid+`, 2, NULL)`)
	if n := kinds(read(t, path)); n[timeline.KindKernel] != 2 || n[timeline.KindAPI] != 2 {
		t.Errorf("kinds %v", n)
	}
	bad := synthExport(t, `CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId,
		correlationId PRIMARY KEY, globalPid, shortName) WITHOUT ROWID`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 1, 0, NULL), (30, 20, 0, 7, 2, 0, NULL)`)
	if _, err := ReadFile(bad, Options{}); err == nil || err.Error() != "nsys: CUPTI_ACTIVITY_KIND_KERNEL row 2: end before start" {
		t.Errorf("err = %v", err)
	}
}
