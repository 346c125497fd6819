package testfix

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test would end instead of
// ending it: Skipf and Fatalf stop the calling goroutine as the real ones do.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.failed, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

// call runs f with a recorder on its own goroutine, as the testing package
// runs a test, and returns how it ended.
func call(t *testing.T, f func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestMissingSkipsOutsideCI(t *testing.T) {
	t.Setenv(RequireEnv, "")
	r := call(t, func(tb testing.TB) { Missing(tb, "chromium not found on PATH") })
	if !r.skipped || r.failed || r.msg != "chromium not found on PATH: skipping" {
		t.Errorf("got skipped=%v failed=%v %q, want a skip with the message", r.skipped, r.failed, r.msg)
	}
}

func TestMissingFailsWhenRequired(t *testing.T) {
	t.Setenv(RequireEnv, "1")
	r := call(t, func(tb testing.TB) { Missing(tb, "chromium not found on %s", "PATH") })
	if !r.failed || r.skipped {
		t.Fatalf("got skipped=%v failed=%v, want a failure", r.skipped, r.failed)
	}
	if r.msg != "chromium not found on PATH: failing ("+RequireEnv+"=1)" {
		t.Errorf("message %q: want the reason and the switch that made it fail", r.msg)
	}
}

func TestSharedHonoursTheSwitch(t *testing.T) {
	t.Setenv("TRACEAUDIT_SHARED", filepath.Join(t.TempDir(), "absent"))
	for _, c := range []struct {
		env          string
		skip, fail   bool
		wantInReason string
	}{
		{"", true, false, "shared fixtures not found"},
		{"0", true, false, "shared fixtures not found"},
		{"1", false, true, "shared fixtures not found"},
	} {
		t.Setenv(RequireEnv, c.env)
		for name, f := range map[string]func(testing.TB){
			"SharedDir":  func(tb testing.TB) { SharedDir(tb, "chrome") },
			"Shared":     func(tb testing.TB) { Shared(tb, "chrome", "x.json") },
			"SharedGlob": func(tb testing.TB) { SharedGlob(tb, "chrome", "*.json") },
		} {
			r := call(t, f)
			if r.skipped != c.skip || r.failed != c.fail || !strings.Contains(r.msg, c.wantInReason) {
				t.Errorf("%s with %s=%q: skipped=%v failed=%v %q", name, RequireEnv, c.env, r.skipped, r.failed, r.msg)
			}
		}
	}
}

func TestSharedFindsPresentFixtures(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fixtures", "chrome")
	if err := mkfile(filepath.Join(dir, "a.json")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRACEAUDIT_SHARED", filepath.Dir(filepath.Dir(dir)))
	t.Setenv(RequireEnv, "1")
	var got []string
	r := call(t, func(tb testing.TB) { got = SharedGlob(tb, "chrome", "*.json") })
	if r.skipped || r.failed || len(got) != 1 || filepath.Base(got[0]) != "a.json" {
		t.Errorf("got %v (skipped=%v failed=%v %q), want [.../a.json]", got, r.skipped, r.failed, r.msg)
	}
	r = call(t, func(tb testing.TB) { Shared(tb, "chrome", "b.json") })
	if !r.failed || !strings.Contains(r.msg, "b.json") {
		t.Errorf("absent file with the switch on: failed=%v %q, want a failure naming it", r.failed, r.msg)
	}
}

func mkfile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte("{}"), 0o644)
}
