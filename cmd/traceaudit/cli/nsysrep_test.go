package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// TestAnalyzeNsysReport: with nsys on PATH (a stand-in that copies the b0
// nsys export), an .nsys-rep is exported beside the report once, analysed
// as the export is, and the export is reused on the next run.
func TestAnalyzeNsysReport(t *testing.T) {
	bin := t.TempDir()
	script, err := os.ReadFile(filepath.Join(testfix.Root(), "ingest/nsysrep/testdata/nsys"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(bin, "nsys"), script, 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	calls := filepath.Join(t.TempDir(), "calls")
	t.Setenv("NSYS_LOG", calls)
	t.Setenv("NSYS_SQLITE", testfix.Project("b0_pageable_sync.nsys.sqlite"))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())

	dir := t.TempDir()
	rep := filepath.Join(dir, "b0.nsys-rep")
	os.WriteFile(rep, []byte("a report only nsys reads"), 0o644)
	old := time.Now().Add(-time.Minute)
	os.Chtimes(rep, old, old)

	want, _, code := run(t, "analyze", "fixtures/b0_pageable_sync.nsys.sqlite")
	if code != 0 {
		t.Fatal(code)
	}
	want = strings.Replace(want, "b0_pageable_sync.nsys.sqlite", "b0.nsys-rep", 1)
	for i := range 2 {
		out, errOut, code := run(t, "analyze", rep)
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", i, code, errOut)
		}
		// The verify-with lines quote the file given.
		out = strings.ReplaceAll(out, rep, "fixtures/b0_pageable_sync.nsys.sqlite")
		if out != want {
			t.Errorf("run %d: the report of the .nsys-rep differs from its export's", i)
		}
		export := filepath.Join(dir, ".b0.nsys-rep.traceaudit.sqlite")
		if i == 0 && errOut != "traceaudit: exported "+rep+" with nsys to "+export+" (reused while newer than the report)\n" {
			t.Errorf("stderr %q", errOut)
		}
		if i == 1 && errOut != "" {
			t.Errorf("reuse: stderr %q", errOut)
		}
		if _, err := os.Stat(export); err != nil {
			t.Error(err)
		}
	}
	if b, _ := os.ReadFile(calls); strings.Count(string(b), "\n") != 1 {
		t.Errorf("nsys ran %q, want once", b)
	}
	// A failing nsys: one line naming the report and nsys's error, exit 2.
	t.Setenv("NSYS_FAIL", "cannot import the report")
	rep2 := filepath.Join(dir, "broken.nsys-rep")
	os.WriteFile(rep2, []byte("x"), 0o644)
	_, errOut, code := run(t, "analyze", rep2)
	if code != 2 || errOut != "traceaudit: "+rep2+": nsys export failed (exit 1): ERROR: cannot import the report\n" {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
