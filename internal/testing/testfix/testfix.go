// Package testfix locates test fixtures: the project's own captures under
// fixtures/ and the public corpus in ../shared/fixtures beside the checkout.
//
// Tests that need something this machine lacks (the shared corpus, a tool
// such as a headless browser) call Missing: it skips the test with the
// reason, or, when RequireEnv is set to 1 (CI sets it, see .ci/run), fails
// it, so that a CI run cannot pass by skipping what it was meant to test.
package testfix

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
)

// RequireEnv names the environment variable that turns Missing's skips
// into failures: TRACEAUDIT_REQUIRE_FIXTURES=1.
const RequireEnv = "TRACEAUDIT_REQUIRE_FIXTURES"

// Required reports whether missing fixtures and tools fail tests instead of
// skipping them (RequireEnv is "1").
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Missing stops a test that cannot run here because something it needs is
// absent (a fixture, a tool): it skips with the message, or fails the test
// with it when Required. Tests that skip for other reasons (-short, no GPU
// on this machine) call t.Skip themselves.
//
// The message says what is missing and how to get it; Missing adds
// whether the test skips or fails.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf(format+": failing ("+RequireEnv+"=1)", args...)
	}
	t.Skipf(format+": skipping", args...)
}

// Root is the repository root: the nearest folder above this file that
// holds go.mod.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			panic("testfix: no go.mod above " + file)
		}
		dir = up
	}
}

// Project returns the path of a file under the project's fixtures/ folder.
func Project(name string) string { return filepath.Join(Root(), "fixtures", name) }

// SharedDir returns ../shared/fixtures/<sub> beside the checkout, or calls
// Missing when it is absent. TRACEAUDIT_SHARED overrides the location of
// ../shared.
func SharedDir(t testing.TB, sub string) string {
	t.Helper()
	base := os.Getenv("TRACEAUDIT_SHARED")
	if base == "" {
		base = filepath.Join(Root(), "..", "shared")
	}
	dir := filepath.Join(base, "fixtures", sub)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		Missing(t, "shared fixtures not found at %s (clone ../shared beside the checkout, or set TRACEAUDIT_SHARED)", dir)
	}
	return dir
}

// Shared returns the path of ../shared/fixtures/<sub>/<name>, calling
// Missing when it is absent.
func Shared(t testing.TB, sub, name string) string {
	t.Helper()
	p := filepath.Join(SharedDir(t, sub), name)
	if _, err := os.Stat(p); err != nil {
		Missing(t, "shared fixture %s not found", p)
	}
	return p
}

// SharedGlob returns the sorted files matching pattern in
// ../shared/fixtures/<sub>, calling Missing when none match.
func SharedGlob(t testing.TB, sub, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(SharedDir(t, sub), pattern))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) == 0 {
		Missing(t, "no shared fixtures match %s/%s", sub, pattern)
	}
	sort.Strings(m)
	return m
}
