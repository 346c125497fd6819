package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/driver"
	"github.com/traceaudit/traceaudit/internal/testing/golden"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/report"
	"github.com/traceaudit/traceaudit/report/folder"
)

// checkReportFolder asserts every plot exists as a decodable PNG of at least
// 1200x600 and an SVG, and that report.md links each PNG.
func checkReportFolder(t *testing.T, dir string, plots []string) string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) {
		t.Errorf("report.html: %v", err)
	}
	var js map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil || json.Unmarshal(b, &js) != nil {
		t.Fatalf("report.json: %v", err)
	}
	for _, p := range plots {
		f, err := os.Open(filepath.Join(dir, p+".png"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width < 1200 || cfg.Height < 600 {
			t.Errorf("%s.png: %v %dx%d", p, err, cfg.Width, cfg.Height)
		}
		svg, err := os.ReadFile(filepath.Join(dir, p+".svg"))
		if err != nil || !bytes.Contains(svg, []byte("<svg")) {
			t.Errorf("%s.svg: %v", p, err)
		}
		if !bytes.Contains(md, []byte("]("+p+".png)")) {
			t.Errorf("report.md does not link %s.png", p)
		}
		if !strings.Contains(section(string(page), `<figure id="plot-`+p+`"`, "</figure>"), "<svg") {
			t.Errorf("report.html does not show %s inline", p)
		}
	}
	return string(md)
}

func TestAnalyzeOut(t *testing.T) {
	for _, name := range []string{"b0_pageable_sync.nsys.sqlite", "r0_baseline.pt.trace.json.gz"} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "audit")
			_, errOut, code := run(t, "analyze", "--out", out, filepath.Join("fixtures", name))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			md := checkReportFolder(t, out, []string{"timeline", "utilization", "steps", "findings"})
			checkMarkdown(t, "report.md", md)
			md = strings.ReplaceAll(md, out, "OUT")
			golden.Check(t, filepath.Join(testfix.Root(), "cmd/traceaudit/cli/testdata", name+".report.md"), []byte(md))
		})
	}
}

// TestAnalyzeOutSharedR0 writes the report folder of the H200 r0_baseline
// nsys export: every plot, decodable and large enough, linked from report.md.
func TestAnalyzeOutSharedR0(t *testing.T) {
	src := testfix.Shared(t, "h200", "r0_baseline.nsys.sqlite")
	out := filepath.Join(t.TempDir(), "audit")
	if _, errOut, code := run(t, "analyze", "--out", out, src); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	md := checkReportFolder(t, out, []string{"timeline", "utilization", "steps", "findings"})
	for _, want := range []string{"input-bound", "`dataloader-wait`", "`sync-memcpy`", "Produced by `traceaudit analyze --out"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

func TestFailedRunKeepsPreviousReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "audit")
	if _, errOut, code := run(t, "analyze", "--out", out, "fixtures/b0_pageable_sync.pt.trace.json.gz"); code != 0 {
		t.Fatal(errOut)
	}
	before, _ := os.ReadFile(filepath.Join(out, "report.md"))
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"traceEvents": 7}`), 0o644)
	if _, _, code := run(t, "analyze", "--out", out, bad); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	after, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !bytes.Equal(before, after) {
		t.Error("a failed run changed the previous report")
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 1 {
		t.Errorf("leftovers beside the report folder: %v", entries)
	}
}

func TestDiff(t *testing.T) {
	r0, r3 := "fixtures/r0_baseline.pt.trace.json.gz", "fixtures/r3_streams.pt.trace.json.gz"
	for _, format := range []string{"text", "markdown", "json"} {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := run(t, "diff", "--format", format, r0, r3)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			ext := map[string]string{"text": "txt", "json": "json", "markdown": "md"}[format]
			if format == "markdown" {
				checkMarkdown(t, "diff", out)
			}
			golden.Check(t, filepath.Join(testfix.Root(), "cmd/traceaudit/cli/testdata", "r0-r3.diff."+ext), []byte(out))
		})
	}
	out, _, _ := run(t, "diff", "--format", "json", r0, r3)
	var d struct {
		StepSpeedup float64  `json:"step_speedup"`
		Resolved    []string `json:"resolved"`
		New         []string `json:"new"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	// The traces' median steps are 511 ms and 61.6 ms (r3's GPU runs behind
	// its host, so its steps are GPU-paced).
	if d.StepSpeedup < 7.5 || d.StepSpeedup > 8.5 {
		t.Errorf("step speedup %.2f", d.StepSpeedup)
	}
	for _, id := range []string{"dataloader-wait", "sync-memcpy"} {
		if !strings.Contains(strings.Join(d.Resolved, " "), id) {
			t.Errorf("%s not resolved: %v", id, d.Resolved)
		}
	}
	if len(d.New) != 0 {
		t.Errorf("new %v", d.New)
	}
	// The reverse brings starvation back: CI must fail.
	if _, errOut, code := run(t, "diff", "--fail-on", "warning", r3, r0); code != 1 || !strings.Contains(errOut, "new or regressed") {
		t.Errorf("reverse diff: exit %d, %q", code, errOut)
	}
	if _, _, code := run(t, "diff", "--fail-on", "warning", r0, r3); code != 0 {
		t.Errorf("the fix must pass CI: exit %d", code)
	}
	dir := filepath.Join(t.TempDir(), "d")
	if _, errOut, code := run(t, "diff", "--out", dir, r0, r3); code != 0 {
		t.Fatal(errOut)
	}
	checkReportFolder(t, dir, []string{"steps-diff"})
}

func TestReplayDryRun(t *testing.T) {
	out, errOut, code := run(t, "replay", "--dry-run", "--format", "json", "fixtures/b0_pageable_sync.nsys.sqlite")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		DryRun   bool  `json:"dry_run"`
		Observed int64 `json:"observed_step_ns"`
		Variants []struct {
			Name   string  `json:"name"`
			FixFor *string `json:"fix_for"`
			Pred   float64 `json:"predicted_speedup"`
			Step   *int64  `json:"step_ns_median"`
		} `json:"variants"`
		Fidelity *struct{} `json:"fidelity"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if !r.DryRun || r.Observed <= 0 || len(r.Variants) < 3 || r.Fidelity != nil {
		t.Fatalf("%+v", r)
	}
	if r.Variants[0].Name != "observed" || r.Variants[0].FixFor != nil || r.Variants[1].Name != "pinned" || *r.Variants[1].FixFor != "sync-memcpy" {
		t.Errorf("variants %+v", r.Variants)
	}
	for _, v := range r.Variants {
		if v.Step != nil {
			t.Errorf("%s has a measured step in a dry run", v.Name)
		}
	}
	dir := filepath.Join(t.TempDir(), "plan")
	if _, errOut, code := run(t, "replay", "--dry-run", "--out", dir, "fixtures/b0_pageable_sync.nsys.sqlite"); code != 0 {
		t.Fatalf("--out: exit %d: %s", code, errOut)
	}
	checkReportFolder(t, dir, nil)
	if page, _ := os.ReadFile(filepath.Join(dir, "report.html")); !strings.Contains(string(page), "Dry run: the plan only") || !strings.Contains(string(page), "<td>pinned</td>") {
		t.Errorf("replay report.html lacks the plan")
	}
	if _, errOut, code := run(t, "replay", "--variants", "nope", "--dry-run", "fixtures/b0_pageable_sync.nsys.sqlite"); code != 2 || !strings.Contains(errOut, "unknown variant") {
		t.Errorf("bad variant: %d %q", code, errOut)
	}
}

func TestReplayWithoutGPU(t *testing.T) {
	if _, err := os.Stat("/usr/lib/x86_64-linux-gnu/libcuda.so.1"); err == nil {
		t.Skip("this machine has a CUDA driver")
	}
	_, errOut, code := run(t, "replay", "fixtures/b0_pageable_sync.nsys.sqlite")
	if code != 2 || !strings.Contains(errOut, "libcuda.so.1") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestOutNeverDeletesUserFiles runs analyze, diff and replay with --out
// pointing at folders the user owns: each is refused with exit 2 and one
// line naming the folder, before any work, and nothing of the user's goes.
func TestOutNeverDeletesUserFiles(t *testing.T) {
	trace := filepath.Join("fixtures", "b0_pageable_sync.nsys.sqlite")
	parent := t.TempDir()
	t.Setenv("HOME", filepath.Join(parent, "home"))
	os.MkdirAll(filepath.Join(parent, "home"), 0o755)
	keep := filepath.Join(parent, "keep")
	os.MkdirAll(filepath.Join(keep, "sub"), 0o755)
	os.WriteFile(filepath.Join(keep, "notes.txt"), []byte("mine"), 0o644)
	os.WriteFile(filepath.Join(keep, "sub", "data.bin"), []byte("mine too"), 0o644)
	file := filepath.Join(parent, "afile")
	os.WriteFile(file, []byte("mine"), 0o644)
	commands := map[string][]string{
		"analyze": {"analyze", trace},
		"diff":    {"diff", trace, trace},
		"replay":  {"replay", "--dry-run", trace},
	}
	for _, name := range []string{"analyze", "diff", "replay"} {
		for _, dir := range []string{keep, file, ".", "/", filepath.Join(parent, "home")} {
			t.Run(name+"/"+filepath.Base(dir), func(t *testing.T) {
				args := append([]string{commands[name][0], "--out", dir}, commands[name][1:]...)
				out, errOut, code := run(t, args...)
				if code != 2 || out != "" {
					t.Fatalf("exit %d, stdout %q", code, out)
				}
				if strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, dir+": ") {
					t.Errorf("want one line naming %s: %q", dir, errOut)
				}
				if b, _ := os.ReadFile(filepath.Join(keep, "notes.txt")); string(b) != "mine" {
					t.Fatal("notes.txt lost")
				}
				if b, _ := os.ReadFile(filepath.Join(keep, "sub", "data.bin")); string(b) != "mine too" {
					t.Fatal("sub/data.bin lost")
				}
				if b, _ := os.ReadFile(file); string(b) != "mine" {
					t.Fatal("file overwritten")
				}
			})
		}
	}
	// A previous report is replaced; an empty folder is filled.
	for _, name := range []string{"analyze", "diff", "replay"} {
		dir := filepath.Join(parent, "report-"+name)
		os.MkdirAll(dir, 0o755)
		for i := 0; i < 2; i++ {
			args := append([]string{commands[name][0], "--out", dir}, commands[name][1:]...)
			if _, errOut, code := run(t, args...); code != 0 {
				t.Fatalf("%s run %d: exit %d: %s", name, i, code, errOut)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, ".traceaudit-report")); err != nil {
			t.Errorf("%s: no marker: %v", name, err)
		}
	}
}

// TestReplayProfilerCost: a cost per event given as a duration comes out
// of the dry run's plan and is reported; a bad value is a usage error.
func TestReplayProfilerCost(t *testing.T) {
	trace := "fixtures/r0_baseline.pt.trace.json.gz"
	type doc struct {
		Profiler *struct {
			EventNS    int64  `json:"event_ns"`
			Source     string `json:"source"`
			DataEvents int    `json:"data_events"`
			RemovedNS  int64  `json:"removed_ns"`
		} `json:"profiler"`
		Step struct {
			DataNS int64 `json:"data_ns"`
		} `json:"step"`
	}
	var plain, less doc
	for _, c := range []struct {
		args []string
		d    *doc
	}{{nil, &plain}, {[]string{"--profiler-cost", "1.5us"}, &less}} {
		args := append([]string{"replay", "--dry-run", "--format", "json"}, c.args...)
		out, errOut, code := run(t, append(args, trace)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if err := json.Unmarshal([]byte(out), c.d); err != nil {
			t.Fatal(err)
		}
	}
	pr := less.Profiler
	if plain.Profiler != nil || pr == nil || pr.EventNS != 1500 || pr.Source != "--profiler-cost 1.5us" || pr.DataEvents <= 0 {
		t.Fatalf("profiler %+v (without the flag %+v)", pr, plain.Profiler)
	}
	if got := plain.Step.DataNS - less.Step.DataNS; got != int64(pr.DataEvents)*1500 || pr.RemovedNS < got {
		t.Errorf("data phase %d → %d ns for %d events, removed %d", plain.Step.DataNS, less.Step.DataNS, pr.DataEvents, pr.RemovedNS)
	}
	for _, bad := range []string{"fast", "-1us", "0", "2ms"} {
		if _, errOut, code := run(t, "replay", "--dry-run", "--profiler-cost", bad, trace); code != 2 || !strings.Contains(errOut, "--profiler-cost "+bad) {
			t.Errorf("--profiler-cost %s: exit %d, %q", bad, code, errOut)
		}
	}
}

// TestReplayUnprofiledStep: --unprofiled-step takes the trace's mean step
// less the given step out of the host phases, spread over the events
// recorded there, on an nsys export as on a Chrome trace, or over the
// host phases by their length where that would be more per event than a
// profiler costs; a step that is not shorter leaves the plan as it is and
// says why; a negative step, or one given with --profiler-cost, is a
// usage error.
func TestReplayUnprofiledStep(t *testing.T) {
	type doc struct {
		MeanNS   int64    `json:"observed_step_ns_mean"`
		Notes    []string `json:"notes"`
		Profiler *struct {
			EventNS          int64   `json:"event_ns"`
			Source           string  `json:"source"`
			DataEvents       int     `json:"data_events"`
			IdleEvents       int     `json:"idle_events"`
			RemovedNS        int64   `json:"removed_ns"`
			UnprofiledStepNS int64   `json:"unprofiled_step_ns"`
			HostShare        float64 `json:"host_share"`
		} `json:"profiler"`
	}
	replayJSON := func(args ...string) (doc, string) {
		t.Helper()
		out, errOut, code := run(t, append([]string{"replay", "--dry-run", "--format", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var d doc
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		return d, errOut
	}
	for _, trace := range []string{"fixtures/c0_cpu_straggler.nsys.sqlite", "fixtures/r0_baseline.pt.trace.json.gz"} {
		plain, _ := replayJSON(trace)
		given := plain.MeanNS - 2_000_000
		d, _ := replayJSON("--unprofiled-step", fmt.Sprintf("%dns", given), trace)
		pr := d.Profiler
		if pr == nil || pr.UnprofiledStepNS != given || !strings.Contains(pr.Source, "from --unprofiled-step") {
			t.Fatalf("%s: profiler %+v", trace, pr)
		}
		n := int64(pr.DataEvents + pr.IdleEvents)
		if n == 0 || pr.EventNS != 2_000_000/n || pr.RemovedNS > 2_000_000 || pr.RemovedNS < 2_000_000-n {
			t.Errorf("%s: %d events at %d ns, removed %d of 2 ms", trace, n, pr.EventNS, pr.RemovedNS)
		}
		longer, errOut := replayJSON("--unprofiled-step", fmt.Sprintf("%dns", plain.MeanNS+1), trace)
		if longer.Profiler != nil || !strings.Contains(errOut, "is not shorter than the trace's mean step") ||
			strings.Contains(strings.Join(longer.Notes, "\n"), "ran faster than the loop") {
			t.Errorf("%s: a longer step: profiler %+v, %q, notes %q", trace, longer.Profiler, errOut, longer.Notes)
		}
		// A step far longer than the trace's: the traced run ran faster
		// than the loop that was timed, and the document says so.
		far, _ := replayJSON("--unprofiled-step", fmt.Sprintf("%dns", plain.MeanNS*3/2), trace)
		if far.Profiler != nil || !strings.Contains(strings.Join(far.Notes, "\n"), "is 1.50x the trace's mean step") {
			t.Errorf("%s: a step 1.5x the trace's: profiler %+v, notes %q", trace, far.Profiler, far.Notes)
		}
		// 25 µs an event is more than a profiler costs: the difference is
		// spread over the host phases by their length instead.
		if far := plain.MeanNS - (MaxEventNS+5_000)*n; far > 0 {
			d, _ := replayJSON("--unprofiled-step", fmt.Sprintf("%dns", far), trace)
			pr := d.Profiler
			if pr == nil || pr.EventNS != 0 || pr.HostShare <= 0 || pr.HostShare > 1 || pr.UnprofiledStepNS != far ||
				!strings.Contains(pr.Source, "more than a profiler costs") || pr.RemovedNS > plain.MeanNS-far {
				t.Errorf("%s: 25 µs an event: profiler %+v", trace, pr)
			}
		}
	}
	// A rate, as a progress bar shows it, is the step it stands for.
	trace := "fixtures/c0_cpu_straggler.nsys.sqlite"
	for _, rate := range []string{"12.5it/s", "12.5/s"} {
		if d, _ := replayJSON("--unprofiled-step", rate, trace); d.Profiler == nil || d.Profiler.UnprofiledStepNS != 80_000_000 {
			t.Errorf("--unprofiled-step %s: profiler %+v, want the step of 80 ms", rate, d.Profiler)
		}
	}
	for _, args := range [][]string{{"--unprofiled-step", "-5ms"}, {"--unprofiled-step", "5ms", "--profiler-cost", "1us"}, {"--unprofiled-step", "fast"},
		{"--unprofiled-step", "0it/s"}, {"--unprofiled-step", "-3/s"}, {"--unprofiled-step", "x/s"}, {"--unprofiled-step", "1e12it/s"}} {
		if _, errOut, code := run(t, append(append([]string{"replay", "--dry-run"}, args...), trace)...); code != 2 || !strings.Contains(errOut, "unprofiled-step") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}

// An interrupted command (Ctrl-C, SIGTERM: a cancelled context) exits 130
// with one line and writes nothing: not the report folder, not stdout; a
// previous report stays as it was.
func TestInterruptedWritesNothing(t *testing.T) {
	t.Chdir(testfix.Root())
	dir := filepath.Join(t.TempDir(), "audit")
	trace := "fixtures/b0_pageable_sync.nsys.sqlite"
	if _, errOut, code := run(t, "analyze", "--out", dir, trace); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	before, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"analyze", "--out", dir, "fixtures/r0_baseline.pt.trace.json.gz"},
		{"analyze", "--out", dir + "2", trace},
		{"stats", trace},
		{"diff", "--out", dir + "3", trace, trace},
		{"replay", "--dry-run", "--out", dir + "4", trace},
	} {
		var out, errb bytes.Buffer
		code := Run(args, &IO{Out: &out, Err: &errb, Ctx: ctx})
		if code != ExitInterrupted || errb.String() != "traceaudit: interrupted\n" || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q", args, code, out.Len(), errb.String())
		}
	}
	after, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("the previous report changed: %v", err)
	}
	if es, _ := os.ReadDir(filepath.Dir(dir)); len(es) != 1 {
		t.Errorf("left beside the report: %d entries", len(es))
	}
}

// folder.Write stops at a cancelled context and leaves nothing.
func TestFolderWriteInterrupted(t *testing.T) {
	t.Chdir(testfix.Root())
	res, err := driver.Analyze([]string{"fixtures/b0_pageable_sync.nsys.sqlite"}, driver.Options{KeepTimeline: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	parent := t.TempDir()
	if err := folder.Write(ctx, filepath.Join(parent, "audit"), report.ForAnalysis(res.Single), report.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("write with a cancelled context: %v", err)
	}
	if es, _ := os.ReadDir(parent); len(es) != 0 {
		t.Errorf("left: %v", es)
	}
}

// TestOutSaysWhatItWrote: --out names the files it wrote on stderr, the
// report a person opens first, and leaves stdout to the report.
func TestOutSaysWhatItWrote(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	out, errOut, code := run(t, "analyze", "--out", dir, "fixtures/r0_baseline.pt.trace.json.gz")
	if code != 0 || strings.Contains(out, "wrote") {
		t.Fatalf("exit %d, stdout %q", code, out[:min(len(out), 200)])
	}
	want := "traceaudit: wrote " + dir + "/: report.html (open in a browser), report.md, report.json, annotated.json (open in ui.perfetto.dev), 4 plot(s) (PNG and SVG)\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}
