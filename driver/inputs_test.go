package driver

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

func ddp(name string) string { return testfix.Project(filepath.Join("h200-ddp", name)) }

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.json", "b.sqlite", "b.nsys-rep", "c.nsys-rep", "notes.txt", ".hidden.json"} {
		body := "{}"
		switch f {
		case "b.sqlite":
			body = "SQLite format 3\x00"
		case "notes.txt":
			body = "hello"
		case "b.nsys-rep", "c.nsys-rep":
			body = "\x00\x01binary report"
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := Expand([]string{dir, "x.json"})
	files, folders, skipped := in.Files, in.Folders, in.Skipped
	if err != nil {
		t.Fatal(err)
	}
	// b.nsys-rep is skipped for b.sqlite, its export; c.nsys-rep is read.
	if strings.Join(files, " ") != filepath.Join(dir, "a.json")+" "+filepath.Join(dir, "b.sqlite")+" "+filepath.Join(dir, "c.nsys-rep")+" x.json" ||
		len(folders) != 1 || len(skipped) != 1 || !strings.HasSuffix(skipped[0], "b.nsys-rep") {
		t.Errorf("files %v folders %v skipped %v", files, folders, skipped)
	}
	empty := t.TempDir()
	if _, err := Expand([]string{empty}); err == nil || !strings.Contains(err.Error(), "holds no trace files") {
		t.Errorf("empty folder: %v", err)
	}
}

// The acceptance tests of issue 10 on the project's two-GPU DDP captures.
func TestStragglerJobChrome(t *testing.T) {
	res, err := Analyze([]string{ddp("d0_straggler.rank1.pt.trace.json.gz"), ddp("d0_straggler.rank0.pt.trace.json.gz")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkStraggler(t, res)
}

func TestStragglerJobNsys(t *testing.T) {
	res, err := Analyze([]string{ddp("d0_straggler.nsys.sqlite")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkStraggler(t, res)
	// Every GPU process, each with steps from its own "get batch" ranges
	// (never NCCL's ncclAllReduce range).
	for i, r := range res.Job.Ranks {
		if r.Steps.Source != `repeated range "get batch"` || *r.Device != int64(i) || *r.PID == 0 {
			t.Errorf("rank %d: device %d pid %d steps from %s", *r.Rank, *r.Device, *r.PID, r.Steps.Source)
		}
	}
	if res.Job.Ranks[0].PID == res.Job.Ranks[1].PID {
		t.Error("both ranks are one process")
	}
}

// d0_straggler: rank 1 builds its batches on the main thread; rank 0
// waits for it in the all-reduce every step.
func checkStraggler(t *testing.T, res *Result) {
	t.Helper()
	if res.Kind != KindJob || len(res.Job.Ranks) != 2 {
		t.Fatalf("kind %s", res.Kind)
	}
	j := res.Job
	s := j.Job.Straggler
	if s == nil || s.Rank != 1 || s.Device != 1 || s.Cause != "dataloader-wait" {
		t.Fatalf("straggler %+v", s)
	}
	r0, r1 := j.Ranks[0], j.Ranks[1]
	// The others wait most of a step for rank 1 (measured: 139 ms of 244 ms
	// per step in the Chrome traces with host-paced steps, 198 ms of 246 ms
	// with GPU-paced ones; 177 ms of 250 ms in the nsys export).
	if share := float64(s.WaitNSPerStep) / float64(r0.Steps.MedianNS); share < 0.5 || share > 0.9 {
		t.Errorf("others wait %d ns per step for rank 1 (%.2f of a step)", s.WaitNSPerStep, share)
	}
	if !strings.HasPrefix(r0.Verdict, "communication-bound") {
		t.Errorf("rank 0 verdict %q", r0.Verdict)
	}
	cw := r0.Findings[0]
	if cw.ID != "comm-exposed" && cw.ID != "comm-wait" {
		t.Errorf("rank 0's top finding is %s", cw.ID)
	}
	found := false
	for _, f := range r0.Findings {
		if f.ID == "comm-wait" {
			found = true
			if f.Severity.String() != "error" || f.Detail["cross_rank"] != 1 || f.Detail["waited_for_rank"] != 1 || f.WastedNS != s.WaitNSPerStep {
				t.Errorf("rank 0 comm-wait %+v", f)
			}
		}
	}
	if !found {
		t.Errorf("rank 0 has no comm-wait: %+v", r0.Findings)
	}
	if !strings.HasPrefix(r1.Verdict, "input-bound") || r1.WaitNSPerStep*20 > r1.Steps.MedianNS {
		t.Errorf("rank 1: %q, waits %d per step", r1.Verdict, r1.WaitNSPerStep)
	}
	if j.Job.Verdict != r1.Verdict || j.Job.Clock != "shared" || j.Job.MatchedCollectives < 10 {
		t.Errorf("job %+v", j.Job)
	}
	if len(j.Job.Findings) != 1 || j.Job.Findings[0].ID != "straggler" || j.Job.Findings[0].Severity.String() != "error" {
		t.Fatalf("job findings %+v", j.Job.Findings)
	}
	// One root cause, one number: the straggler, its cause and its
	// symptom carry the step model's estimate of the loader's fix, within
	// 25 % of the real fix (4.15 -> 43.5 steps/s unprofiled, 10.5x).
	st := j.Job.Findings[0]
	const real = 43.5 / 4.15
	if st.EstimateSource != "model" || st.EstimatedSpeedup < 0.75*real || st.EstimatedSpeedup > 1.25*real {
		t.Errorf("straggler est. %.2fx (%s), want the model's, within 25 %% of %.1fx", st.EstimatedSpeedup, st.EstimateSource, real)
	}
	for _, f := range r1.Findings {
		if (f.ID == "dataloader-wait" || f.ID == "gpu-idle") && f.EstimatedSpeedup != st.EstimatedSpeedup {
			t.Errorf("rank 1's %s est. %.3fx, the straggler's %.3fx: want one number", f.ID, f.EstimatedSpeedup, st.EstimatedSpeedup)
		}
	}
	if m := j.Job.Model; m == nil || len(m.Fixes) != 1 || m.Fixes[0].Speedup != st.EstimatedSpeedup {
		t.Errorf("job model %+v: want the straggler's fix at %.3fx", m, st.EstimatedSpeedup)
	}
}

// d1_balanced: the fix, both ranks with DataLoader workers. In the Chrome
// traces each rank waits for the other in turn, and one slow step (133 ms,
// on both) does not make a straggler.
func TestBalancedJobChrome(t *testing.T) {
	res, err := Analyze([]string{ddp("d1_balanced.rank0.pt.trace.json.gz"), ddp("d1_balanced.rank1.pt.trace.json.gz")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != KindJob || res.Job.Job.Straggler != nil || len(res.Job.Job.Findings) != 0 {
		t.Fatalf("kind %s, straggler %+v", res.Kind, res.Job.Job.Straggler)
	}
	for _, r := range res.Job.Ranks {
		if r.WaitNSPerStep*5 > r.Steps.MedianNS {
			t.Errorf("rank %d waits %d ns per step of %d", *r.Rank, r.WaitNSPerStep, r.Steps.MedianNS)
		}
	}
}

// d1_balanced's nsys export is a separate run of the same configuration.
// There rank 1 arrives last at the all-reduces in all five steady steps
// (0.9 to 21 ms net, median 4.2 ms; its longest gap a 21 ms wait for a
// worker's batch), so it is named, with a wait a fraction of d0's: what
// the capture shows, not a stand-in for "balanced".
func TestBalancedJobNsys(t *testing.T) {
	res, err := Analyze([]string{ddp("d1_balanced.nsys.sqlite")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Job.Job.Straggler
	if res.Kind != KindJob || s == nil || s.Rank != 1 {
		t.Fatalf("kind %s, straggler %+v", res.Kind, s)
	}
	r0 := res.Job.Ranks[0]
	if share := float64(s.WaitNSPerStep) / float64(r0.Steps.MedianNS); share < 0.05 || share > 0.35 {
		t.Errorf("rank 0 waits %d ns per step for rank 1 (%.2f of a step)", s.WaitNSPerStep, share)
	}
	if strings.HasPrefix(r0.Verdict, "communication-bound") {
		t.Errorf("rank 0 verdict %q: the wait is a fraction of its step", r0.Verdict)
	}
}

// A folder of several jobs is a batch of them; a folder of one job is
// that job.
func TestFolders(t *testing.T) {
	res, err := Analyze([]string{testfix.Project("h200-ddp")}, Options{})
	if err != nil || res.Kind != KindBatch || len(res.Batch.Files) != 0 || len(res.Batch.Jobs) != 4 {
		t.Fatalf("folder of 4 jobs: %v %+v", err, res)
	}
	for _, j := range res.Batch.Jobs {
		if j.Job.Ranks != 2 {
			t.Errorf("job of %d ranks", j.Job.Ranks)
		}
	}
	// The shared nsys corpus: two 2-GPU exports beside eight single-GPU
	// traces (refused as "several jobs" before).
	res, err = Analyze([]string{testfix.SharedDir(t, "nsys")}, Options{})
	if err != nil || res.Kind != KindBatch || len(res.Batch.Jobs) != 2 || len(res.Batch.Files) != 8 {
		t.Fatalf("the nsys corpus: %v, %d files, %d jobs", err, len(res.Batch.Files), len(res.Batch.Jobs))
	}
	dir := t.TempDir()
	for _, f := range []string{"d0_straggler.rank0.pt.trace.json.gz", "d0_straggler.rank1.pt.trace.json.gz"} {
		b, err := os.ReadFile(ddp(f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err = Analyze([]string{dir}, Options{})
	if err != nil || res.Kind != KindJob || res.Job.Job.Straggler == nil {
		t.Fatalf("folder of one job: %v %+v", err, res)
	}
}

// A folder of job folders: one job per sub-folder, whatever the traces'
// metadata says, and a sub-folder's one trace alone; notes beside them and
// an empty sub-folder are left out.
func TestFolderOfJobFolders(t *testing.T) {
	dir := t.TempDir()
	put := func(sub, src string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, sub, filepath.Base(src)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("c0", testfix.Project("c0_cpu_straggler.rank0.pt.trace.json.gz"))
	put("c0", testfix.Project("c0_cpu_straggler.rank1.pt.trace.json.gz"))
	put("k0", testfix.Project("k0_ddp_bucket1mb.rank0.pt.trace.json.gz"))
	put("k0", testfix.Project("k0_ddp_bucket1mb.rank1.pt.trace.json.gz"))
	put("one", testfix.Project("b0_pageable_sync.nsys.sqlite"))
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	os.WriteFile(filepath.Join(dir, "NOTES.md"), []byte("runs of 2026-11"), 0o644)
	in, err := Expand([]string{dir})
	if err != nil || len(in.Jobs) != 3 || len(in.Files) != 5 {
		t.Fatalf("expand: %v, %d jobs, %d files", err, len(in.Jobs), len(in.Files))
	}
	res, err := AnalyzeInputs(in, Options{})
	if err != nil || res.Kind != KindBatch || len(res.Batch.Jobs) != 2 || len(res.Batch.Files) != 1 {
		t.Fatalf("folder of job folders: %v %+v", err, res)
	}
	for _, j := range res.Batch.Jobs {
		if j.Job.Ranks != 2 {
			t.Errorf("a job of %d ranks, want each sub-folder's 2", j.Job.Ranks)
		}
	}
	// Beside other arguments, or holding traces itself, a folder's
	// sub-folders are not read.
	if _, err := Expand([]string{dir, testfix.Project("r0_baseline.pt.trace.json.gz")}); err == nil {
		t.Error("a folder of job folders beside a file was read")
	}
}

// Unrelated traces are a batch: each analysed alone, a bad one reported
// while the others are analysed.
func TestBatch(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "broken.json")
	if err := os.WriteFile(bad, []byte("not a trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Analyze([]string{testfix.Project("r0_baseline.pt.trace.json.gz"), bad, testfix.Project("b0_pageable_sync.pt.trace.json.gz")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != KindBatch || len(res.Batch.Files) != 2 || len(res.Failed) != 1 || !strings.Contains(res.Failed[0].Error(), "broken.json") {
		t.Fatalf("kind %s, %d files, failed %v", res.Kind, len(res.Batch.Files), res.Failed)
	}
	if !strings.HasSuffix(res.Batch.Files[0].File, "r0_baseline.pt.trace.json.gz") || res.Batch.Files[0].Timeline != nil {
		t.Errorf("batch order or kept timeline: %s", res.Batch.Files[0].File)
	}
	// Ranks of two different jobs (different runs, years apart) are not one
	// job, even with distinct ranks of one world size.
	res, err = Analyze([]string{testfix.Shared(t, "chrome", "hta_a100_ddp2_rank0_nccl_reltime.json.gz"),
		testfix.Shared(t, "chrome", "hta_v100_ddp2_rank1_profile_memory_216k.json.gz")}, Options{})
	if err != nil || res.Kind != KindBatch {
		t.Fatalf("two unrelated ranks: %v %v", err, res.Kind)
	}
	// --job makes them one, ranks from their metadata.
	res, err = Analyze([]string{testfix.Shared(t, "chrome", "hta_v100_ddp2_rank1_profile_memory_216k.json.gz"),
		testfix.Shared(t, "chrome", "hta_a100_ddp2_rank0_nccl_reltime.json.gz")}, Options{Job: true})
	if err != nil || res.Kind != KindJob || *res.Job.Ranks[0].Rank != 0 || !strings.Contains(res.Job.Ranks[0].File, "a100") {
		t.Fatalf("--job: %v %+v", err, res)
	}
	// A single trace keeps its analyze object, and its timeline on request.
	res, err = Analyze([]string{testfix.Project("r0_baseline.pt.trace.json.gz")}, Options{KeepTimeline: true})
	if err != nil || res.Kind != KindSingle || res.Single.Timeline == nil {
		t.Fatalf("single: %v %+v", err, res)
	}
	// One unreadable file alone is an error.
	if _, err := Analyze([]string{bad}, Options{}); err == nil || !strings.Contains(err.Error(), "broken.json") {
		t.Errorf("bad single file: %v", err)
	}
}

// The reduce over per-rank JSON, as a task per rank writes it, equals the
// analysis of the traces together.
func TestReduceOverPerRankJSONEqualsFolder(t *testing.T) {
	for _, files := range [][]string{
		{ddp("d0_straggler.rank0.pt.trace.json.gz"), ddp("d0_straggler.rank1.pt.trace.json.gz")},
		{ddp("d1_balanced.rank0.pt.trace.json.gz"), ddp("d1_balanced.rank1.pt.trace.json.gz")},
	} {
		together, err := Analyze(files, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var summaries []string
		for _, f := range files {
			p, _ := writeSummary(t, f)
			summaries = append(summaries, p)
		}
		reduced, err := Reduce([]string{summaries[1], summaries[0]}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(together.Job)
		b, _ := json.Marshal(reduced)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the reduce over per-rank JSON differs from the analysis together", files[0])
		}
	}
	// A job document's ranks are taken over; a summary without a rank
	// needs --job.
	nsys, err := Analyze([]string{ddp("d0_straggler.nsys.sqlite")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(nsys.Job)
	p := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := Reduce([]string{p}, Options{})
	if err != nil || again.Job.Straggler == nil || again.Job.Straggler.Rank != 1 {
		t.Fatalf("job document: %v", err)
	}
	q, single := writeSummary(t, testfix.Project("r0_baseline.pt.trace.json.gz"))
	q3, _ := writeSummary(t, testfix.Project("r3_streams.pt.trace.json.gz"))
	if j, err := Reduce([]string{q3, q}, Options{}); err != nil || *j.Ranks[1].Rank != 1 || j.Ranks[1].File != single.File || j.Job.MatchedCollectives != 0 {
		t.Errorf("summaries without ranks take argument order: %v", err)
	}
	// One rank's analysis given twice is refused, not counted as two ranks.
	if _, err := Reduce([]string{q, q}, Options{}); err == nil || !strings.Contains(err.Error(), "analyses 1 and 2 are of the same rank (") {
		t.Errorf("the same analysis twice: %v", err)
	}
	if _, err := Reduce([]string{testfix.Project("r0_baseline.pt.trace.json.gz")}, Options{}); err == nil || !strings.Contains(err.Error(), "not a traceaudit analysis") {
		t.Errorf("a trace given to the reduce: %v", err)
	}
}

// c0_cpu_straggler: rank 1 computes a metric on the CPU each step inside a
// "log metrics" range; rank 0 waits in the all-reduce. c1 is the fix.
func TestCPUStragglerJob(t *testing.T) {
	res, err := Analyze([]string{testfix.Project("c0_cpu_straggler.rank0.pt.trace.json.gz"), testfix.Project("c0_cpu_straggler.rank1.pt.trace.json.gz")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Job.Job.Straggler
	if s == nil || s.Rank != 1 || s.Cause != "sync-api" || !strings.Contains(res.Job.Job.Findings[0].Fix, `"log metrics"`) ||
		!strings.HasPrefix(res.Job.Ranks[0].Verdict, "communication-bound") {
		t.Fatalf("straggler %+v %+v", s, res.Job.Job.Findings)
	}
	res, err = Analyze([]string{testfix.Project("c1_cpu_fixed.rank0.pt.trace.json.gz"), testfix.Project("c1_cpu_fixed.rank1.pt.trace.json.gz")}, Options{})
	if err != nil || res.Job.Job.Straggler != nil {
		t.Fatalf("c1: %v %+v", err, res.Job.Job.Straggler)
	}
}

func TestPoolSize(t *testing.T) {
	f := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(f, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n            int
		limit        int64
		cpus, traces int
		why          string
	}{
		{3, 1, 2, 1, "a trace larger than the memory still gets one worker"},
		{3, 10_000, 2, 1, "2 CPUs: one trace at a time"},
		{3, 10_000, 8, 2, "8 CPUs: two"},
		{3, 2500, 16, 2, "16 CPUs, memory for two traces of 1000 bytes"},
		{9, 1_000_000, 32, 8, "32 CPUs: eight"},
	} {
		paths := make([]string, c.n)
		for i := range paths {
			paths[i] = f
		}
		if got := poolSize(paths, c.limit, c.cpus); got != c.traces {
			t.Errorf("%s: %d traces at once, want %d", c.why, got, c.traces)
		}
	}
}

// Two traces at a time give the same job, rank for rank, as one at a time.
func TestWorkersSameResult(t *testing.T) {
	files := []string{ddp("d0_straggler.rank1.pt.trace.json.gz"), ddp("d0_straggler.rank0.pt.trace.json.gz")}
	var docs [2][]byte
	for i, w := range []int{1, 2} {
		res, err := Analyze(files, Options{Workers: w})
		if err != nil || res.Kind != KindJob {
			t.Fatalf("workers %d: %v", w, err)
		}
		if docs[i], err = json.Marshal(res.Job); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(docs[0], docs[1]) {
		t.Error("the job of two workers differs from the job of one")
	}
}

// Several traces are analysed under a soft memory limit near the traces in
// flight (small traces: the floor), given back when Analyze returns unless
// the caller keeps it for rendering.
func TestMemoryLimit(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: the user's limit is kept")
	}
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	files := []string{ddp("d0_straggler.rank0.pt.trace.json.gz"), ddp("d0_straggler.rank1.pt.trace.json.gz")}
	if _, err := Analyze(files, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Errorf("limit after Analyze %d, before %d", got, prev)
	}
	if _, err := Analyze(files, Options{KeepMemoryLimit: true}); err != nil {
		t.Fatal(err)
	}
	// Two .gz ranks of 370 kB: 12 bytes a byte with headroom is 7 MB, so
	// the floor.
	got := debug.SetMemoryLimit(-1)
	if got != MinLimit || got >= prev {
		t.Errorf("kept limit %d, want %d", got, MinLimit)
	}
}

// writeSummary analyses one trace alone and writes its JSON summary, as a
// task per rank does: the file and the analysis.
func writeSummary(t *testing.T, trace string) (string, *audit.Analysis) {
	t.Helper()
	res, err := Analyze([]string{trace}, Options{})
	if err != nil || res.Kind != KindSingle {
		t.Fatalf("%s: %v", trace, err)
	}
	b, err := json.Marshal(res.Single)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), filepath.Base(trace)+".json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, res.Single
}

// The reduce says what is wrong with a bad analysis file in a user's
// words: no Go type names.
func TestReduceBadSummaries(t *testing.T) {
	dir := t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"file": "a", "steps": {}}`))
	zw.Close()
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty.json", nil, "empty file"},
		{"blank.json", []byte(" \n"), "empty file"},
		{"array.json", []byte(`[1, 2]`), "it holds a JSON array, where an analysis is an object"},
		{"syntax.json", []byte(`{"file": }`), "not valid JSON at byte 10"},
		{"field.json", []byte(`{"file": "a", "steps": {"count": "three"}}`), `its "steps.count" is a JSON string`},
		{"cut.json.gz", gz.Bytes()[:gz.Len()/2], "(truncated?)"},
		{"magic.gz", []byte{0x1f, 0x8b}, "not a readable gzip file"},
		{"newer.json", []byte(`{"schema_version": 99, "file": "a", "steps": {}}`), "written by a newer traceaudit (JSON schema 99; this one reads 1 and older)"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Reduce([]string{p, p}, Options{})
		if err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), c.want) ||
			strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "struct") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
