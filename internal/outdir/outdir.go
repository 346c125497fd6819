// Package outdir writes a report folder atomically, and only ever replaces
// a folder that traceaudit wrote itself.
//
// Every file goes to a temporary sibling folder first. At Commit a marker
// file (Marker) listing every file of the folder is added, then the new
// folder takes the place of the old one: renamed over it when it is
// missing or empty; when it is a previous report, the old one is renamed
// aside, the new one renamed in, and the old one's listed files removed.
// A failure at any point leaves the previous folder as it was and no
// temporary folder behind.
//
// A folder holding anything the marker does not list, a folder that is the
// working folder, one of its ancestors, the root or the home folder, a
// symbolic link and a path that is a file are refused (Check): a user's
// files are never deleted or overwritten.
package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Marker is the file, in every folder traceaudit writes, that lists the
// folder's files (one name a line, after a header line).
const Marker = ".traceaudit-report"

const markerHeader = "# written by traceaudit: the files of this folder, which traceaudit may replace"

// ErrRefused marks a folder traceaudit must not write into.
var ErrRefused = errors.New("refused")

// refusal is a Check error: one line naming the folder and the reason.
type refusal struct{ dir, why string }

func (e *refusal) Error() string { return e.dir + ": " + e.why }
func (e *refusal) Unwrap() error { return ErrRefused }

func refuse(dir, why string) error { return &refusal{dir: dir, why: why} }

// state is what Check found at the folder's path.
type state int

const (
	missing state = iota
	empty
	previous // a previous traceaudit report
)

// Check reports whether dir may receive a report: it is missing, empty, or
// a folder traceaudit wrote whose marker lists every file in it. Other
// folders, protected folders (the working folder and its ancestors, /, the
// home folder), symbolic links and files are refused with an error that
// wraps ErrRefused.
func Check(dir string) error {
	_, _, err := check(dir)
	return err
}

func check(dir string) (state, []string, error) {
	clean := filepath.Clean(dir)
	if err := protected(clean); err != nil {
		return 0, nil, err
	}
	st, err := os.Lstat(clean)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return missing, nil, nil
	case err != nil:
		return 0, nil, pathErr(dir, err)
	case st.Mode()&os.ModeSymlink != 0:
		return 0, nil, refuse(dir, "is a symbolic link: give the folder itself, or a new one")
	case !st.IsDir():
		return 0, nil, refuse(dir, "is a file, not a folder: give a new or empty folder")
	}
	es, err := os.ReadDir(clean)
	if err != nil {
		return 0, nil, pathErr(dir, err)
	}
	if len(es) == 0 {
		return empty, nil, nil
	}
	listed, err := readMarker(clean)
	if err != nil {
		return 0, nil, refuse(dir, "holds files traceaudit did not write: give a new or empty folder")
	}
	for _, e := range es {
		if e.Name() == Marker {
			continue
		}
		if !e.Type().IsRegular() || !slices.Contains(listed, e.Name()) {
			return 0, nil, refuse(dir, fmt.Sprintf("holds files traceaudit did not write (%s): give a new or empty folder", e.Name()))
		}
	}
	// Replacing a previous report removes its files: refuse now, before
	// any work, a folder this user may not change.
	if err := syscall.Access(clean, 0o3); err != nil { // W_OK|X_OK
		return 0, nil, refuse(dir, fmt.Sprintf("is a previous report this user cannot replace (%v): give a new or empty folder", err))
	}
	return previous, listed, nil
}

// protected refuses the folders a report must never replace.
func protected(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return pathErr(dir, err)
	}
	real := abs
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		real = r
	}
	if real == string(filepath.Separator) || abs == string(filepath.Separator) {
		return refuse(dir, "is the root folder: give a new or empty folder")
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			home = h
		}
		if real == filepath.Clean(home) {
			return refuse(dir, "is the home folder: give a new or empty folder")
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if w, err := filepath.EvalSymlinks(wd); err == nil {
			wd = w
		}
		if real == wd || strings.HasPrefix(wd, real+string(filepath.Separator)) {
			return refuse(dir, "is the working folder or one of its parents: give a new or empty folder")
		}
	}
	return nil
}

// pathErr is an error about the folder dir in one line that names it once
// and says the system's reason without the temporary paths and system
// call names it came with ("mkdir /proc/.x.tmp-1: ..."); EBUSY is a mount
// point, which cannot be replaced.
func pathErr(dir string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.Is(err, syscall.EBUSY):
		return fmt.Errorf("%s: %w (a mount point cannot be replaced: give a folder inside it)", dir, syscall.EBUSY)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s: %w: a part of the path is a file", dir, syscall.ENOTDIR)
	case errors.As(err, &pe):
		return fmt.Errorf("%s: %w", dir, pe.Err)
	case errors.As(err, &le):
		return fmt.Errorf("%s: %w", dir, le.Err)
	}
	return fmt.Errorf("%s: %w", dir, err)
}

// readMarker returns the file names a marker lists.
func readMarker(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, Marker))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) == 0 || lines[0] != markerHeader {
		return nil, fmt.Errorf("%s: not a traceaudit marker", Marker)
	}
	var names []string
	for _, l := range lines[1:] {
		if l != "" && !strings.ContainsAny(l, `/\`) && l != "." && l != ".." {
			names = append(names, l)
		}
	}
	return names, nil
}

// Writer collects the files of one folder.
type Writer struct {
	dir string
	tmp string
}

// New starts writing folder dir after Check allows it: it creates a
// temporary sibling folder, and dir's parent folders if they are missing.
func New(dir string) (*Writer, error) {
	if err := Check(dir); err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, pathErr(dir, err)
	}
	sweep(parent, filepath.Base(dir), time.Now())
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		// The folder beside which the report is written refuses files.
		return nil, fmt.Errorf("%w (traceaudit writes the report beside it first, in %s)", pathErr(dir, err), parent)
	}
	if err := keepMode(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return nil, pathErr(dir, err)
	}
	return &Writer{dir: dir, tmp: tmp}, nil
}

// staleAfter is how old a half-made report folder must be for the next
// run writing the same folder to remove it: older than any run that
// could still be writing it.
const staleAfter = 10 * time.Minute

// sweep removes what killed runs left beside folder base in parent: the
// temporary folders (.base.tmp-*, and their .old) of reports never
// committed, when they hold only plain files and nothing in them changed
// for staleAfter. Anything else stays.
func sweep(parent, base string, now time.Time) {
	matches, _ := filepath.Glob(filepath.Join(parent, "."+base+".tmp-*"))
	for _, m := range matches {
		es, err := os.ReadDir(m)
		if err != nil {
			continue
		}
		newest := time.Time{}
		if st, err := os.Lstat(m); err == nil && st.IsDir() {
			newest = st.ModTime()
		} else {
			continue
		}
		plain := true
		for _, e := range es {
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() {
				plain = false
				break
			}
			if info.ModTime().After(newest) {
				newest = info.ModTime()
			}
		}
		if plain && now.Sub(newest) > staleAfter {
			os.RemoveAll(m)
		}
	}
}

// keepMode gives the new folder tmp the mode of the folder it replaces (its
// permissions, set-group-ID and sticky bits; rwx for the owner, who writes
// the report) and, where this user may, its group, so that a user's empty
// group folder stays theirs; 0755 where there is none. Files written
// inside then take the folder's group.
func keepMode(tmp, dir string) error {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return os.Chmod(tmp, 0o755)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		os.Lchown(tmp, -1, int(sys.Gid)) // best effort: not a member, the user's own group stays
	}
	// The owner keeps the right to write the report into it.
	return os.Chmod(tmp, st.Mode()&(os.ModePerm|os.ModeSetgid|os.ModeSticky)|0o700)
}

// Dir is the temporary folder, for writers that create files themselves
// (plain files only: Commit refuses folders inside).
func (w *Writer) Dir() string { return w.tmp }

// File writes one file (a plain name, no folders) into the new folder.
func (w *Writer) File(name string, data []byte) error {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." || name == Marker {
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

// Commit writes the marker and swaps the new folder in. The folder is
// checked again first, so a file a user added since New is never lost.
func (w *Writer) Commit() error {
	if w.tmp == "" {
		return fmt.Errorf("%s: already committed or aborted", w.dir)
	}
	if err := w.writeMarker(); err != nil {
		w.Abort()
		return err
	}
	st, listed, err := check(w.dir)
	if err != nil {
		w.Abort()
		return err
	}
	if st != previous {
		// rename(2) replaces an empty folder atomically (os.Rename
		// refuses any existing folder, so the system call is used).
		if err := syscall.Rename(w.tmp, w.dir); err != nil {
			w.Abort()
			return pathErr(w.dir, err)
		}
		w.tmp = ""
		return nil
	}
	old := w.tmp + ".old"
	if err := os.Rename(w.dir, old); err != nil {
		w.Abort()
		return fmt.Errorf("%s: moving the previous report aside: %w", w.dir, err)
	}
	if err := os.Rename(w.tmp, w.dir); err != nil {
		os.Rename(old, w.dir)
		w.Abort()
		return pathErr(w.dir, err)
	}
	w.tmp = ""
	// Remove only what the old marker listed; should anything else have
	// appeared there, the old folder stays beside the new one.
	for _, name := range append(listed, Marker) {
		os.Remove(filepath.Join(old, name))
	}
	if err := os.Remove(old); err != nil {
		return fmt.Errorf("%s: the previous report was kept at %s: %w", w.dir, old, err)
	}
	return nil
}

// writeMarker lists the new folder's files in its marker; folders inside
// are refused (a report is flat).
func (w *Writer) writeMarker() error {
	es, err := os.ReadDir(w.tmp)
	if err != nil {
		return pathErr(w.dir, err)
	}
	var b strings.Builder
	b.WriteString(markerHeader + "\n")
	for _, e := range es {
		if !e.Type().IsRegular() {
			return fmt.Errorf("outdir: %s: not a plain file", e.Name())
		}
		b.WriteString(e.Name() + "\n")
	}
	return os.WriteFile(filepath.Join(w.tmp, Marker), []byte(b.String()), 0o644)
}
