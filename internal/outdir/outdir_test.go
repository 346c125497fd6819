package outdir

import (
	"os"
	"path/filepath"
	"testing"
)

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestCommitReplacesAtomically(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "audit")
	w, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.File("report.md", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("folder visible before Commit")
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(dir, "report.md")) != "one" {
		t.Fatal("content")
	}
	// A second report replaces the first; stale files go.
	os.WriteFile(filepath.Join(dir, "stale.png"), []byte("x"), 0o644)
	w, _ = New(dir)
	w.File("report.md", []byte("two"))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, dir); len(got) != 1 || read(t, filepath.Join(dir, "report.md")) != "two" {
		t.Fatalf("entries %v", got)
	}
	if got := entries(t, parent); len(got) != 1 {
		t.Fatalf("leftovers beside the folder: %v", got)
	}
}

func TestAbortKeepsPrevious(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "audit")
	w, _ := New(dir)
	w.File("report.md", []byte("old"))
	w.Commit()
	w, _ = New(dir)
	w.File("report.md", []byte("half"))
	w.Abort()
	if read(t, filepath.Join(dir, "report.md")) != "old" {
		t.Fatal("previous report changed")
	}
	if got := entries(t, parent); len(got) != 1 {
		t.Fatalf("temporary folder left: %v", got)
	}
}

func TestRejects(t *testing.T) {
	parent := t.TempDir()
	f := filepath.Join(parent, "file")
	os.WriteFile(f, []byte("x"), 0o644)
	if _, err := New(f); err == nil {
		t.Error("a file is not a folder")
	}
	if _, err := New(filepath.Join(f, "audit")); err == nil {
		t.Error("a folder under a file accepted")
	}
	nested := filepath.Join(parent, "a", "b", "audit")
	w0, err := New(nested)
	if err != nil {
		t.Fatalf("missing parents must be created: %v", err)
	}
	if err := w0.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(nested); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("report folder %v %v", st, err)
	}
	w, _ := New(filepath.Join(parent, "audit"))
	defer w.Abort()
	if err := w.File("../escape", nil); err == nil {
		t.Error("path in file name accepted")
	}
}
