package traceaudit

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/mdcheck"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// actionRun runs action/run.sh as action.yml does, in a fake GitHub
// Actions environment: a workspace, RUNNER_TEMP, GITHUB_OUTPUT and
// GITHUB_STEP_SUMMARY files. It returns the step outputs, the summary,
// the script's output (stdout and stderr) and its exit code.
func actionRun(t *testing.T, env map[string]string) (outputs map[string]string, summary, stderr string, code int) {
	t.Helper()
	ws := t.TempDir()
	runner := t.TempDir()
	outFile, sumFile := filepath.Join(runner, "output"), filepath.Join(runner, "summary")
	os.WriteFile(outFile, nil, 0o644)
	os.WriteFile(sumFile, nil, 0o644)
	cmd := exec.Command("bash", filepath.Join(testfix.Root(), "action", "run.sh"))
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "GITHUB_ACTIONS=true", "GITHUB_WORKSPACE="+ws, "RUNNER_TEMP="+runner,
		"GITHUB_OUTPUT="+outFile, "GITHUB_STEP_SUMMARY="+sumFile, "GITHUB_ACTION_PATH="+testfix.Root())
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var errb strings.Builder
	cmd.Stderr, cmd.Stdout = &errb, &errb // workflow commands go to stdout
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	outputs = map[string]string{}
	b, _ := os.ReadFile(outFile)
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			outputs[k] = v
		}
	}
	s, _ := os.ReadFile(sumFile)
	if out := env["TA_OUT"]; out != "" && !filepath.IsAbs(out) {
		t.Fatal("give TA_OUT as an absolute path in tests")
	}
	return outputs, string(s), errb.String(), code
}

// buildBinary builds traceaudit once for the action tests.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "traceaudit")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/traceaudit")
	cmd.Dir = testfix.Root()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestActionScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds traceaudit; skipped with -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		testfix.Missing(t, "bash not found")
	}
	bin := buildBinary(t)
	r0, r3 := testfix.Project("r0_baseline.pt.trace.json.gz"), testfix.Project("r3_streams.pt.trace.json.gz")

	t.Run("analyze fails on error after writing everything", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "report")
		o, sum, stderr, code := actionRun(t, map[string]string{"TA_BINARY": bin, "TA_TRACE": r0, "TA_FAIL_ON": "error", "TA_OUT": out})
		if code != 0 || o["exit-code"] != "1" || o["report-written"] != "true" || o["report-dir"] != out {
			t.Fatalf("script exit %d, outputs %v\n%s", code, o, stderr)
		}
		if md, err := os.ReadFile(o["markdown-file"]); err != nil || string(md) != sum[:len(md)] {
			t.Errorf("markdown-file %s: %v", o["markdown-file"], err)
		}
		if !strings.HasPrefix(sum, "## traceaudit: r0\\_baseline.pt.trace.json.gz") || len(mdcheck.Blocks(sum)) != 2 ||
			!strings.Contains(sum, "> [!CAUTION]\n> findings at error or above (--fail-on error)") {
			t.Errorf("summary:\n%s", sum)
		}
		for _, err := range mdcheck.Structure(sum) {
			t.Error(err)
		}
		for _, f := range []string{"report.md", "report.html", "report.json", "annotated.json", "timeline.png", ".traceaudit-report"} {
			if _, err := os.Stat(filepath.Join(out, f)); err != nil {
				t.Error(err)
			}
		}
		if !strings.Contains(stderr, "::error title=traceaudit::traceaudit: findings at error or above") {
			t.Errorf("no error annotation: %s", stderr)
		}
	})

	t.Run("diff passes and args keep their quotes", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "report")
		o, sum, stderr, _ := actionRun(t, map[string]string{"TA_BINARY": bin, "TA_COMMAND": "diff", "TA_BEFORE": r0, "TA_TRACE": r3,
			"TA_FAIL_ON": "warning", "TA_OUT": out, "TA_ARGS": `--band 'sync-api=90%,95%' --data-range "get batch|__next__"`})
		if o["exit-code"] != "0" {
			t.Fatalf("outputs %v\n%s", o, stderr)
		}
		if !strings.HasPrefix(sum, "## traceaudit diff: r0\\_baseline.pt.trace.json.gz → r3\\_streams.pt.trace.json.gz") || !strings.Contains(sum, "8.30x faster") {
			t.Errorf("summary:\n%s", sum)
		}
		md, _ := os.ReadFile(filepath.Join(out, "report.md"))
		if !strings.Contains(string(md), "--band 'sync-api=90%,95%'") && !strings.Contains(string(md), "--band sync-api=90%,95%") {
			t.Errorf("the args did not reach traceaudit: %s", md[len(md)-300:])
		}
	})

	t.Run("bad input", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "report")
		o, sum, _, code := actionRun(t, map[string]string{"TA_BINARY": bin, "TA_TRACE": "missing <b>.json", "TA_OUT": out})
		if code != 0 || o["exit-code"] != "2" || o["report-written"] != "false" {
			t.Errorf("exit %d, outputs %v", code, o)
		}
		if !strings.Contains(sum, "## traceaudit analyze failed (exit 2)") || !strings.Contains(sum, "missing &lt;b&gt;.json: no such file") {
			t.Errorf("summary:\n%s", sum)
		}
	})

	t.Run("make dist tarball", func(t *testing.T) {
		tarball, sum := distTarball(t, bin)
		out := filepath.Join(t.TempDir(), "report")
		o, _, stderr, code := actionRun(t, map[string]string{"TA_DIST_URL": "file://" + tarball, "TA_DIST_SHA256": sum, "TA_TRACE": r3, "TA_OUT": out})
		if code != 0 || o["exit-code"] != "0" || !strings.Contains(stderr, "traceaudit ") {
			t.Errorf("exit %d, outputs %v\n%s", code, o, stderr)
		}
		_, _, stderr, code = actionRun(t, map[string]string{"TA_DIST_URL": "file://" + tarball, "TA_DIST_SHA256": strings.Repeat("0", 64), "TA_TRACE": r3})
		if code != 2 || !strings.Contains(stderr, "SHA-256 differs") {
			t.Errorf("a wrong sum: exit %d\n%s", code, stderr)
		}
	})

	t.Run("built from the repository", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "report")
		o, _, stderr, code := actionRun(t, map[string]string{"TA_TRACE": r3, "TA_OUT": out, "TA_FAIL_ON": ""})
		if code != 0 || o["exit-code"] != "0" || !strings.Contains(stderr, "::group::build traceaudit") {
			t.Errorf("exit %d, outputs %v\n%s", code, o, stderr)
		}
	})
}

// distTarball packs bin as make dist does and returns the tarball's path
// and SHA-256.
func distTarball(t *testing.T, bin string) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traceaudit-v0.0.0-linux-amd64.tar.gz")
	f, _ := os.Create(path)
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	data, _ := os.ReadFile(bin)
	tw.WriteHeader(&tar.Header{Name: "traceaudit-v0.0.0-linux-amd64/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "traceaudit-v0.0.0-linux-amd64/traceaudit", Mode: 0o755, Size: int64(len(data))})
	tw.Write(data)
	tw.Close()
	zw.Close()
	f.Close()
	b, _ := os.ReadFile(path)
	s := sha256.Sum256(b)
	return path, hex.EncodeToString(s[:])
}

// TestActionYAML: every input action.yml declares reaches the script, and
// every variable the script reads is set.
func TestActionYAML(t *testing.T) {
	y, err := os.ReadFile("action.yml")
	if err != nil {
		t.Fatal(err)
	}
	script, _ := os.ReadFile("action/run.sh")
	inputs := regexp.MustCompile(`(?m)^  ([a-z0-9-]+):\n    description:`).FindAllStringSubmatch(string(y[:strings.Index(string(y), "\noutputs:")]), -1)
	var declared []string
	for _, m := range inputs {
		declared = append(declared, m[1])
	}
	envs := regexp.MustCompile(`(?m)^        (TA_[A-Z0-9_]+): \$\{\{ inputs\.([a-z0-9-]+) \}\}$`).FindAllStringSubmatch(string(y), -1)
	used := map[string]bool{}
	for _, m := range envs {
		if !slices.Contains(declared, m[2]) {
			t.Errorf("env %s reads the undeclared input %s", m[1], m[2])
		}
		if !strings.Contains(string(script), m[1]) {
			t.Errorf("the script never reads %s", m[1])
		}
		used[m[2]] = true
	}
	for _, in := range declared {
		if !used[in] && !strings.Contains(string(y), "inputs."+in) {
			t.Errorf("input %s is not used", in)
		}
	}
	for _, v := range regexp.MustCompile(`\$\{?(TA_[A-Z0-9_]+)`).FindAllStringSubmatch(string(script), -1) {
		if v[1] != "TA_BINARY" && !strings.Contains(string(y), v[1]+":") {
			t.Errorf("the script reads %s, which action.yml does not set", v[1])
		}
	}
	if len(declared) < 8 {
		t.Errorf("found only %d inputs: %v", len(declared), declared)
	}
}
