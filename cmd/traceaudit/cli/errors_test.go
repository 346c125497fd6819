package cli

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func sqliteFile(t *testing.T, dir, name string, stmts ...string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	db, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

const kernelEv = `{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":%s,"dur":%s,"args":{"correlation":1}}`

// emptyDir makes an empty folder under dir.
func emptyDir(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "empty")
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func ev(ts, dur string) string {
	return strings.Replace(strings.Replace(kernelEv, "%s", ts, 1), "%s", dur, 1)
}

// TestBadInputs is the error policy: every bad input gets exit 2 and one
// line naming the file and what is wrong, no panic, no output folder;
// truncated traces are analyzed with a warning.
func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 7))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	good, err := os.ReadFile(testfix.Project("b0_pageable_sync.nsys.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	chromeGood, _ := os.ReadFile(testfix.Project("r0_baseline.pt.trace.json.gz"))
	var plain bytes.Buffer
	zr, _ := gzip.NewReader(bytes.NewReader(chromeGood))
	plain.ReadFrom(zr)
	unreadable := writeFile(t, dir, "unreadable.json", []byte(`{"traceEvents":[]}`))
	os.Chmod(unreadable, 0)

	cases := []struct {
		name string
		path string
		env  string // TRACEAUDIT_MEMORY_LIMIT
		code int
		msg  string
	}{
		{"empty file", writeFile(t, dir, "empty.json", nil), "", 2, "empty file"},
		{"random bytes", writeFile(t, dir, "random.bin", random), "", 2, "not a recognised profile"},
		{"a JSON number", writeFile(t, dir, "number.json", []byte("42\n")), "", 2, "not a recognised profile"},
		{"object without events", writeFile(t, dir, "noevents.json", []byte(`{"foo": 1}`)), "", 2, "traceEvents"},
		{"events not an array", writeFile(t, dir, "notarray.json", []byte(`{"traceEvents": 7}`)), "", 2, "traceEvents"},
		{"ts of the wrong type", writeFile(t, dir, "badts.json", []byte(`{"traceEvents":[`+ev(`{"a":1}`, "1")+`]}`)), "", 2, "traceEvents[0].ts"},
		{"name of the wrong type", writeFile(t, dir, "badname.json", []byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":5,"pid":0,"tid":7,"ts":1,"dur":1}]}`)), "", 2, "traceEvents[0].name"},
		{"negative duration", writeFile(t, dir, "negdur.json", []byte(`{"traceEvents":[`+ev("10", "-3")+`]}`)), "", 2, "negative"},
		{"absurd timestamp", writeFile(t, dir, "hugets.json", []byte(`{"traceEvents":[`+ev("1e308", "1")+`]}`)), "", 2, "traceEvents[0].ts"},
		{"non-finite timestamp", writeFile(t, dir, "nan.json", []byte(`{"traceEvents":[`+ev("NaN", "1")+`]}`)), "", 2, "nan.json"},
		{"SQLite, not nsys", sqliteFile(t, dir, "other.sqlite", "CREATE TABLE foo (a INTEGER)", "INSERT INTO foo VALUES (1)"), "", 2, "not an nsys export"},
		{"nsys without CUDA", sqliteFile(t, dir, "nocuda.sqlite",
			"CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)",
			"CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)",
			"INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.20.3')",
			"CREATE TABLE OSRT_API (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER, nameId INTEGER, returnValue INTEGER, nestingLevel INTEGER, callchainId INTEGER)"),
			"", 2, "no CUDA activity: capture with --trace=cuda"},
		{"torn SQLite", writeFile(t, dir, "torn.sqlite", good[:len(good)/2]), "", 2, "torn.sqlite"},
		// One exit rule (design.md): no kernel and no copy is unusable, in
		// either format, with what the trace holds and what to capture.
		{"CPU-only Chrome trace", writeFile(t, dir, "cpuonly.json", []byte(`{"traceEvents":[`+
			`{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":1,"dur":2},`+
			`{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":5}]}`)),
			"", 2, "no GPU kernel or copy in the trace: it holds 1 ranges, 1 host operators (capture GPU activity: nsys profile --trace=cuda"},
		{"memsets only", writeFile(t, dir, "memsets.json", []byte(`{"traceEvents":[`+
			`{"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":0,"tid":7,"ts":1,"dur":2,"args":{"bytes":64}}]}`)),
			"", 2, "no GPU kernel or copy in the trace: it holds 1 memsets"},
		{"another accelerator's device events", writeFile(t, dir, "mtia.json", []byte(`{"traceEvents":[`+
			`{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2},`+
			`{"ph":"X","cat":"mtia_ccp_events","name":"mm_kernel","pid":2,"tid":3,"ts":2,"dur":5},`+
			`{"ph":"X","cat":"mtia_ccp_events","name":"mm_kernel","pid":2,"tid":3,"ts":9,"dur":5}]}`)),
			"", 2, "device events in categories traceaudit does not read: mtia_ccp_events (2 events)"},
		{"launches without kernel activity", writeFile(t, dir, "nokernels.json", []byte(`{"traceEvents":[`+
			`{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":2,"args":{"correlation":5}},`+
			`{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":4,"dur":2,"args":{"correlation":6}}]}`)),
			"", 2, "kernel activity not recorded: 2 kernel launches but no kernel executions"},
		{"nsys report", writeFile(t, dir, "run.nsys-rep", random), "", 2, "nsys export --type sqlite -o " + filepath.Join(dir, "run.sqlite")},
		{"qdrep report", writeFile(t, dir, "old.qdrep", random), "", 2, "nsys export --type sqlite"},
		{"folder without traces", emptyDir(t, dir), "", 2, "the folder holds no trace files"},
		{"missing file", filepath.Join(dir, "missing.json"), "", 2, "no such file"},
		{"larger than memory (chrome)", testfix.Project("r0_baseline.pt.trace.json.gz"), "100000", 2, "too large for the memory available"},
		{"larger than memory (nsys)", testfix.Project("b0_pageable_sync.nsys.sqlite"), "10000", 2, "too large for the memory available"},
		{"truncated JSON", writeFile(t, dir, "cut.json", plain.Bytes()[:plain.Len()*2/3]), "", 0, "cut.json: truncated: kept"},
		{"truncated gzip", writeFile(t, dir, "cut.json.gz", chromeGood[:len(chromeGood)*2/3]), "", 0, "cut.json.gz: truncated (the gzip stream ends after "},
		// Cut before its first kernel: refused, and the one line says the
		// file is cut short rather than to capture GPU activity.
		{"truncated before the GPU work", writeFile(t, dir, "early.json.gz", chromeGood[:100_000]), "", 2,
			"no GPU kernel or copy in the trace: it holds 13 ranges, 4,514 host operators, and it is truncated (the gzip stream ends after 100000 compressed bytes): kept 4,887 complete events, lost the last 109 bytes (what it lacks may lie past the cut: copy or download the file again, whole)"},
	}
	if os.Geteuid() != 0 {
		cases = append(cases, struct {
			name, path, env string
			code            int
			msg             string
		}{"unreadable file", unreadable, "", 2, "permission denied"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("TRACEAUDIT_MEMORY_LIMIT", c.env)
			}
			if ext := filepath.Ext(c.path); ext == ".nsys-rep" || ext == ".qdrep" {
				t.Setenv("PATH", t.TempDir()) // no nsys: the message says how to export
			}
			out := filepath.Join(t.TempDir(), "audit")
			stdout, stderr, code := run(t, "analyze", "--out", out, c.path)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, stderr)
			}
			if !strings.Contains(stderr, c.msg) {
				t.Errorf("stderr %q lacks %q", stderr, c.msg)
			}
			if c.code == 2 {
				if !strings.HasPrefix(stderr, "traceaudit: ") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
					t.Errorf("not one line: %q", stderr)
				}
				if !strings.Contains(stderr, filepath.Base(c.path)) {
					t.Errorf("the message does not name the file: %q", stderr)
				}
				if stdout != "" {
					t.Errorf("output on failure: %q", stdout)
				}
				if _, err := os.Stat(out); err == nil {
					t.Error("an output folder was written")
				}
				if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
					t.Errorf("leftovers: %v", entries)
				}
			} else if _, err := os.Stat(filepath.Join(out, "report.md")); err != nil {
				t.Errorf("no report for a truncated trace: %v", err)
			} else if warn := strings.Count(stderr, "warning:"); warn != 1 || !strings.Contains(stderr, "traceaudit: wrote ") {
				t.Errorf("one truncation warning and what --out wrote, got: %q", stderr) // the gzip cut and the JSON it cut were two
			}
		})
	}
}
