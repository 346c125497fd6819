package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/golden"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/report"
)

var (
	d0Ranks = []string{"fixtures/h200-ddp/d0_straggler.rank0.pt.trace.json.gz", "fixtures/h200-ddp/d0_straggler.rank1.pt.trace.json.gz"}
	d1Ranks = []string{"fixtures/h200-ddp/d1_balanced.rank0.pt.trace.json.gz", "fixtures/h200-ddp/d1_balanced.rank1.pt.trace.json.gz"}
)

// The job report of d0_straggler's two Chrome ranks, in every format.
func TestJobGolden(t *testing.T) {
	for _, format := range []string{"text", "brief", "json", "markdown"} {
		t.Run(format, func(t *testing.T) {
			// text is the whole report (--verbose), brief the default.
			args := []string{"analyze", "--format", format}
			switch format {
			case "text":
				args = []string{"analyze", "--verbose"}
			case "brief":
				args = []string{"analyze"}
			}
			out, errOut, code := run(t, append(args, d0Ranks...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			ext := map[string]string{"text": "txt", "brief": "brief.txt", "json": "json", "markdown": "md"}[format]
			golden.Check(t, filepath.Join(testfix.Root(), "cmd/traceaudit/cli/testdata", "d0_straggler.job."+ext), []byte(out))
		})
	}
	out, _, _ := run(t, append([]string{"analyze", "--format", "json"}, d0Ranks...)...)
	var doc struct {
		Schema int    `json:"schema_version"`
		Tool   string `json:"tool_version"`
		Job    struct {
			Ranks     int  `json:"ranks"`
			WorldSize *int `json:"world_size"`
			Straggler *struct {
				Rank   int    `json:"rank"`
				Device int    `json:"device"`
				PID    int    `json:"pid"`
				File   string `json:"file"`
				Cause  string `json:"cause"`
				Wait   int64  `json:"wait_ns_per_step"`
			} `json:"straggler"`
			StepNSByRank []int64 `json:"step_ns_by_rank"`
		} `json:"job"`
		Ranks []struct {
			Rank        int    `json:"rank"`
			Device      int    `json:"device"`
			PID         int    `json:"pid"`
			Verdict     string `json:"verdict"`
			Collectives []struct {
				Name      string `json:"name"`
				Bytes     int64  `json:"bytes"`
				ArrivalNS int64  `json:"arrival_ns"`
				EndNS     int64  `json:"end_ns"`
			} `json:"collectives"`
		} `json:"ranks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Job.Straggler
	if doc.Schema < 1 || doc.Tool == "" || doc.Job.Ranks != 2 || *doc.Job.WorldSize != 2 || s == nil || s.Rank != 1 || s.Device != 1 ||
		s.PID != 667 || s.Cause != "dataloader-wait" || !strings.HasSuffix(s.File, "rank1.pt.trace.json.gz") || len(doc.Job.StepNSByRank) != 2 {
		t.Errorf("job %+v", doc.Job)
	}
	if len(doc.Ranks) != 2 || doc.Ranks[0].Rank != 0 || doc.Ranks[0].PID != 666 || !strings.HasPrefix(doc.Ranks[0].Verdict, "communication-bound") ||
		len(doc.Ranks[0].Collectives) == 0 || doc.Ranks[0].Collectives[0].Bytes == 0 {
		t.Errorf("ranks %+v", doc.Ranks)
	}
}

// `traceaudit job` over the per-rank JSON of `analyze --format json`, one
// task per rank, prints the same document as the analysis of the traces
// together; its --out writes the rank plot.
func TestJobReduceEqualsAnalyze(t *testing.T) {
	for _, ranks := range [][]string{d0Ranks, d1Ranks} {
		together, errOut, code := run(t, append([]string{"analyze", "--format", "json"}, ranks...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		dir := t.TempDir()
		var summaries []string
		for i, r := range ranks {
			out, errOut, code := run(t, "analyze", "--format", "json", r)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			p := filepath.Join(dir, "rank"+string(rune('0'+i))+".json")
			if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			summaries = append(summaries, p)
		}
		reduced, errOut, code := run(t, append([]string{"job", "--format", "json"}, summaries...)...)
		if code != 0 {
			t.Fatalf("job: exit %d: %s", code, errOut)
		}
		if reduced != together {
			t.Errorf("%s: traceaudit job differs from traceaudit analyze of the traces together", ranks[0])
		}
		text, _, _ := run(t, append([]string{"analyze"}, ranks...)...)
		jobText, _, _ := run(t, append([]string{"job"}, summaries...)...)
		if text != jobText {
			t.Errorf("%s: text reports differ", ranks[0])
		}
	}
	out := filepath.Join(t.TempDir(), "job")
	if _, errOut, code := run(t, append([]string{"analyze", "--out", out}, d0Ranks...)...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	md := checkReportFolder(t, out, []string{"ranks"})
	if !strings.Contains(md, "straggler") || !strings.Contains(md, "| 0 | 0 | 666 |") {
		t.Errorf("report.md:\n%s", md)
	}
}

// d1_balanced names no straggler, in every format.
func TestBalancedJob(t *testing.T) {
	out, errOut, code := run(t, append([]string{"analyze"}, d1Ranks...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "no rank holds the others back") || strings.Contains(out, "straggler") {
		t.Errorf("d1_balanced:\n%s", out)
	}
	js, _, _ := run(t, append([]string{"analyze", "--format", "json"}, d1Ranks...)...)
	if !strings.Contains(js, `"straggler": null`) {
		t.Error("JSON straggler not null")
	}
}

// Exit codes and messages of the multi-file flow.
func TestJobAndBatchErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("not a trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args    []string
		code    int
		stdout  string
		errText string
	}{
		// A folder of several jobs is a batch of them, with their table.
		{[]string{"analyze", "fixtures/h200-ddp"}, 0, "d1_balanced.nsys.sqlite                  host-bound", ""},
		// A batch: the good traces analysed, the bad one named, exit 2.
		{[]string{"analyze", "--format", "json", "fixtures/r3_streams.pt.trace.json.gz", bad, "fixtures/b0_pageable_sync.pt.trace.json.gz"}, 2,
			`"files": [`, "bad.json: not a recognised profile"},
		// A rank that cannot be read fails the job.
		{[]string{"analyze", d0Ranks[0], d0Ranks[1], bad}, 2, "", "bad.json"},
		{[]string{"job", "fixtures/r0_baseline.pt.trace.json.gz"}, 2, "", "not a traceaudit analysis"},
		{[]string{"job"}, 2, "", "want the analyses"},
		{[]string{"diff", "fixtures/r0_baseline.pt.trace.json.gz", "fixtures/h200-ddp/d0_straggler.nsys.sqlite"}, 2, "", "compare one trace with another, or a job with a job"},
		{[]string{"replay", "--dry-run", "fixtures/h200-ddp/d1_balanced.nsys.sqlite", "--rank", "7"}, 2, "", "no rank 7 in the job"},
		{[]string{"replay", "--dry-run", "--rank", "1", "fixtures/r0_baseline.pt.trace.json.gz"}, 2, "", "holds one GPU process"},
		{[]string{"replay", "--dry-run", d1Ranks[0], d1Ranks[1]}, 2, "", "no rank of this job holds the others back"},
		{[]string{"analyze", "--verbose", "--band", "straggler=0.5,0.9", d0Ranks[0], d0Ranks[1]}, 0, "1. WARNING straggler", ""},
	}
	// A batch's report folder holds each trace's report; a batch with a bad
	// trace writes none.
	dir := filepath.Join(t.TempDir(), "o")
	if _, errOut, code := run(t, "analyze", "--out", dir, "fixtures/r3_streams.pt.trace.json.gz", "fixtures/b0_pageable_sync.pt.trace.json.gz"); code != 0 {
		t.Fatalf("batch --out: exit %d %s", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || strings.Count(string(md), "## traceaudit: ") != 2 {
		t.Errorf("batch report.md: %v\n%s", err, md)
	}
	if js, err := os.ReadFile(filepath.Join(dir, "report.json")); err != nil || !strings.Contains(string(js), `"files": [`) {
		t.Errorf("batch report.json: %v", err)
	}
	dir2 := filepath.Join(t.TempDir(), "o")
	if _, _, code := run(t, "analyze", "--out", dir2, "fixtures/r3_streams.pt.trace.json.gz", bad); code != 2 {
		t.Errorf("batch with a bad trace: exit %d", code)
	}
	if _, err := os.Stat(dir2); !os.IsNotExist(err) {
		t.Errorf("a failed batch wrote %s", dir2)
	}
	for _, c := range cases {
		out, errOut, code := run(t, c.args...)
		if code != c.code || !strings.Contains(out, c.stdout) || !strings.Contains(errOut, c.errText) {
			t.Errorf("%v: exit %d, stderr %q, stdout %.200q", c.args, code, errOut, out)
		}
		if c.code == 2 && c.stdout == "" && out != "" {
			t.Errorf("%v: output on a failed run", c.args)
		}
	}
}

// copyInto copies fixtures into a new folder.
func copyInto(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(testfix.Root(), f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// diff of two jobs (folders of rank traces): the fix d1 against d0, per
// rank, with the straggler resolved.
func TestJobDiff(t *testing.T) {
	before, after := copyInto(t, d0Ranks...), copyInto(t, d1Ranks...)
	out, errOut, code := run(t, "diff", "--format", "json", before, after)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d struct {
		StepSpeedup float64 `json:"step_speedup"`
		Straggler   struct {
			Before *struct{ Rank int } `json:"before"`
			After  *struct{ Rank int } `json:"after"`
			Status string              `json:"status"`
		} `json:"straggler"`
		Ranks []struct {
			Rank        int     `json:"rank"`
			StepSpeedup float64 `json:"step_speedup"`
			Findings    struct {
				Changes []struct {
					ID     string `json:"id"`
					Before struct {
						Severity string `json:"severity"`
					} `json:"before"`
					After struct {
						Severity string `json:"severity"`
					} `json:"after"`
				} `json:"changes"`
			} `json:"findings"`
		} `json:"ranks"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	// Steps of 247 ms and 32.0 ms at the slowest rank; rank 0's exposed
	// collectives drop from an error (83 % of its step) to a warning (18 %).
	commExposed := ""
	if len(d.Ranks) == 2 {
		for _, c := range d.Ranks[0].Findings.Changes {
			if c.ID == "comm-exposed" {
				commExposed = c.Before.Severity + " -> " + c.After.Severity
			}
		}
	}
	if d.StepSpeedup < 7 || d.StepSpeedup > 8.5 || d.Straggler.Before == nil || d.Straggler.Before.Rank != 1 || d.Straggler.After != nil ||
		d.Straggler.Status != "resolved" || len(d.Ranks) != 2 || commExposed != "error -> warning" {
		t.Errorf("job diff (rank 0's comm-exposed %q) %s", commExposed, out[:min(len(out), 2000)])
	}
	text, _, _ := run(t, "diff", before, after)
	text = strings.ReplaceAll(strings.ReplaceAll(text, before, "BEFORE"), after, "AFTER")
	golden.Check(t, filepath.Join(testfix.Root(), "cmd/traceaudit/cli/testdata", "d0-d1.diff.txt"), []byte(text))
	// The reverse brings the straggler back: CI fails.
	if _, errOut, code := run(t, "diff", "--fail-on", "warning", after, before); code != 1 || !strings.Contains(errOut, "new or regressed") {
		t.Errorf("reverse job diff: exit %d %s", code, errOut)
	}
}

// replay of a job replays the straggler's rank, or --rank N.
func TestJobReplay(t *testing.T) {
	out1, errOut, code := run(t, "replay", "--dry-run", "fixtures/h200-ddp/d0_straggler.nsys.sqlite")
	if code != 0 || !strings.Contains(errOut, "replaying rank 1, the straggler (GPU 1, pid 893") || !strings.Contains(out1, "prefetch-workers") {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out1)
	}
	out0, errOut, code := run(t, "replay", "--dry-run", "--rank", "0", "fixtures/h200-ddp/d0_straggler.nsys.sqlite")
	if code != 0 || !strings.Contains(errOut, "replaying rank 0") || out0 == out1 {
		t.Errorf("rank 0: exit %d %s", code, errOut)
	}
	// The straggler of the Chrome ranks too.
	if _, errOut, code := run(t, append([]string{"replay", "--dry-run"}, d0Ranks...)...); code != 0 || !strings.Contains(errOut, "replaying rank 1") {
		t.Errorf("chrome ranks: exit %d %s", code, errOut)
	}
}

// Two trimmed captures without step markers (nsys windows of 300 ms of a
// 2-GPU job): their "steps" are the windows, so diff gives no speedup and
// says why, per job and per rank, and analyze says figures are per window.
func TestDiffOfWindowsGivesNoSpeedup(t *testing.T) {
	before := testfix.Shared(t, "nsys", "nsys-2026.2.1_torch-2gpu-nvtx-before-window_nsysai.sqlite")
	after := testfix.Shared(t, "nsys", "nsys-2026.2.1_torch-2gpu-nvtx-after-window_nsysai.sqlite")
	out, errOut, code := run(t, "diff", "--format", "json", before, after)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d struct {
		StepSpeedup float64  `json:"step_speedup"`
		Warnings    []string `json:"warnings"`
		Ranks       []struct {
			StepSpeedup float64 `json:"step_speedup"`
		} `json:"ranks"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.StepSpeedup != 0 || len(d.Ranks) != 2 || d.Ranks[0].StepSpeedup != 0 || d.Ranks[1].StepSpeedup != 0 || len(d.Warnings) != 1 ||
		!strings.HasPrefix(d.Warnings[0], "no step markers in the job before (2 of 2 ranks, a window of 300 ms) and the job after (2 of 2 ranks") {
		t.Errorf("diff of windows: %s", out[:min(len(out), 1500)])
	}
	text, _, _ := run(t, "diff", before, after)
	if !strings.Contains(text, "(no step speedup: no step markers)") || strings.Contains(text, "faster") || strings.Contains(text, "slower") {
		t.Errorf("text diff of windows:\n%s", text)
	}
	an, _, _ := run(t, "analyze", "--verbose", before)
	if !strings.Contains(an, "(steps from window); the trace marks no steps, so the window is judged as one step") {
		t.Errorf("analyze of a window:\n%s", an)
	}
}

// TestJobDiffLooseSteps: a job diff whose pace change lies within what
// the slowest ranks' steps can tell warns, naming those ranks (the
// balanced run against itself: 1.00x, its rank 1's 5 steps of 22.7 to
// 45.1 ms known to ±13 %); the straggler run against the balanced one
// (8.90x) does not.
func TestJobDiffLooseSteps(t *testing.T) {
	balanced := testfix.Shared(t, "h200-ddp", "d1_balanced.nsys.sqlite")
	straggler := testfix.Shared(t, "h200-ddp", "d0_straggler.nsys.sqlite")
	warnings := func(before, after string) []string {
		out, errOut, code := run(t, "diff", "--format", "json", before, after)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var d struct {
			Warnings []string `json:"warnings"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		return d.Warnings
	}
	ws := warnings(balanced, balanced)
	want := "the step speedup (1.00x) is within what these steps can tell, judged by their means' standard errors: they spread too far for their count in rank 1 of the job before (5 steady steps of 22.7 ms to 45.1 ms: their mean known to ±13 %, about 9 steps for ±10 %) and rank 1 of the job after"
	if len(ws) != 1 || !strings.HasPrefix(ws[0], want) {
		t.Errorf("the balanced run against itself: warnings %q", ws)
	}
	for _, w := range warnings(straggler, balanced) {
		if strings.Contains(w, "within what these steps can tell") {
			t.Errorf("straggler -> balanced (8.90x): %q", w)
		}
	}
}

// A job of 40 ranks (d0's two rank analyses, their rank ids rewritten)
// prints in a screen: the straggler and the ranks that wait least among
// MaxBriefRanks rows, the rest summed up in a line; --verbose lists all.
func TestJobBriefOfManyRanks(t *testing.T) {
	dir := t.TempDir()
	var docs []map[string]any
	for _, r := range d0Ranks {
		out, errOut, code := run(t, "analyze", "--format", "json", r)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var d map[string]any
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	const ranks = 40
	var files []string
	for r := range ranks {
		d := docs[r%2]
		d["rank"], d["world_size"] = r, ranks
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("rank-%02d.json", r))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	brief, errOut, code := run(t, append([]string{"job"}, files...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(brief), "\n")
	rows := 0
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 1 && (f[1] == "*" || f[1] == "1" || f[1] == "0") && f[0] != "rank" {
			rows++
		}
	}
	if len(lines) > 60 || rows != report.MaxBriefRanks || !strings.Contains(brief, "1 *") ||
		!strings.Contains(brief, "32 ranks not listed") {
		t.Errorf("brief of %d ranks: %d lines, %d rank rows, want at most 60 and %d rows with the straggler, the rest summed up:\n%s",
			ranks, len(lines), rows, report.MaxBriefRanks, brief)
	}
	verbose, _, _ := run(t, append([]string{"job", "--verbose"}, files...)...)
	if !strings.Contains(verbose, "\n39 ") || strings.Contains(verbose, "not listed") {
		t.Errorf("--verbose should list every rank")
	}
}
