package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/golden"
	"github.com/traceaudit/traceaudit/internal/testing/mdcheck"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// run executes the CLI from the repository root (so that file names in the
// output are stable) and returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	t.Chdir(testfix.Root())
	var out, errb bytes.Buffer
	code := Run(args, &IO{Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

// goldenFixtures are the project's own captures: golden reports exist for
// each.
var goldenFixtures = []string{
	"r0_baseline.pt.trace.json.gz",
	"b0_pageable_sync.nsys.sqlite",
	"m0_munmap.nsys.sqlite",
	"m0_munmap.pt.trace.json.gz",
}

func TestAnalyzeGolden(t *testing.T) {
	for _, name := range goldenFixtures {
		for _, format := range []string{"text", "brief", "json", "markdown"} {
			t.Run(name+"/"+format, func(t *testing.T) {
				// text is the whole report (--verbose), brief the default.
				args := []string{"analyze", "--format", format, filepath.Join("fixtures", name)}
				switch format {
				case "text":
					args = []string{"analyze", "--verbose", filepath.Join("fixtures", name)}
				case "brief":
					args = []string{"analyze", filepath.Join("fixtures", name)}
				}
				out, errOut, code := run(t, args...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				if format == "markdown" {
					checkMarkdown(t, name, out)
					if n := len(mdcheck.Blocks(out)); n != 2 {
						t.Errorf("%d mermaid charts, want the step split and the findings", n)
					}
				}
				if format == "json" {
					var v map[string]any
					if err := json.Unmarshal([]byte(out), &v); err != nil {
						t.Fatalf("not JSON: %v", err)
					}
				}
				ext := map[string]string{"text": "txt", "brief": "brief.txt", "json": "json", "markdown": "md"}[format]
				golden.Check(t, filepath.Join(testfix.Root(), "cmd/traceaudit/cli/testdata", name+".analyze."+ext), []byte(out))
			})
		}
	}
}

func TestStatsGolden(t *testing.T) {
	for _, name := range []string{"r0_baseline.pt.trace.json.gz", "b0_pageable_sync.nsys.sqlite", "m0_munmap.nsys.sqlite"} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, "stats", filepath.Join("fixtures", name))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden.Check(t, filepath.Join(testfix.Root(), "cmd/traceaudit/cli/testdata", name+".stats.txt"), []byte(out))
		})
	}
}

func TestAnalyzeFailOnExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"analyze", "--fail-on", "error", "fixtures/r0_baseline.pt.trace.json.gz"}, 1, "findings at error"},
		{[]string{"analyze", "--fail-on", "warning", "fixtures/r3_streams.pt.trace.json.gz"}, 0, ""},
		{[]string{"analyze", "--fail-on", "info", "fixtures/r3_streams.pt.trace.json.gz"}, 1, "findings at info"},
		{[]string{"analyze", "--fail-on", "bogus", "fixtures/r3_streams.pt.trace.json.gz"}, 2, "--fail-on"},
		{[]string{"analyze"}, 2, "want at least one trace"},
		{[]string{"analyze", "--format", "yaml", "fixtures/r3_streams.pt.trace.json.gz"}, 2, "--format"},
		{[]string{"analyze", "--data-range", "(", "fixtures/r3_streams.pt.trace.json.gz"}, 2, "--data-range"},
		{[]string{"analyze", "--band", "gpu-idle=0.5,0.2", "fixtures/r3_streams.pt.trace.json.gz"}, 2, "--band"},
		{[]string{"analyze", "--band", "nope=0.1,0.2", "fixtures/r3_streams.pt.trace.json.gz"}, 2, "unknown analyzer"},
		{[]string{"analyze", "--no-such-flag", "x"}, 2, "unknown flag"},
		{[]string{"analyze", "fixtures/does-not-exist.json"}, 2, "fixtures/does-not-exist.json: no such file"},
		{[]string{"stats", "a", "b"}, 2, "want 1 file"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, errOut, code := run(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, c.code, errOut)
			}
			if c.err != "" && !strings.Contains(errOut, c.err) {
				t.Errorf("stderr %q lacks %q", errOut, c.err)
			}
			if c.code == 2 && strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("error must be one line: %q", errOut)
			}
		})
	}
}

func TestAnalyzeBandsChangeSeverity(t *testing.T) {
	out, _, code := run(t, "analyze", "--format", "json", "--band", "dataloader-wait=90%,95%", "fixtures/r0_baseline.pt.trace.json.gz")
	if code != 0 {
		t.Fatal(code)
	}
	var r struct {
		Findings []struct{ ID, Severity string }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Findings {
		if f.ID == "dataloader-wait" && f.Severity != "info" {
			t.Errorf("dataloader-wait at 78 %% with bands 90/95 %% is %s, want info", f.Severity)
		}
	}
}

// Several traces that are not one job are a batch: one JSON document
// whose files are their analyze objects, in argument order.
func TestAnalyzeSeveralFilesGivesBatch(t *testing.T) {
	out, _, code := run(t, "analyze", "--format", "json", "fixtures/b0_pageable_sync.pt.trace.json.gz", "fixtures/r3_streams.pt.trace.json.gz")
	if code != 0 {
		t.Fatal(code)
	}
	var doc struct {
		Schema int              `json:"schema_version"`
		Tool   string           `json:"tool_version"`
		Files  []map[string]any `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Files) != 2 || doc.Schema < 1 || doc.Tool == "" {
		t.Fatalf("want a batch of 2 reports: %v %d", err, len(doc.Files))
	}
	rs := doc.Files
	if rs[0]["file"] != "fixtures/b0_pageable_sync.pt.trace.json.gz" || rs[1]["file"] != "fixtures/r3_streams.pt.trace.json.gz" {
		t.Errorf("files %v %v", rs[0]["file"], rs[1]["file"])
	}
}
