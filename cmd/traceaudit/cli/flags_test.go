package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/internal/version"
)

// parse runs one command's flag parsing with a runF that records the
// options instead of running.
func parse[O any](t *testing.T, newCmd func(*IO, func(*O) error) *cobra.Command, argv []string) (*O, error) {
	t.Helper()
	var got *O
	ios := &IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Args: argv}
	cmd := newCmd(ios, func(o *O) error { got = o; return nil })
	cmd.SetArgs(argv)
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.Err)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	err := cmd.Execute()
	return got, err
}

// checkParseErr checks that err is the expected usage error (wantErr
// non-empty) or nil.
func checkParseErr(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return true
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("error %v, want one containing %q", err, wantErr)
	}
	if !errors.As(err, new(usageError)) {
		t.Errorf("%v is not a usage error", err)
	}
	return false
}

// TestAnalyzeFlags: argv to options, or to a usage error.
func TestAnalyzeFlags(t *testing.T) {
	cases := []struct {
		argv    []string
		wantErr string
		check   func(t *testing.T, o *AnalyzeOptions)
	}{
		{argv: []string{"a.json"}, check: func(t *testing.T, o *AnalyzeOptions) {
			if o.Format != "text" || o.FailOn != analyze.SeverityNone || o.OutDir != "" || o.Config.MinGapNS != 100_000 || o.Config.PinnedGBps != 25 {
				t.Errorf("defaults: %+v %+v", o, o.Config)
			}
			if o.Config.DataRange.String() != analyze.DefaultDataRange || o.Config.StepRange != nil {
				t.Errorf("ranges %v %v", o.Config.DataRange, o.Config.StepRange)
			}
		}},
		{argv: []string{"--format", "json", "--fail-on", "warning", "--out", "o", "a.json"}, check: func(t *testing.T, o *AnalyzeOptions) {
			if o.Format != "json" || o.FailOn != analyze.SeverityWarning || o.OutDir != "o" || len(o.Files) != 1 || o.Files[0] != "a.json" {
				t.Errorf("%+v", o)
			}
			if strings.Join(o.Args, " ") != "traceaudit --format json --fail-on warning --out o a.json" {
				t.Errorf("args %q", o.Args)
			}
		}},
		{argv: []string{"--min-gap", "2ms", "--pinned-gbps", "12.5", "--step-range", "^step", "--data-range", "load", "a", "b"}, check: func(t *testing.T, o *AnalyzeOptions) {
			if o.Config.MinGapNS != 2_000_000 || o.Config.PinnedGBps != 12.5 || o.Config.StepRange.String() != "^step" || o.Config.DataRange.String() != "load" || len(o.Files) != 2 {
				t.Errorf("%+v %+v", o, o.Config)
			}
		}},
		{argv: []string{"--band", "dataloader-wait=10%,0.3", "--band", "gpu-idle=0.1,0.2", "a"}, check: func(t *testing.T, o *AnalyzeOptions) {
			if b := o.Config.Bands["dataloader-wait"]; b.Warning != 0.1 || b.Error != 0.3 {
				t.Errorf("dataloader-wait bands %+v", b)
			}
			if b := o.Config.Bands["gpu-idle"]; b.Warning != 0.1 || b.Error != 0.2 {
				t.Errorf("gpu-idle bands %+v", b)
			}
		}},
		{argv: []string{}, wantErr: "want at least one trace file"},
		{argv: []string{"--format", "yaml", "a"}, wantErr: `--format "yaml"`},
		{argv: []string{"--fail-on", "fatal", "a"}, wantErr: "--fail-on"},
		{argv: []string{"--min-gap", "-1ms", "a"}, wantErr: "must not be negative"},
		{argv: []string{"--min-gap", "soon", "a"}, wantErr: "invalid argument"},
		{argv: []string{"--pinned-gbps", "0", "a"}, wantErr: "--pinned-gbps"},
		{argv: []string{"--band", "gpu-idle=0.5", "a"}, wantErr: "want two shares"},
		{argv: []string{"--band", "gpu-idle=0.5,0.2", "a"}, wantErr: "not above the error share"},
		{argv: []string{"--band", "nope=0.1,0.2", "a"}, wantErr: "unknown analyzer"},
		{argv: []string{"--band", "sync-memcpy=NaN,NaN", "a"}, wantErr: "want two shares from 0 to 1"},
		{argv: []string{"--band", "sync-memcpy=0.1,nan%", "a"}, wantErr: "want two shares from 0 to 1"},
		{argv: []string{"--band", "sync-memcpy=-Inf,0.2", "a"}, wantErr: "want two shares from 0 to 1"},
		{argv: []string{"--step-range", "(", "a"}, wantErr: "--step-range"},
		{argv: []string{"--out", "o", "--job", "a", "b"}, check: func(t *testing.T, o *AnalyzeOptions) {
			if o.OutDir != "o" || !o.Job || len(o.Files) != 2 {
				t.Errorf("%+v", o)
			}
		}},
		{argv: []string{"--nope", "a"}, wantErr: "unknown flag: --nope"},
		{argv: []string{"--unprofiled-step", "40it/s", "a"}, check: func(t *testing.T, o *AnalyzeOptions) {
			if o.Config.UnprofiledStepNS != 25_000_000 {
				t.Errorf("unprofiled step %d ns, want 25 ms", o.Config.UnprofiledStepNS)
			}
		}},
		{argv: []string{"--unprofiled-step", "-3ms", "a"}, wantErr: "--unprofiled-step -3ms"},
		{argv: []string{"--unprofiled-step", "soon", "a"}, wantErr: "invalid argument"},
		{argv: []string{"--unprofiled-step", "20ms", "--profiler-cost-us", "2", "a"}, wantErr: "give one"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.argv, " "), func(t *testing.T) {
			o, err := parse(t, NewCmdAnalyze, c.argv)
			if checkParseErr(t, err, c.wantErr) {
				c.check(t, o)
			} else if o != nil {
				t.Error("the run function was called despite the error")
			}
		})
	}
}

func TestDiffReplayStatsFlags(t *testing.T) {
	t.Run("diff", func(t *testing.T) {
		o, err := parse(t, NewCmdDiff, []string{"--fail-on", "error", "--format", "markdown", "--out", "d", "b.json", "a.json"})
		checkParseErr(t, err, "")
		if o.Before != "b.json" || o.After != "a.json" || o.FailOn != analyze.SeverityError || o.Format != "markdown" || o.OutDir != "d" {
			t.Errorf("%+v", o)
		}
		_, err = parse(t, NewCmdDiff, []string{"one.json"})
		checkParseErr(t, err, "want 2 file argument(s), got 1")
	})
	t.Run("replay", func(t *testing.T) {
		o, err := parse(t, NewCmdReplay, []string{"--dry-run", "--steps", "5", "--variants", "pinned,all", "--device", "1", "--format", "json", "r.sqlite"})
		checkParseErr(t, err, "")
		if !o.DryRun || o.Steps != 5 || o.Variants != "pinned,all" || o.Device != 1 || o.Format != "json" || o.File != "r.sqlite" || o.Config == nil || o.Rank != -1 {
			t.Errorf("%+v", o)
		}
		o, err = parse(t, NewCmdReplay, []string{"--rank", "3", "r0.json", "r1.json"})
		checkParseErr(t, err, "")
		if o.Rank != 3 || len(o.Files) != 2 || o.File != "r0.json" {
			t.Errorf("%+v", o)
		}
		for argv, want := range map[string]string{
			"--steps 0 r":       "--steps 0",
			"--device -1 r":     "--device -1",
			"--format csv r":    `--format "csv"`,
			"--data-range ( r":  "--data-range",
			"":                  "want a trace, or the traces of a job",
			"--rank -2 r":       "--rank -2",
			"--steps many r":    "invalid argument",
			"--dry-run=maybe r": "invalid argument",
		} {
			_, err := parse(t, NewCmdReplay, strings.Fields(argv))
			checkParseErr(t, err, want)
		}
	})
	t.Run("stats", func(t *testing.T) {
		o, err := parse(t, NewCmdStats, []string{"--format", "json", "s.json"})
		checkParseErr(t, err, "")
		if o.Format != "json" || o.File != "s.json" {
			t.Errorf("%+v", o)
		}
		_, err = parse(t, NewCmdStats, []string{"--format", "markdown", "s.json"})
		checkParseErr(t, err, `--format "markdown"`)
	})
}

// TestRunOptions: options to output, calling the run functions directly.
func TestRunOptions(t *testing.T) {
	t.Chdir(testfix.Root())
	r0 := "fixtures/r0_baseline.pt.trace.json.gz"
	b0 := "fixtures/b0_pageable_sync.nsys.sqlite"
	parsed := func(t *testing.T, argv ...string) *AnalyzeOptions {
		o, err := parse(t, NewCmdAnalyze, argv)
		checkParseErr(t, err, "")
		return o
	}
	cases := []struct {
		name  string
		run   func(ios *IO) error
		check func(t *testing.T, out string, err error)
	}{
		{"analyze text", func(ios *IO) error {
			o := parsed(t, r0)
			o.IO = ios
			return analyzeRun(o)
		}, func(t *testing.T, out string, err error) {
			if err != nil || !strings.HasPrefix(out, "r0_baseline.pt.trace.json.gz  (chrome-trace)\ninput-bound: ") {
				t.Errorf("%v %q", err, firstLines(out, 2))
			}
		}},
		{"analyze json fail-on error", func(ios *IO) error {
			o := parsed(t, "--format", "json", "--fail-on", "error", r0)
			o.IO = ios
			return analyzeRun(o)
		}, func(t *testing.T, out string, err error) {
			var fe *FailError
			if !errors.As(err, &fe) || !strings.Contains(fe.Msg, "findings at error or above (--fail-on error)") {
				t.Errorf("want a FailError, got %v", err)
			}
			var v struct {
				Schema int    `json:"schema_version"`
				File   string `json:"file"`
			}
			if json.Unmarshal([]byte(out), &v) != nil || v.Schema != 1 || v.File != r0 {
				t.Errorf("the JSON is printed before failing: %+v", v)
			}
		}},
		{"analyze two files markdown", func(ios *IO) error {
			o := parsed(t, "--format", "markdown", r0, b0)
			o.IO = ios
			return analyzeRun(o)
		}, func(t *testing.T, out string, err error) {
			if err != nil || strings.Count(out, "\n## traceaudit: ") != 1 || !strings.HasPrefix(out, "## traceaudit: r0\\_baseline") || !strings.Contains(out, "\n---\n\n## traceaudit: b0\\_pageable\\_sync.nsys.sqlite") {
				t.Errorf("%v %q", err, firstLines(out, 3))
			}
		}},
		{"diff json", func(ios *IO) error {
			o, err := parse(t, NewCmdDiff, []string{"--format", "json", r0, "fixtures/r3_streams.pt.trace.json.gz"})
			checkParseErr(t, err, "")
			o.IO = ios
			return diffRun(o)
		}, func(t *testing.T, out string, err error) {
			var v struct {
				Resolved []string `json:"resolved"`
				Before   struct{ File string }
			}
			if err != nil || json.Unmarshal([]byte(out), &v) != nil || len(v.Resolved) == 0 || v.Before.File != r0 {
				t.Errorf("%v %+v", err, v)
			}
		}},
		{"replay dry run markdown", func(ios *IO) error {
			o, err := parse(t, NewCmdReplay, []string{"--dry-run", "--format", "markdown", b0})
			checkParseErr(t, err, "")
			o.IO = ios
			return replayRun(o)
		}, func(t *testing.T, out string, err error) {
			if err != nil || !strings.HasPrefix(out, "## traceaudit replay: b0\\_pageable\\_sync.nsys.sqlite\n\nDry run") || !strings.Contains(out, "| `pinned` | sync-memcpy |") {
				t.Errorf("%v %q", err, out)
			}
		}},
		{"stats json", func(ios *IO) error {
			return statsRun(&StatsOptions{IO: ios, Format: "json", File: b0})
		}, func(t *testing.T, out string, err error) {
			var v struct {
				Schema int `json:"schema_version"`
				GPU    struct {
					Memcpys int `json:"memcpys"`
				} `json:"gpu"`
			}
			if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Schema != 1 || v.GPU.Memcpys == 0 {
				t.Errorf("%v %+v", err, v)
			}
		}},
		{"stats missing file", func(ios *IO) error {
			return statsRun(&StatsOptions{IO: ios, Format: "text", File: "fixtures/nope.json"})
		}, func(t *testing.T, out string, err error) {
			if err == nil || !strings.Contains(err.Error(), "fixtures/nope.json") || out != "" {
				t.Errorf("%v %q", err, out)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := c.run(&IO{Out: &out, Err: &bytes.Buffer{}})
			c.check(t, out.String(), err)
		})
	}
}

// TestRunOptionsOut: an out folder from options, and the refusal of a
// folder traceaudit did not write, with nothing printed.
func TestRunOptionsOut(t *testing.T) {
	t.Chdir(testfix.Root())
	dir := filepath.Join(t.TempDir(), "audit")
	var out bytes.Buffer
	o := &AnalyzeOptions{IO: &IO{Out: &out, Err: &bytes.Buffer{}}, Files: []string{"fixtures/r0_baseline.pt.trace.json.gz"}, Format: "text", OutDir: dir, Config: analyze.DefaultConfig()}
	if err := analyzeRun(o); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "report.json", "timeline.png", "findings.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644)
	out.Reset()
	o.OutDir = foreign
	if err := analyzeRun(o); err == nil || !strings.Contains(err.Error(), "holds files traceaudit did not write") || out.Len() != 0 {
		t.Errorf("foreign folder: %v, printed %d bytes", err, out.Len())
	}
	if b, _ := os.ReadFile(filepath.Join(foreign, "notes.txt")); string(b) != "mine" {
		t.Error("the user's file changed")
	}
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	return strings.Join(l[:min(n, len(l))], "\n")
}

// TestVersion: --version and version print the same line; JSON carries
// the schema and tool versions.
func TestVersion(t *testing.T) {
	a, _, c1 := run(t, "--version")
	b, _, c2 := run(t, "version")
	want := version.Get().String() + "\n"
	if c1 != 0 || c2 != 0 || a != want || b != want || !strings.Contains(a, runtime.Version()) {
		t.Errorf("--version %q (%d), version %q (%d), want %q", a, c1, b, c2, want)
	}
	out, _, code := run(t, "version", "--format", "json")
	var v struct {
		Schema  int    `json:"schema_version"`
		Tool    string `json:"tool_version"`
		Version string `json:"version"`
		Go      string `json:"go"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Schema != version.Schema || v.Tool != version.Tool() || v.Go != runtime.Version() {
		t.Errorf("%d %q", code, out)
	}
	if _, errOut, code := run(t, "version", "extra"); code != 2 || !strings.Contains(errOut, "see traceaudit version --help") {
		t.Errorf("%d %q", code, errOut)
	}
}
