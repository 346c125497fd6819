package traceaudit

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// TestDeployScripts runs the map and reduce scripts of deploy/ as a batch
// engine would, one task per rank, with the real binary on PATH: the Slurm
// array's task script, then the reduce, on the d0_straggler Chrome ranks.
// The job report they write is the one `traceaudit analyze` prints for the
// folder; the Kubernetes Jobs run the same scripts from the image.
func TestDeployScripts(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	bin := buildTraceaudit(t)
	traces, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	for _, f := range []string{"d0_straggler.rank0.pt.trace.json.gz", "d0_straggler.rank1.pt.trace.json.gz"} {
		b, err := os.ReadFile(testfix.Project(filepath.Join("h200-ddp", f)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(traces, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"TRACES="+traces, "OUT="+out, "DEPLOY="+filepath.Join(testfix.Root(), "deploy"))
	sh := func(script string, extra ...string) (string, error) {
		cmd := exec.Command(bash, filepath.Join(testfix.Root(), "deploy", script))
		cmd.Env = append(env, extra...)
		var o bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &o
		err := cmd.Run()
		return o.String(), err
	}
	for _, task := range []string{"1", "0"} {
		if o, err := sh("slurm/rank.sbatch", "SLURM_ARRAY_TASK_ID="+task); err != nil {
			t.Fatalf("task %s: %v\n%s", task, err, o)
		}
		if task != "1" {
			continue
		}
		// Task 0 has not run: the reduce names it, exits 2 and writes nothing.
		o, err := sh("slurm/reduce.sbatch")
		if code := exitCode(err); code != 2 || !strings.Contains(o, "1 of 2 rank analyses are missing") ||
			!strings.Contains(o, "task 0 (d0_straggler.rank0.pt.trace.json.gz): no analysis and no error recorded") {
			t.Errorf("reduce without task 0: exit %d\n%s", code, o)
		}
		if _, err := os.Stat(filepath.Join(out, "job.json")); err == nil {
			t.Errorf("reduce without task 0 wrote job.json")
		}
	}
	if o, err := sh("slurm/rank.sbatch", "SLURM_ARRAY_TASK_ID=2"); err == nil || !strings.Contains(o, "holds 2 trace files") {
		t.Errorf("a task past the last trace: %v\n%s", err, o)
	}
	report, err := sh("slurm/reduce.sbatch")
	if err != nil {
		t.Fatalf("reduce: %v\n%s", err, report)
	}
	if !strings.Contains(report, "1 *    1") || !strings.Contains(report, "straggler: rank 1;") || !strings.Contains(report, "dataloader-wait (below)") {
		t.Errorf("report:\n%s", report)
	}
	for _, f := range []string{"rank-0.json", "rank-1.json", "job.json", "job.txt", "report/ranks.png", "report/report.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	// The job the scripts built is the one analyze prints for the folder.
	folder := exec.Command(filepath.Join(bin, "traceaudit"), "analyze", "--format", "json", traces)
	want, err := folder.Output()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(out, "job.json"))
	// Files are named as each task saw them: the same paths here.
	if !bytes.Equal(got, want) {
		t.Errorf("job.json from the scripts differs from traceaudit analyze of the folder")
	}
	// With --fail-on the reduce fails CI on the straggler.
	if o, err := sh("slurm/reduce.sbatch", "FAIL_ON=error"); err == nil || !strings.Contains(o, "findings at error") {
		t.Errorf("FAIL_ON=error: %v\n%s", err, o)
	}
}

// exitCode is a command's exit status from its Run error: 0 for none, -1
// when it did not run or exit.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// buildTraceaudit builds the binary as `make build` does (CGO_ENABLED=0:
// one static file, as copied to compute nodes) into a temporary folder,
// which it returns.
func buildTraceaudit(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "traceaudit"), "./cmd/traceaudit")
	build.Dir = testfix.Root()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// submit.sh sizes the array and each task's memory from the traces, chains
// the reduce after every task (afterany), and --retry-failed submits the
// tasks without an analysis again; a stand-in sbatch records the calls.
// TestDeploySlurm runs them on a real Slurm.
func TestDeploySubmit(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	bin, traces, out := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "out")
	log := filepath.Join(bin, "calls")
	fake := "#!/usr/bin/env bash\necho \"TRACES=$TRACES OUT=$OUT FAIL_ON=$FAIL_ON ARRAY_JOB=${ARRAY_JOB-unset} $*\" >>" + log +
		"\nn=$(wc -l <" + log + ")\necho \"$((1000 + n));cluster\"\n"
	if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	// A real .json.gz, whose content the gzip trailer gives; a 1 GiB Chrome
	// trace and a 300 MiB nsys export, sparse (the size is all that counts).
	gz := testfix.Project("h200-ddp/d0_straggler.rank1.pt.trace.json.gz")
	b, err := os.ReadFile(gz)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(traces, "a.json.gz"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int64{"b.json": 1 << 30, "c.sqlite": 300 << 20, "notes.txt": 1} {
		f, err := os.Create(filepath.Join(traces, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	content, err := io.Copy(io.Discard, zr)
	if err != nil {
		t.Fatal(err)
	}
	submit := func(args ...string) (string, []string) {
		t.Helper()
		os.Remove(log)
		cmd := exec.Command(bash, append([]string{filepath.Join(testfix.Root(), "deploy", "slurm", "submit.sh")}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		o, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("submit.sh %s: %v\n%s", strings.Join(args, " "), err, o)
		}
		calls, _ := os.ReadFile(log)
		return string(o), strings.Split(strings.TrimSpace(string(calls)), "\n")
	}

	// The memory each trace needs: 0.50 x a Chrome trace's content, 2.64 x
	// an nsys export, x 1.5, at least 256 MiB; the array asks for the most.
	dry, calls := submit(traces, out, "--dry-run", "--parallel", "2")
	for _, want := range []string{
		fmt.Sprintf("     0  Chrome, gzip   %10d %12d      256 MiB  a.json.gz", len(b), content),
		fmt.Sprintf("     1  Chrome         %10d %12d      768 MiB  b.json", 1<<30, 1<<30),
		fmt.Sprintf("     2  nsys           %10d %12d     1188 MiB  c.sqlite", 300<<20, 300<<20),
		"--array=0-2%2 --mem=1188M",
		"--dependency=afterany:ARRAY_JOB",
	} {
		if !strings.Contains(dry, want) {
			t.Errorf("--dry-run lacks %q:\n%s", want, dry)
		}
	}
	if calls[0] != "" {
		t.Errorf("--dry-run called sbatch: %q", calls)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("--dry-run created %s", out)
	}

	o, lines := submit(traces, out, "--parallel", "2", "--fail-on", "error", "--partition", "gpu")
	if len(lines) != 2 || !strings.Contains(lines[0], "--array=0-2%2 --mem=1188M") || !strings.Contains(lines[0], "TRACES="+traces) ||
		!strings.Contains(lines[0], "FAIL_ON=error") || !strings.Contains(lines[0], "--export=ALL") || !strings.Contains(lines[0], "--partition gpu") || !strings.HasSuffix(lines[0], "rank.sbatch") ||
		!strings.Contains(lines[1], "--dependency=afterany:1001") || !strings.Contains(lines[1], "ARRAY_JOB=1001") || !strings.HasSuffix(lines[1], "reduce.sbatch") {
		t.Errorf("sbatch calls:\n%s\noutput: %s", strings.Join(lines, "\n"), o)
	}

	// Tasks 0 and 2 wrote their analyses; task 1 failed: the retry runs
	// task 1 alone, with the first submission's options and the memory its
	// trace needs, then the reduce.
	for _, f := range []string{"rank-0.json", "rank-2.json", "rank-1.err"} {
		if err := os.WriteFile(filepath.Join(out, f), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o, lines = submit("--retry-failed", out)
	if len(lines) != 2 || !strings.Contains(lines[0], "--array=1%2 --mem=768M") || !strings.Contains(lines[0], "FAIL_ON=error") || !strings.Contains(lines[0], "--partition gpu") ||
		!strings.Contains(lines[1], "--dependency=afterany:1001") || !strings.Contains(o, "1 of 3 rank tasks again (indices 1,") {
		t.Errorf("--retry-failed: sbatch calls:\n%s\noutput: %s", strings.Join(lines, "\n"), o)
	}
	// Every analysis there but no report (the reduce was cancelled): the
	// reduce alone; with the report too, nothing.
	if err := os.WriteFile(filepath.Join(out, "rank-1.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, lines = submit("--retry-failed", out)
	if len(lines) != 1 || strings.Contains(lines[0], "--dependency") || !strings.HasSuffix(lines[0], "reduce.sbatch") || !strings.Contains(o, "the reduce alone") {
		t.Errorf("--retry-failed with every analysis: sbatch calls:\n%s\noutput: %s", strings.Join(lines, "\n"), o)
	}
	if err := os.WriteFile(filepath.Join(out, "job.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o, lines = submit("--retry-failed", out); lines[0] != "" || !strings.Contains(o, "nothing to retry") {
		t.Errorf("--retry-failed of a finished job: sbatch calls %q, output: %s", lines, o)
	}
	// A new submission starts clean.
	submit(traces, out)
	for _, f := range []string{"rank-0.json", "rank-1.err", "job.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			t.Errorf("a new submission left %s of the last one", f)
		}
	}
}

// The Kubernetes Jobs call scripts the image holds, by the names the
// Dockerfile copies them under.
func TestDeployKubernetes(t *testing.T) {
	docker, err := os.ReadFile(filepath.Join(testfix.Root(), "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"traceaudit-ranks.yaml", "traceaudit-reduce.yaml"} {
		y, err := os.ReadFile(filepath.Join(testfix.Root(), "deploy", "kubernetes", f))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range strings.Split(string(y), "\n") {
			l = strings.TrimSpace(l)
			if rest, ok := strings.CutPrefix(l, `command: ["`); ok {
				script, _, _ := strings.Cut(rest, `"`)
				found = true
				if !bytes.Contains(docker, []byte("deploy/"+script)) {
					t.Errorf("%s runs %s, which the Dockerfile does not copy", f, script)
				}
				if _, err := os.Stat(filepath.Join(testfix.Root(), "deploy", script)); err != nil {
					t.Errorf("%s: %v", f, err)
				}
			}
		}
		if !found {
			t.Errorf("%s has no command", f)
		}
		if f == "traceaudit-ranks.yaml" && (!bytes.Contains(y, []byte("completionMode: Indexed")) || !bytes.Contains(y, []byte("$(JOB_COMPLETION_INDEX)"))) {
			t.Errorf("%s is not an Indexed Job passing its index", f)
		}
	}
}
