package nsys

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline"
)

// A kernel table without NOT NULL constraints, for rows real exports do not have.
const ddlLooseKernel = `CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId,
	correlationId, globalPid, shortName, graphNodeId)`

func TestBadRows(t *testing.T) {
	for _, tc := range []struct {
		name, rows, want string
	}{
		{"end before start", `(10, 20, 0, 7, 1, 0, 1, NULL), (30, 29, 0, 7, 2, 0, 1, NULL)`,
			"nsys: CUPTI_ACTIVITY_KIND_KERNEL row 2: end before start"},
		{"absurd time", `(10, 4611686018427387905, 0, 7, 1, 0, 1, NULL)`,
			"nsys: CUPTI_ACTIVITY_KIND_KERNEL row 1: timestamp out of range"},
		{"null start", `(10, 20, 0, 7, 1, 0, 1, NULL), (11, 20, 0, 7, 1, 0, 1, NULL), (NULL, 20, 0, 7, 1, 0, 1, NULL)`,
			"nsys: CUPTI_ACTIVITY_KIND_KERNEL row 3: start is NULL"},
		{"text time", `('soon', 20, 0, 7, 1, 0, 1, NULL)`,
			"nsys: CUPTI_ACTIVITY_KIND_KERNEL row 1: column start: not an integer"},
		{"blob stream", `(10, 20, 0, x'00', 1, 0, 1, NULL)`,
			"nsys: CUPTI_ACTIVITY_KIND_KERNEL row 1: column streamId: not an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := synthExport(t, ddlLooseKernel, `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES `+tc.rows)
			_, err := ReadFile(path, Options{})
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v, want %s", err, tc.want)
			}
		})
	}
	path := synthExport(t, `CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, streamId, bytes, copyKind, srcKind, dstKind)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1, 2, 0, 7, -5, 1, 0, 2)`)
	if _, err := ReadFile(path, Options{}); err == nil || err.Error() != "nsys: CUPTI_ACTIVITY_KIND_MEMCPY row 1: negative bytes" {
		t.Errorf("negative bytes: err = %v", err)
	}
}

func TestNullsSkipped(t *testing.T) {
	path := synthExport(t, ddlLooseKernel, `CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId)`,
		`INSERT INTO StringIds VALUES (1, 'k')`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, NULL, 0, 7, 1, 0, 1, NULL), (10, 20, NULL, 7, 1, 0, 1, NULL),
			(10, 20, 0, 7, NULL, NULL, NULL, NULL), (30, 40, 0, 7, 2, 0, 99, NULL)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 2, 0, NULL, 1, 1), (1, 2, NULL, `+gtid+`, 1, 1),
			(1, 2, 5, `+gtid+`, 1, 1), (1, 2, 1, `+gtid+`, 1, 1)`)
	var warns []string
	tl, err := ReadFile(path, Options{Warn: func(m string) { warns = append(warns, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if n := kinds(tl); n[timeline.KindKernel] != 2 || n[timeline.KindAPI] != 1 {
		t.Errorf("kinds %v", n)
	}
	want := []string{
		"nsys: CUPTI_ACTIVITY_KIND_RUNTIME: skipped 2 rows with NULL end, eventClass or globalTid",
		"nsys: CUPTI_ACTIVITY_KIND_RUNTIME: skipped 1 rows of unknown eventClass",
		"nsys: CUPTI_ACTIVITY_KIND_KERNEL: skipped 2 rows with NULL end, deviceId or streamId",
		"nsys: StringIds: 1 names refer to missing ids (left empty)",
	}
	if strings.Join(warns, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warns, "\n"), strings.Join(want, "\n"))
	}
}

// TestReadOnly checks that reading creates, changes and removes nothing in
// the file's folder, with a file name that needs escaping in a URI.
func TestReadOnly(t *testing.T) {
	src := nsysFixture(t, "nsys-2026.1.1_minimal-2kernels-pinned-dtoh_nsysai.sqlite")
	dir := filepath.Join(t.TempDir(), "a dir#1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := copyTemp(t, src, dir, "run ?x=1#frag %41%zz.sqlite")
	want, _ := os.ReadFile(path)
	before := listDir(t, dir)
	tl := read(t, path)
	if len(tl.Events) != 13 || tl.Source.Path != path {
		t.Errorf("%d events, source %q", len(tl.Events), tl.Source.Path)
	}
	if after := listDir(t, dir); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("folder changed:\n%v\n%v", before, after)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Error("file changed")
	}
	// A read-only file in a read-only folder reads too.
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	read(t, path)
}

// TestWALMode checks that a WAL-mode database is read without creating
// -wal or -shm files.
func TestWALMode(t *testing.T) {
	dir := t.TempDir()
	path := synthDB(t, filepath.Join(dir, "wal.sqlite"), `PRAGMA journal_mode=WAL`, ddlStrings, ddlMeta, ddlLooseKernel,
		`INSERT INTO StringIds VALUES (1, 'k')`, `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 1, 0, 1, NULL)`)
	if hdr, _ := os.ReadFile(path); len(hdr) < 20 || hdr[18] != 2 {
		t.Fatal("not a WAL-mode file")
	}
	before := listDir(t, dir)
	if tl := read(t, path); len(tl.Events) != 1 {
		t.Errorf("%d events", len(tl.Events))
	}
	if after := listDir(t, dir); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("folder changed:\n%v\n%v", before, after)
	}
}

func TestCorruptFiles(t *testing.T) {
	src := nsysFixture(t, "nsys-2024.5.1_cloverleaf-syncmemcpy-devsync-osrt_pipit.sqlite")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, len(data))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	cases := map[string][]byte{
		"half":   data[:len(data)/2],
		"tail":   data[:len(data)*9/10],
		"header": data[:100],
		"short":  data[:50],
		"noise":  append(append([]byte{}, data[:100]...), noise[100:]...),
		"pages":  append(append([]byte{}, data[:4096*4]...), noise[4096*4:]...),
	}
	// After VACUUM the schema comes first, so noise at the end leaves it
	// readable and the error comes from a table scan. (A file shorter than
	// its header's page count is refused at once.)
	vac := copyTemp(t, src, dir, "vacuumed.sqlite")
	synthDB(t, vac, "VACUUM")
	if v, err := os.ReadFile(vac); err == nil {
		cut := len(v) * 9 / 10
		cases["vacuumed-noise"] = append(v[:cut:cut], noise[cut:len(v)]...)
	}
	for name, b := range cases {
		p := filepath.Join(dir, name+".sqlite")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		tl, err := ReadFile(p, Options{})
		if err == nil {
			t.Errorf("%s: no error (%d events)", name, len(tl.Events))
		} else if !strings.HasPrefix(err.Error(), "nsys: ") {
			t.Errorf("%s: %v", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestProgress(t *testing.T) {
	var calls [][2]int64
	path := nsysFixture(t, "nsys-2022.4.2_gaussian-threadsync-8k-kernels_rodinia.sqlite")
	if _, err := ReadFile(path, Options{Progress: func(d, n int64) { calls = append(calls, [2]int64{d, n}) }}); err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 {
		t.Fatal("no progress")
	}
	last := calls[len(calls)-1]
	// StringIds 1,165 + RUNTIME 16,393 + KERNEL 8,190 + MEMCPY 6 + SYNC 8,190 + OSRT 1,713.
	if last[0] != last[1] || last[0] != 35657 {
		t.Errorf("last progress %v", last)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] < calls[i-1][0] || calls[i][0] > calls[i][1] {
			t.Errorf("progress %v after %v", calls[i], calls[i-1])
		}
	}
}

// TestChunkedReadIsDeterministic reads with small rowid ranges spread over
// several connections and compares with a one-connection read.
func TestChunkedReadIsDeterministic(t *testing.T) {
	path := nsysFixture(t, "nsys-2026.2.1_torch-2gpu-nvtx-before-window_nsysai.sqlite")
	defer func(c uint64, w int) { chunkRows, maxWorkers = c, w }(chunkRows, maxWorkers)
	maxWorkers = 1
	want := read(t, path)
	chunkRows, maxWorkers = 997, 3
	got := read(t, path)
	if len(got.Events) != len(want.Events) || len(got.Tracks) != len(want.Tracks) || got.NumNames() != want.NumNames() {
		t.Fatalf("%d/%d events, %d/%d tracks", len(got.Events), len(want.Events), len(got.Tracks), len(want.Tracks))
	}
	for i := range got.Events {
		if got.Events[i] != want.Events[i] || got.EventName(int32(i)) != want.EventName(int32(i)) {
			t.Fatalf("event %d: %+v vs %+v", i, got.Events[i], want.Events[i])
		}
	}
	for i := range got.Tracks {
		if got.Tracks[i].Label() != want.Tracks[i].Label() {
			t.Fatalf("track %d: %s vs %s", i, got.Tracks[i].Label(), want.Tracks[i].Label())
		}
	}
}

// TestEnvironmentNotEchoed plants a secret where nsys keeps the captured
// environment and checks that no name, warning or error carries it.
func TestEnvironmentNotEchoed(t *testing.T) {
	const secret = "AWS_SECRET_ACCESS_KEY=hunter2"
	path := synthExport(t, ddlLooseKernel,
		`CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid, devStateName, name, nameEnum, value)`,
		`INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (1, 'x', 'AWS_SECRET_ACCESS_KEY', 0, 'hunter2')`,
		`CREATE TABLE META_DATA_CAPTURE (name TEXT, value TEXT)`,
		`INSERT INTO META_DATA_CAPTURE VALUES ('ENV:AWS_SECRET_ACCESS_KEY', '`+secret+`')`,
		`INSERT INTO StringIds VALUES (1, 'k'), (2, '`+secret+`')`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 7, 1, 0, 1, NULL), (10, NULL, 0, 7, 1, 0, 1, NULL)`)
	var warns []string
	tl, err := ReadFile(path, Options{Warn: func(m string) { warns = append(warns, m) }})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < tl.NumNames(); i++ {
		if strings.Contains(tl.Name(timeline.NameID(i)), "hunter2") {
			t.Errorf("name %d holds the secret", i)
		}
	}
	if strings.Contains(strings.Join(warns, "\n"), "hunter2") {
		t.Error("a warning holds the secret")
	}
}

// FuzzReadFile feeds mutated exports to ReadFile: it must return an error or
// a timeline that passes Validate, and never panic. Seeds are small synthetic
// exports (512-byte pages) and the smallest real one where the shared corpus
// is present. Crashers found are kept in testdata/fuzz/FuzzReadFile.
func FuzzReadFile(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.sqlite")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tl, err := ReadFile(p, Options{Warn: func(string) {}, Progress: func(int64, int64) {}})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "nsys: ") {
				t.Errorf("error without prefix: %v", err)
			}
			return
		}
		if err := tl.Validate(); err != nil {
			t.Fatalf("invalid timeline: %v", err)
		}
	})
}

// fuzzSeeds builds the seed corpus.
func fuzzSeeds(f *testing.F) [][]byte {
	small := func(stmts ...string) []byte {
		p := synthExport(f, append([]string{"PRAGMA page_size=512"}, append(stmts, "VACUUM")...)...)
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	seeds := [][]byte{
		small(ddlKernel, ddlRuntime, ddlNVTX, ddlOSRT,
			`INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'k'), (3, 'munmap'), (4, 'reg')`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 150, 0, `+gtid+`, 7, 1, 0, NULL), (160, 170, 67, `+gtid+`, 7, 1, 0, NULL)`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (200, 900, 0, 1, NULL, 13, 7, `+gpid+`, 2, 2, NULL, 0)`,
			`INSERT INTO OSRT_API VALUES (300, 400, 27, `+gtid+`, 3, 0, 0, NULL)`,
			`INSERT INTO NVTX_EVENTS (start, end, eventType, text, textId, globalTid) VALUES
				(50, 960, 59, 'step', NULL, `+gtid+`), (60, NULL, 60, NULL, 4, `+gtid+`), (70, NULL, 34, 'm', NULL, `+gtid+`)`),
		small(ddlRuntime, ddlGraph,
			`CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, streamId, correlationId, globalPid, bytes, copyKind, srcKind, dstKind)`,
			`CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, streamId, correlationId, globalPid, bytes, memKind)`,
			`CREATE TABLE TARGET_INFO_GPU (id, name, smCount, totalMemory)`,
			`CREATE TABLE ThreadNames (nameId, priority, globalTid)`,
			`INSERT INTO StringIds VALUES (1, 'cudaGraphLaunch_v10000'), (2, 'main')`,
			`INSERT INTO ThreadNames VALUES (2, 0, `+gtid+`)`,
			`INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H200', 132, 150109880320)`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 150, 0, `+gtid+`, 7, 1, 0, NULL)`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (200, 900, 0, 1, NULL, 13, 7, `+gpid+`, 5, 9)`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (10, 20, 0, 7, 8, `+gpid+`, 4096, 1, 0, 2), (30, 40, 0, 7, 9, `+gpid+`, 64, 11, 7, 7)`,
			`INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (50, 60, 0, 7, 10, `+gpid+`, 16, 2)`),
	}
	// The smallest real export, cut down to the tables read and 512-byte
	// pages (from 370 KB to about 20 KB): the fuzzer minimizes every
	// interesting input, which takes minutes on large ones.
	p := filepath.Join(testfix.Root(), "..", "shared", "fixtures", "nsys", "nsys-2026.1.1_minimal-2kernels-pinned-dtoh_nsysai.sqlite")
	if _, err := os.Stat(p); err == nil {
		cp := copyTemp(f, p, f.TempDir(), "mini.sqlite")
		db := openSQL(f, p)
		var drops []string
		for _, name := range queryStrings(f, db, "SELECT name FROM sqlite_master WHERE type = 'table'") {
			switch name {
			case tabStrings, tabMeta, tabKernel, tabMemcpy, tabRuntime, tabSync, tabThreads:
			default:
				drops = append(drops, "DROP TABLE "+quote(name))
			}
		}
		synthDB(f, cp, append(drops,
			"DELETE FROM ThreadNames WHERE rowid > 3",
			`DELETE FROM StringIds WHERE id NOT IN (SELECT nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME
				UNION SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL UNION SELECT nameId FROM ThreadNames)`,
			"PRAGMA page_size=512", "VACUUM")...)
		if b, err := os.ReadFile(cp); err == nil {
			seeds = append(seeds, b)
		}
	}
	return seeds
}

// TestMergeInPartsIsDeterministic merges every fixture's tasks in parts
// cut at start times, on several goroutines, and requires the timeline and
// warnings of one merge in order.
func TestMergeInPartsIsDeterministic(t *testing.T) {
	files := append(allFixtures(t), testfix.SharedGlob(t, "h200-ddp", "*.sqlite")...)
	defer func(c uint64, w, p int) { chunkRows, maxWorkers, mergeParts = c, w, p }(chunkRows, maxWorkers, mergeParts)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			chunkRows, maxWorkers, mergeParts = 1013, 3, 1
			want, _, _ := readWith(path, false)
			if want.err != nil {
				t.Fatal(want.err)
			}
			for _, parts := range []int{2, 3, 8} {
				mergeParts = parts
				got, _, _ := readWith(path, false)
				if got.err != nil {
					t.Fatal(got.err)
				}
				sameTimeline(t, got.tl, want.tl)
				if strings.Join(got.warns, "\n") != strings.Join(want.warns, "\n") {
					t.Errorf("%d parts: warnings:\n%v\nin order:\n%v", parts, got.warns, want.warns)
				}
			}
		})
	}
}
