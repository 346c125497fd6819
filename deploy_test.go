package traceaudit

import (
	"bytes"
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
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "traceaudit"), "./cmd/traceaudit")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
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

// submit.sh sizes the array from the traces and chains the reduce on the
// array's success (a stand-in sbatch records the calls).
func TestDeploySubmit(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	bin, traces, out := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "out")
	log := filepath.Join(bin, "calls")
	fake := "#!/usr/bin/env bash\necho \"$*\" >>" + log + "\nn=$(wc -l <" + log + ")\necho \"$((1000 + n));cluster\"\n"
	if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.json.gz", "b.json.gz", "c.sqlite", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(traces, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bash, filepath.Join(testfix.Root(), "deploy", "slurm", "submit.sh"), traces, out, "--parallel", "2", "--fail-on", "error", "--partition", "gpu")
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	o, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, o)
	}
	calls, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "--array=0-2%2") || !strings.Contains(lines[0], "TRACES="+traces) ||
		!strings.Contains(lines[0], "FAIL_ON=error") || !strings.Contains(lines[0], "--partition gpu") || !strings.HasSuffix(lines[0], "rank.sbatch") ||
		!strings.Contains(lines[1], "--dependency=afterok:1001") || !strings.HasSuffix(lines[1], "reduce.sbatch") {
		t.Errorf("sbatch calls:\n%s\noutput: %s", calls, o)
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
