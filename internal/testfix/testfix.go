// Package testfix locates test fixtures: the project's own captures under
// fixtures/ and the public corpus in ../shared/fixtures beside the checkout.
// Tests that need the shared corpus skip with a message where it is absent.
package testfix

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
)

// Root is the repository root (the folder holding go.mod).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Project returns the path of a file under the project's fixtures/ folder.
func Project(name string) string { return filepath.Join(Root(), "fixtures", name) }

// SharedDir returns ../shared/fixtures/<sub> beside the checkout, or skips
// the test when it is absent. TRACEAUDIT_SHARED overrides the location of
// ../shared.
func SharedDir(t testing.TB, sub string) string {
	t.Helper()
	base := os.Getenv("TRACEAUDIT_SHARED")
	if base == "" {
		base = filepath.Join(Root(), "..", "shared")
	}
	dir := filepath.Join(base, "fixtures", sub)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Skipf("shared fixtures not found at %s: skipping (clone ../shared beside the checkout to run this test)", dir)
	}
	return dir
}

// Shared returns the path of ../shared/fixtures/<sub>/<name>, skipping the
// test when the shared corpus is absent.
func Shared(t testing.TB, sub, name string) string {
	t.Helper()
	p := filepath.Join(SharedDir(t, sub), name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared fixture %s not found: skipping", p)
	}
	return p
}

// SharedGlob returns the sorted files matching pattern in
// ../shared/fixtures/<sub>, skipping the test when the corpus is absent.
func SharedGlob(t testing.TB, sub, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(SharedDir(t, sub), pattern))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) == 0 {
		t.Skipf("no shared fixtures match %s/%s: skipping", sub, pattern)
	}
	sort.Strings(m)
	return m
}

// CIEnv is the environment variable .ci/run sets: under it, a test that
// would skip because a tool it needs (Chromium, Mermaid) is missing fails
// instead.
const CIEnv = "TRACEAUDIT_CI"

// Missing skips the test with the message, or fails it when CIEnv is set.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(CIEnv) != "" {
		t.Fatalf(format+" (%s is set: CI must have it)", append(args, CIEnv)...)
	}
	t.Skipf(format, args...)
}
