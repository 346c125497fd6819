package nsysrep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// standIn puts the stand-in nsys on PATH and returns its call log.
func standIn(t *testing.T) (log func() []string) {
	t.Helper()
	bin := t.TempDir()
	script, err := os.ReadFile("testdata/nsys")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "nsys"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "calls")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("NSYS_LOG", logFile)
	t.Setenv("NSYS_SQLITE", testfix.Project("b0_pageable_sync.nsys.sqlite"))
	t.Setenv("NSYS_FAIL", "")
	t.Setenv("NSYS_SLEEP", "")
	return func() []string {
		b, _ := os.ReadFile(logFile)
		if len(b) == 0 {
			return nil
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

// report writes a fake report file (its content does not matter to the
// stand-in) with a modification time in the past.
func report(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("not really a report"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(p, old, old)
	return p
}

func calls(log []string) int { return len(log) }

func TestExportBesideThenReuse(t *testing.T) {
	log := standIn(t)
	dir := t.TempDir()
	rep := report(t, dir, "run.nsys-rep")
	var notes []string
	opts := Options{CacheDir: t.TempDir(), Note: func(m string) { notes = append(notes, m) }}
	got, err := Export(context.Background(), rep, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, ".run.nsys-rep.traceaudit.sqlite"); got != want {
		t.Errorf("export at %s, want %s", got, want)
	}
	if !ours(got) || calls(log()) != 1 || len(notes) != 1 || !strings.Contains(notes[0], got) {
		t.Errorf("ours %v, calls %v, notes %q", ours(got), log(), notes)
	}
	if !strings.Contains(strings.Join(log(), " "), "export --type sqlite --output "+dir) {
		t.Errorf("nsys called as %q", log())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("folder holds %v, want the report and its export", entries)
	}
	// Newer than the report: reused, nsys not run again, no note.
	if again, err := Export(context.Background(), rep, opts); err != nil || again != got || calls(log()) != 1 || len(notes) != 1 {
		t.Errorf("reuse: %v %s %v", err, again, log())
	}
	// The report changes: exported again over traceaudit's own file.
	future := time.Now().Add(time.Hour)
	os.Chtimes(rep, future, future)
	if again, err := Export(context.Background(), rep, opts); err != nil || again != got || calls(log()) != 2 {
		t.Errorf("stale export: %v %s %v", err, again, log())
	}
}

// A file at the export's name that traceaudit did not write is never
// touched: the export goes to the cache folder.
func TestUsersFileNeverOverwritten(t *testing.T) {
	log := standIn(t)
	dir, cache := t.TempDir(), t.TempDir()
	rep := report(t, dir, "run.qdrep")
	users := filepath.Join(dir, ".run.qdrep.traceaudit.sqlite")
	// Even a real SQLite export, newer than the report, is the user's.
	b, _ := os.ReadFile(testfix.Project("b0_pageable_sync.nsys.sqlite"))
	os.WriteFile(users, b, 0o600)
	got, err := Export(context.Background(), rep, Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(got) != cache || !strings.HasSuffix(got, "-run.qdrep.traceaudit.sqlite") || calls(log()) != 1 {
		t.Errorf("export at %s, calls %v", got, log())
	}
	if now, _ := os.ReadFile(users); string(now) != string(b) {
		t.Error("the user's file changed")
	}
}

// A report folder that cannot be written: the export goes to the cache.
func TestReadOnlyFolderUsesCache(t *testing.T) {
	standIn(t)
	dir, cache := t.TempDir(), t.TempDir()
	rep := report(t, dir, "run.nsys-rep")
	orig := mkdirTemp
	defer func() { mkdirTemp = orig }()
	mkdirTemp = func(d, pattern string) (string, error) {
		if d == dir {
			return "", &os.PathError{Op: "mkdirtemp", Path: d, Err: syscall.EROFS}
		}
		return orig(d, pattern)
	}
	got, err := Export(context.Background(), rep, Options{CacheDir: cache})
	if err != nil || filepath.Dir(got) != cache || !ours(got) {
		t.Fatalf("%v %s", err, got)
	}
	// Reused from the cache the next time.
	if again, err := Export(context.Background(), rep, Options{CacheDir: cache}); err != nil || again != got {
		t.Errorf("%v %s", err, again)
	}
}

// The same with real permissions, where the test does not run as root.
func TestReadOnlyFolderPermissions(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only folders; TestReadOnlyFolderUsesCache covers the path")
	}
	standIn(t)
	dir, cache := t.TempDir(), t.TempDir()
	rep := report(t, dir, "run.nsys-rep")
	os.Chmod(dir, 0o555)
	defer os.Chmod(dir, 0o755)
	got, err := Export(context.Background(), rep, Options{CacheDir: cache})
	if err != nil || filepath.Dir(got) != cache {
		t.Fatalf("%v %s", err, got)
	}
}

func TestNsysFailsLeavesNothing(t *testing.T) {
	standIn(t)
	t.Setenv("NSYS_FAIL", "QdstrmImporter: libdw.so.1: cannot open shared object file")
	dir, cache := t.TempDir(), t.TempDir()
	rep := report(t, dir, "run.nsys-rep")
	_, err := Export(context.Background(), rep, Options{CacheDir: cache})
	if err == nil || !strings.Contains(err.Error(), "nsys export failed (exit 1): ERROR: QdstrmImporter: libdw.so.1") {
		t.Fatalf("error %v", err)
	}
	for _, d := range []string{dir, cache} {
		entries, _ := os.ReadDir(d)
		if d == dir && len(entries) != 1 || d == cache && len(entries) != 0 {
			t.Errorf("%s holds %v after a failed export", d, entries)
		}
	}
}

func TestNoNsys(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	rep := report(t, t.TempDir(), "run.nsys-rep")
	if _, err := Export(context.Background(), rep, Options{CacheDir: t.TempDir()}); !errors.Is(err, ErrNoNsys) {
		t.Errorf("%v, want ErrNoNsys", err)
	}
}

// Cancelling (Ctrl-C) stops nsys and removes its temporary folder.
func TestCancelStopsNsys(t *testing.T) {
	standIn(t)
	t.Setenv("NSYS_SLEEP", "30")
	dir := t.TempDir()
	rep := report(t, dir, "run.nsys-rep")
	ctx, cancel := context.WithCancel(context.Background())
	ticks := 0
	var start time.Time
	opts := Options{CacheDir: t.TempDir(), Tick: func() {
		ticks++
		if ticks == 2 {
			cancel()
		}
	}}
	start = time.Now()
	_, err := Export(ctx, rep, opts)
	if err == nil {
		t.Fatal("a cancelled export succeeded")
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("cancel did not stop nsys")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("leftovers: %v", entries)
	}
}
