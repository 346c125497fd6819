package traceaudit

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// TestDeploySlurm runs deploy/slurm/submit.sh on a real single-node Slurm
// cluster that deploy/slurm/testcluster.sh starts for the test: the job
// array, the reduce after it (afterany), the shared output folder and the
// exit codes, on the 2-GPU rank traces of fixtures/ and a 16-rank job tiled
// from them; then a task whose trace is corrupt and a task scancel kills,
// each reported by the reduce with exit 2 and no job report, and each
// re-run by submit.sh --retry-failed into the job the folder analysis gives.
func TestDeploySlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a Slurm cluster")
	}
	c := startSlurm(t)
	bin := buildTraceaudit(t)
	c.env = append(c.env, "PATH="+bin+string(os.PathListSeparator)+c.path)

	t.Run("jobs", func(t *testing.T) {
		var runs []*slurmRun
		for _, job := range twoGPUJobs(t) {
			runs = append(runs, c.submit(t, copyTraces(t, job...), "--parallel", "2"))
		}
		runs = append(runs, c.submit(t, tiledRanks(t, 16), "--parallel", "4"))
		c.waitAll(t, runs...)
		for _, r := range runs {
			c.wantState(t, r.array, "COMPLETED", "0:0")
			// The traces are 4 to 6 MB of JSON: the floor of 256 MiB.
			for _, rec := range c.records(t, r.array) {
				if rec["MinMemoryNode"] != "256M" {
					t.Errorf("task %s_%s asked for %s of memory, want submit.sh's 256M", r.array, rec["ArrayTaskId"], rec["MinMemoryNode"])
				}
			}
			c.wantState(t, r.reduce, "COMPLETED", "0:0")
			r.wantJob(t, bin)
		}
	})

	t.Run("corrupt trace", func(t *testing.T) {
		traces := copyTraces(t, testfix.Project("h200-ddp/d0_straggler.rank0.pt.trace.json.gz"),
			testfix.Project("h200-ddp/d0_straggler.rank1.pt.trace.json.gz"))
		bad := filepath.Join(traces, "d0_straggler.rank1.pt.trace.json.gz")
		whole, err := os.ReadFile(bad)
		if err != nil {
			t.Fatal(err)
		}
		// A partial copy: the first 5000 bytes of the gzip stream.
		if err := os.WriteFile(bad, whole[:5000], 0o644); err != nil {
			t.Fatal(err)
		}
		r := c.submit(t, traces)
		c.waitAll(t, r)
		c.wantTask(t, r.array, 0, "COMPLETED", "0:0")
		c.wantTask(t, r.array, 1, "FAILED", "2:0")
		c.wantState(t, r.reduce, "FAILED", "2:0")
		log := r.log(t, "reduce-"+r.reduce)
		for _, want := range []string{
			"1 of 2 rank analyses are missing",
			"task 1 (d0_straggler.rank1.pt.trace.json.gz): exit 2: traceaudit: " + bad + ": ",
			"it is truncated (the gzip stream ends after 5000 compressed bytes)",
			"Slurm: array task " + r.array + "_1 FAILED, reason NonZeroExitCode, exit code 2:0",
			"submit.sh --retry-failed " + r.out,
		} {
			if !strings.Contains(log, want) {
				t.Errorf("the reduce's log lacks %q:\n%s", want, log)
			}
		}
		r.wantNoReport(t)

		if err := os.WriteFile(bad, whole, 0o644); err != nil {
			t.Fatal(err)
		}
		retry := c.retry(t, r)
		c.waitAll(t, retry)
		c.wantOnlyTasks(t, retry.array, 1)
		c.wantState(t, retry.reduce, "COMPLETED", "0:0")
		retry.wantJob(t, bin)
	})

	t.Run("killed task", func(t *testing.T) {
		traces := copyTraces(t, testfix.Project("h200-ddp/d1_balanced.rank0.pt.trace.json.gz"),
			testfix.Project("h200-ddp/d1_balanced.rank1.pt.trace.json.gz"))
		// Task 1 runs until scancel stops it: a traceaudit ahead of the real
		// one on PATH waits while the block file exists (the kill, its
		// signals and Slurm's states are real).
		wrap := t.TempDir()
		block, started := filepath.Join(wrap, "block"), filepath.Join(wrap, "started")
		script := fmt.Sprintf("#!/bin/sh\ncase \"$*\" in *d1_balanced.rank1.pt*) if [ -e %s ]; then touch %s; sleep 120; fi ;; esac\nexec %s \"$@\"\n",
			block, started, filepath.Join(bin, "traceaudit"))
		if err := os.WriteFile(filepath.Join(wrap, "traceaudit"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(block, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		killer := *c
		killer.env = append(append([]string(nil), c.env...), "PATH="+wrap+string(os.PathListSeparator)+bin+string(os.PathListSeparator)+c.path)
		r := killer.submit(t, traces)
		deadline := time.Now().Add(3 * time.Minute)
		for _, err := os.Stat(started); err != nil; _, err = os.Stat(started) {
			if time.Now().After(deadline) {
				t.Fatalf("task 1 did not start in 3 minutes:\n%s", c.run(t, "squeue"))
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("task 1 running:\n%s", c.run(t, "squeue"))
		c.run(t, "scancel", r.array+"_1")
		c.waitAll(t, r)
		c.wantTask(t, r.array, 0, "COMPLETED", "0:0")
		c.wantTask(t, r.array, 1, "CANCELLED", "143:0")
		c.wantState(t, r.reduce, "FAILED", "2:0")
		log := r.log(t, "reduce-"+r.reduce)
		for _, want := range []string{
			"1 of 2 rank analyses are missing",
			"task 1 (d1_balanced.rank1.pt.trace.json.gz): killed by SIGTERM before it finished",
			"Slurm: array task " + r.array + "_1 CANCELLED",
		} {
			if !strings.Contains(log, want) {
				t.Errorf("the reduce's log lacks %q:\n%s", want, log)
			}
		}
		r.wantNoReport(t)

		if err := os.Remove(block); err != nil {
			t.Fatal(err)
		}
		retry := killer.retry(t, r)
		c.waitAll(t, retry)
		c.wantOnlyTasks(t, retry.array, 1)
		c.wantState(t, retry.reduce, "COMPLETED", "0:0")
		retry.wantJob(t, bin)
		for _, f := range []string{"rank-1.err", "rank-1.state"} {
			if _, err := os.Stat(filepath.Join(r.out, f)); err == nil {
				t.Errorf("%s is still there after the retry succeeded", f)
			}
		}
	})
}

// slurmCluster is a running test cluster: the environment its commands
// need (SLURM_CONF) and the PATH the test started with.
type slurmCluster struct {
	dir, path string
	env       []string
}

// slurmRun is one submission: its folders and Slurm job ids.
type slurmRun struct {
	traces, out   string
	array, reduce string
}

// startSlurm starts deploy/slurm/testcluster.sh's cluster under a temporary
// folder and stops it when the test ends, checking its daemons are gone.
// Where Slurm cannot run here, the test is Missing.
func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	path := os.Getenv("PATH") + string(os.PathListSeparator) + "/usr/sbin" + string(os.PathListSeparator) + "/sbin"
	for _, tool := range []string{"bash", "munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"} {
		if _, err := lookPathIn(tool, path); err != nil {
			testfix.Missing(t, "%s not found: install Debian's slurm-wlm and munge (apt-get install slurm-wlm munge)", tool)
		}
	}
	if os.Getuid() != 0 {
		testfix.Missing(t, "slurmd must run as root to start jobs; this test runs as uid %d", os.Getuid())
	}
	dir := t.TempDir()
	script := filepath.Join(testfix.Root(), "deploy", "slurm", "testcluster.sh")
	cmd := exec.Command("bash", script, "start", dir, strconv.Itoa(freePorts(t)))
	cmd.Env = append(os.Environ(), "PATH="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		testfix.Missing(t, "the Slurm test cluster did not start: %v\n%s", err, out)
	}
	conf, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "SLURM_CONF=")
	if !ok {
		t.Fatalf("testcluster.sh start printed %q, not SLURM_CONF=...", out)
	}
	c := &slurmCluster{dir: dir, path: path, env: append(os.Environ(), "SLURM_CONF="+conf)}
	t.Cleanup(func() {
		var pids []int
		for _, f := range []string{"run/slurmd.pid", "run/slurmctld.pid", "munge/munged.pid"} {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				pids = append(pids, pid)
			}
		}
		stop := exec.Command("bash", script, "stop", dir)
		stop.Env = append(os.Environ(), "PATH="+path)
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("testcluster.sh stop: %v\n%s", err, out)
		}
		if len(pids) != 3 {
			t.Errorf("pid files of the three daemons: found %v", pids)
		}
		for _, pid := range pids {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
				t.Errorf("process %d is still running after testcluster.sh stop", pid)
			}
		}
	})
	t.Logf("sinfo:\n%s", c.run(t, "sinfo"))
	return c
}

// lookPathIn is exec.LookPath over the given PATH.
func lookPathIn(file, path string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, file)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// freePorts returns a port p such that p and p+1 (slurmctld's and slurmd's)
// are free on the loopback address now.
func freePorts(t *testing.T) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1)); err == nil {
			l2.Close()
			return p
		}
	}
	t.Fatal("no two adjacent free ports")
	return 0
}

// run runs a command on the cluster and returns its output, failing the
// test when it fails.
func (c *slurmCluster) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := c.cmd(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (c *slurmCluster) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	if p, err := lookPathIn(name, c.path); err == nil {
		cmd.Path = p
	}
	cmd.Env = c.env
	return cmd
}

// submit runs submit.sh on traces into a new output folder; the node has 2
// CPUs, so each task asks for one instead of rank.sbatch's 4.
func (c *slurmCluster) submit(t *testing.T, traces string, flags ...string) *slurmRun {
	t.Helper()
	r := &slurmRun{traces: traces, out: filepath.Join(t.TempDir(), "out")}
	args := append([]string{filepath.Join(testfix.Root(), "deploy", "slurm", "submit.sh"), traces, r.out}, flags...)
	out := c.run(t, "bash", append(args, "--cpus-per-task=1")...)
	if !strings.HasPrefix(out, "submitted: ") {
		t.Errorf("submit.sh printed %q", out)
	}
	r.ids(t)
	return r
}

// retry runs submit.sh --retry-failed on r's folder.
func (c *slurmCluster) retry(t *testing.T, r *slurmRun) *slurmRun {
	t.Helper()
	out := c.run(t, "bash", filepath.Join(testfix.Root(), "deploy", "slurm", "submit.sh"), "--retry-failed", r.out)
	if !strings.Contains(out, "submitted: 1 of 2 rank tasks again (indices 1,") {
		t.Errorf("submit.sh --retry-failed printed %q", out)
	}
	again := *r
	again.ids(t)
	if again.array == r.array || again.reduce == r.reduce {
		t.Errorf("the retry's jobs %s and %s are the first submission's", again.array, again.reduce)
	}
	return &again
}

// ids reads the job ids submit.sh recorded in OUT/submit.env.
func (r *slurmRun) ids(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.out, "submit.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "array="); ok {
			r.array = v
		}
		if v, ok := strings.CutPrefix(l, "reduce="); ok {
			r.reduce = v
		}
	}
	if r.array == "" || r.reduce == "" {
		t.Fatalf("submit.env names no array or reduce job:\n%s", b)
	}
}

// waitAll waits until squeue lists none of the runs' jobs (five minutes at
// most: a guard against a hung cluster, past what a loaded CI machine
// takes), logging squeue's table once while they are queued.
func (c *slurmCluster) waitAll(t *testing.T, runs ...*slurmRun) {
	t.Helper()
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.array, r.reduce)
	}
	logged := false
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out, err := c.cmd("squeue", "-h", "-j", strings.Join(ids, ",")).CombinedOutput()
		if err != nil {
			t.Fatalf("squeue: %v\n%s", err, out)
		}
		if len(bytes.TrimSpace(out)) == 0 {
			return
		}
		if !logged {
			t.Logf("squeue:\n%s", c.run(t, "squeue"))
			logged = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs still queued after five minutes:\n%s\n%s", out, c.run(t, "scontrol", "show", "job", "-o"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// records parses `scontrol show job -o ID`: one map of fields per job (an
// array's tasks each have their own).
func (c *slurmCluster) records(t *testing.T, id string) []map[string]string {
	t.Helper()
	var recs []map[string]string
	for _, l := range strings.Split(strings.TrimSpace(c.run(t, "scontrol", "show", "job", "-o", id)), "\n") {
		rec := map[string]string{}
		for _, f := range strings.Fields(l) {
			if k, v, ok := strings.Cut(f, "="); ok {
				rec[k] = v
			}
		}
		recs = append(recs, rec)
	}
	return recs
}

// wantState checks that every job (or array task) of id ended in state
// with exit code exit ("status:signal").
func (c *slurmCluster) wantState(t *testing.T, id, state, exit string) {
	t.Helper()
	for _, rec := range c.records(t, id) {
		if rec["JobState"] != state || rec["ExitCode"] != exit {
			t.Errorf("job %s (%s, task %s): %s %s, want %s %s", rec["JobId"], rec["JobName"], rec["ArrayTaskId"], rec["JobState"], rec["ExitCode"], state, exit)
		}
	}
}

// wantTask checks one array task's end.
func (c *slurmCluster) wantTask(t *testing.T, array string, task int, state, exit string) {
	t.Helper()
	for _, rec := range c.records(t, array) {
		if rec["ArrayTaskId"] == strconv.Itoa(task) {
			if rec["JobState"] != state || rec["ExitCode"] != exit {
				t.Errorf("task %s_%d: %s %s, want %s %s", array, task, rec["JobState"], rec["ExitCode"], state, exit)
			}
			return
		}
	}
	t.Errorf("job %s has no array task %d", array, task)
}

// wantOnlyTasks checks that an array holds exactly the given task indices.
func (c *slurmCluster) wantOnlyTasks(t *testing.T, array string, tasks ...int) {
	t.Helper()
	var got, want []string
	for _, rec := range c.records(t, array) {
		got = append(got, rec["ArrayTaskId"])
	}
	for _, i := range tasks {
		want = append(want, strconv.Itoa(i))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("array %s ran tasks %v, want %v", array, got, want)
	}
}

// log returns OUT/logs/NAME.log.
func (r *slurmRun) log(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.out, "logs", name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantJob checks that the reduce's job.json is what traceaudit analyze
// prints for the traces' folder, and that nothing temporary is left.
func (r *slurmRun) wantJob(t *testing.T, bin string) {
	t.Helper()
	want, err := exec.Command(filepath.Join(bin, "traceaudit"), "analyze", "--format", "json", r.traces).Output()
	if err != nil {
		t.Fatalf("analyze %s: %v", r.traces, err)
	}
	got, err := os.ReadFile(filepath.Join(r.out, "job.json"))
	if err != nil {
		t.Fatalf("%v\nreduce log:\n%s", err, r.log(t, "reduce-"+r.reduce))
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: job.json (%d bytes) differs from traceaudit analyze of the folder (%d bytes)", r.traces, len(got), len(want))
	}
	for _, f := range []string{"job.txt", "report/report.md", "report/ranks.png"} {
		if _, err := os.Stat(filepath.Join(r.out, f)); err != nil {
			t.Errorf("%s: %v", r.traces, err)
		}
	}
	r.wantNoTemporaries(t)
}

// wantNoReport checks that a failed reduce wrote no part of the report.
func (r *slurmRun) wantNoReport(t *testing.T) {
	t.Helper()
	for _, f := range []string{"job.json", "job.txt", "report"} {
		if _, err := os.Stat(filepath.Join(r.out, f)); err == nil {
			t.Errorf("the failed reduce wrote %s", f)
		}
	}
	r.wantNoTemporaries(t)
}

// wantNoTemporaries checks OUT for the scripts' temporary files (dot files).
func (r *slurmRun) wantNoTemporaries(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(r.out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("%s left in %s", e.Name(), r.out)
		}
	}
}

// twoGPUJobs lists the rank traces of each 2-GPU job of fixtures/.
func twoGPUJobs(t *testing.T) [][]string {
	t.Helper()
	var jobs [][]string
	for _, pattern := range []string{"*.rank0.pt.trace.json.gz", "h200-ddp/*.rank0.pt.trace.json.gz"} {
		m, err := filepath.Glob(testfix.Project(pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, r0 := range m {
			jobs = append(jobs, []string{r0, strings.Replace(r0, ".rank0.", ".rank1.", 1)})
		}
	}
	if len(jobs) < 8 {
		t.Fatalf("%d 2-GPU jobs in fixtures/, want the 8 of fixtures/README.md", len(jobs))
	}
	return jobs
}

// copyTraces copies the files into a new folder and returns it.
func copyTraces(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tiledRanks writes a job of n ranks tiled from d0_straggler's two: rank r
// is rank r%2's trace, uncompressed, with its distributedInfo saying rank r
// of n. Files are named rankR.pt.trace.json, unpadded, so that the tasks'
// order (by name: rank0, rank1, rank10, ...) is not the ranks'.
func tiledRanks(t *testing.T, n int) string {
	t.Helper()
	var src [2][]byte
	for i := range src {
		f, err := os.Open(testfix.Project(fmt.Sprintf("h200-ddp/d0_straggler.rank%d.pt.trace.json.gz", i)))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		if src[i], err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	all := make([]string, n)
	for i := range all {
		all[i] = strconv.Itoa(i)
	}
	group := regexp.MustCompile(`"pg_size": 2, "ranks": \[0, 1\]`)
	dir := t.TempDir()
	for r := range n {
		old := fmt.Sprintf(`"rank": %d, "world_size": 2,`, r%2)
		if bytes.Count(src[r%2], []byte(old)) != 1 || len(group.FindAllIndex(src[r%2], -1)) != 1 {
			t.Fatalf("d0_straggler rank %d: no single distributedInfo %s with its group", r%2, old)
		}
		b := bytes.Replace(src[r%2], []byte(old), fmt.Appendf(nil, `"rank": %d, "world_size": %d,`, r, n), 1)
		b = group.ReplaceAll(b, fmt.Appendf(nil, `"pg_size": %d, "ranks": [%s]`, n, strings.Join(all, ", ")))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank%d.pt.trace.json", r)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
