package outdir

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
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
	// A second report replaces the first; files of the first that the
	// second does not write go.
	w, _ = New(dir)
	w.File("report.md", []byte("two"))
	w.File("extra.png", []byte("x"))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	w, _ = New(dir)
	w.File("report.md", []byte("three"))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, dir); len(got) != 2 || read(t, filepath.Join(dir, "report.md")) != "three" {
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

// commit writes one report into dir.
func commit(dir, content string) error {
	w, err := New(dir)
	if err != nil {
		return err
	}
	if err := w.File("report.md", []byte(content)); err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}

// TestNeverDeletesUserFiles is the data-loss contract: a folder is
// written only when missing, empty or a previous report; everything else
// is refused before anything is written, and nothing of the user's goes.
func TestNeverDeletesUserFiles(t *testing.T) {
	parent := t.TempDir()
	home := filepath.Join(parent, "home")
	os.MkdirAll(home, 0o755)
	t.Setenv("HOME", home)
	work := filepath.Join(parent, "work", "project")
	os.MkdirAll(work, 0o755)
	t.Chdir(work)

	mk := func(name string, files map[string]string) string {
		d := filepath.Join(parent, name)
		os.MkdirAll(d, 0o755)
		for f, c := range files {
			os.MkdirAll(filepath.Dir(filepath.Join(d, f)), 0o755)
			os.WriteFile(filepath.Join(d, f), []byte(c), 0o644)
		}
		return d
	}
	prev := filepath.Join(parent, "prev")
	if err := commit(prev, "old"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(parent, "afile")
	os.WriteFile(file, []byte("mine"), 0o644)
	link := filepath.Join(parent, "link")
	os.Symlink(prev, link)
	mixed := filepath.Join(parent, "mixed")
	if err := commit(mixed, "old"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(mixed, "notes.txt"), []byte("mine"), 0o644)
	fake := mk("fake", map[string]string{Marker: "not a marker\nnotes.txt\n", "notes.txt": "mine"})

	for _, c := range []struct {
		name, dir string
		ok        bool
	}{
		{"missing", filepath.Join(parent, "new", "audit"), true},
		{"empty", mk("empty", nil), true},
		{"previous report", prev, true},
		{"foreign file", mk("keep", map[string]string{"notes.txt": "mine"}), false},
		{"foreign subfolder", mk("keep2", map[string]string{"sub/data.bin": "mine"}), false},
		{"report plus a user file", mixed, false},
		{"marker not ours", fake, false},
		{"a file", file, false},
		{"a symbolic link", link, false},
		{"dot", ".", false},
		{"working folder by path", work, false},
		{"parent of the working folder", "..", false},
		{"root", "/", false},
		{"home", home, false},
		{"home by tilde-free path", filepath.Join(home, "."), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, parent)
			err := commit(c.dir, "new")
			if c.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if read(t, filepath.Join(c.dir, "report.md")) != "new" {
					t.Fatal("report not written")
				}
				listed, err := readMarker(c.dir)
				if err != nil || !slices.Equal(listed, []string{"report.md"}) {
					t.Fatalf("marker %v %v", listed, err)
				}
				return
			}
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("want a refusal, got %v", err)
			}
			if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), c.dir+": ") {
				t.Errorf("want one line naming the folder: %q", err)
			}
			if after := snapshot(t, parent); !maps.Equal(before, after) {
				t.Errorf("files changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// snapshot maps every path under root to its content ("<dir>" for folders,
// "-> target" for links).
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[p] = "-> " + l
		case d.IsDir():
			out[p] = "<dir>"
		default:
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCommitRechecks: a file the user adds to a previous report while a
// new one is being written is kept, and the new report is not swapped in.
func TestCommitRechecks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	if err := commit(dir, "old"); err != nil {
		t.Fatal(err)
	}
	w, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	w.File("report.md", []byte("new"))
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	if err := w.Commit(); !errors.Is(err, ErrRefused) {
		t.Fatalf("commit over a user's file: %v", err)
	}
	if read(t, filepath.Join(dir, "notes.txt")) != "mine" || read(t, filepath.Join(dir, "report.md")) != "old" {
		t.Fatal("user's folder changed")
	}
	if got := entries(t, filepath.Dir(dir)); len(got) != 1 {
		t.Fatalf("temporary folder left: %v", got)
	}
}

// writeReport writes a report folder of one report.md at dir.
func writeReport(t *testing.T, dir, text string) {
	t.Helper()
	w, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.File("report.md", []byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// A user's empty folder, and a previous report, keep their mode (the
// set-group-ID bit included) when the report takes their place; a new
// folder is 0755.
func TestKeepsTheFolderMode(t *testing.T) {
	parent := t.TempDir()
	mode := func(p string) os.FileMode {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode() & (os.ModePerm | os.ModeSetgid | os.ModeSticky)
	}
	write := func(dir string) { writeReport(t, dir, "r") }
	group := filepath.Join(parent, "group")
	if err := os.Mkdir(group, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(group, 0o770|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	write(group)
	if got := mode(group); got != 0o770|os.ModeSetgid {
		t.Errorf("an empty group folder became %v", got)
	}
	if got := mode(filepath.Join(group, "report.md")); got != 0o644 {
		t.Errorf("report.md %v", got)
	}
	if err := os.Chmod(group, 0o750); err != nil {
		t.Fatal(err)
	}
	write(group) // a previous report, replaced
	if got := mode(group); got != 0o750 {
		t.Errorf("a previous report 0750 became %v", got)
	}
	fresh := filepath.Join(parent, "new")
	write(fresh)
	if got := mode(fresh); got != 0o755 {
		t.Errorf("a new folder %v", got)
	}
}

// A previous report this user cannot change is refused before any work
// (replacing it would leave the old one beside the new); root can change
// any folder, so this runs as another user only.
func TestRefusesAPreviousReportItCannotReplace(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write any folder")
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "audit")
	writeReport(t, dir, "old")
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if _, err := New(dir); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "cannot replace") {
		t.Errorf("a read-only previous report: %v", err)
	}
	if got := entries(t, parent); len(got) != 1 {
		t.Errorf("left in the parent: %v", got)
	}
}

// Errors name the folder once, with the system's reason and what it means,
// not the temporary path or the system call.
func TestPathErrors(t *testing.T) {
	parent := t.TempDir()
	file := filepath.Join(parent, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(filepath.Join(file, "sub")); err == nil || err.Error() != file+"/sub: not a directory: a part of the path is a file" {
		t.Errorf("under a file: %v", err)
	}
	busy := pathErr("mnt", &os.LinkError{Op: "rename", Old: ".mnt.tmp-1", New: "mnt", Err: syscall.EBUSY})
	if !errors.Is(busy, syscall.EBUSY) || busy.Error() != "mnt: device or resource busy (a mount point cannot be replaced: give a folder inside it)" {
		t.Errorf("busy: %v", busy)
	}
	pe := pathErr("x", &fs.PathError{Op: "mkdir", Path: "/proc/.x.tmp-1", Err: syscall.ENOENT})
	if pe.Error() != "x: no such file or directory" {
		t.Errorf("path error: %v", pe)
	}
}

// TestSweepsWhatKilledRunsLeft: the next run writing a folder removes the
// temporary folders a killed run left beside it, once stale, and nothing
// else: a fresh one (a run still writing) and one holding a folder stay.
func TestSweepsWhatKilledRunsLeft(t *testing.T) {
	parent := t.TempDir()
	mk := func(name string, age time.Duration, sub bool) string {
		d := filepath.Join(parent, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(d, "report.md")
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if sub {
			if err := os.Mkdir(filepath.Join(d, "inner"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		old := time.Now().Add(-age)
		for _, p := range []string{f, d} {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	stale := mk(".audit.tmp-123", time.Hour, false)
	fresh := mk(".audit.tmp-456", time.Second, false)
	nested := mk(".audit.tmp-789", time.Hour, true)
	other := mk(".other.tmp-1", time.Hour, false)
	w, err := New(filepath.Join(parent, "audit"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, c := range []struct {
		dir  string
		gone bool
	}{{stale, true}, {fresh, false}, {nested, false}, {other, false}} {
		if _, err := os.Stat(c.dir); os.IsNotExist(err) != c.gone {
			t.Errorf("%s: gone %v, want %v", filepath.Base(c.dir), os.IsNotExist(err), c.gone)
		}
	}
}
