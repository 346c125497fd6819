// Package outdir writes a report folder atomically: every file goes to a
// temporary sibling folder first, then the old folder is renamed aside, the
// new one renamed in, and the old one removed. A failure at any point
// leaves the previous folder as it was and no temporary folder behind.
package outdir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Writer collects the files of one folder.
type Writer struct {
	dir string
	tmp string
}

// New starts writing folder dir: it creates a temporary sibling folder,
// and dir's parent folders if they are missing.
func New(dir string) (*Writer, error) {
	dir = filepath.Clean(dir)
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s: exists and is not a folder", dir)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return &Writer{dir: dir, tmp: tmp}, nil
}

// Dir is the temporary folder, for writers that create files themselves.
func (w *Writer) Dir() string { return w.tmp }

// File writes one file (a plain name, no folders) into the new folder.
func (w *Writer) File(name string, data []byte) error {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return fmt.Errorf("outdir: bad file name %q", name)
	}
	if err := os.WriteFile(filepath.Join(w.tmp, name), data, 0o644); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(w.dir, name), err)
	}
	return nil
}

// Abort removes the temporary folder; the previous folder is untouched.
// Safe to call after Commit (it does nothing then).
func (w *Writer) Abort() {
	if w.tmp != "" {
		os.RemoveAll(w.tmp)
		w.tmp = ""
	}
}

// Commit swaps the new folder in: the old folder (if any) is renamed aside,
// the new one renamed to dir, then the old one removed.
func (w *Writer) Commit() error {
	if w.tmp == "" {
		return fmt.Errorf("%s: already committed or aborted", w.dir)
	}
	old := ""
	if _, err := os.Stat(w.dir); err == nil {
		old = w.tmp + ".old"
		if err := os.Rename(w.dir, old); err != nil {
			w.Abort()
			return fmt.Errorf("%s: moving the previous report aside: %w", w.dir, err)
		}
	}
	if err := os.Rename(w.tmp, w.dir); err != nil {
		if old != "" {
			os.Rename(old, w.dir)
		}
		w.Abort()
		return fmt.Errorf("%s: %w", w.dir, err)
	}
	w.tmp = ""
	if old != "" {
		os.RemoveAll(old)
	}
	return nil
}
