// Package nsysrep turns an Nsight Systems report (.nsys-rep, .qdrep) into
// the SQLite export traceaudit reads, by running `nsys export --type
// sqlite` when nsys is on PATH.
//
// The export goes beside the report as .NAME.traceaudit.sqlite (NAME is
// the report's file name), or, when that folder cannot be written or the
// name is taken by a file traceaudit did not write, under the user cache
// folder (traceaudit/nsys-export). It is reused while it is newer than the
// report. traceaudit marks its exports with an SQLite application id
// (AppID) and never replaces a file without it: a user's file is never
// overwritten. nsys writes into a temporary folder beside the target first,
// so a failed or interrupted export leaves nothing behind.
package nsysrep

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrNoNsys means nsys is not on PATH.
var ErrNoNsys = errors.New("nsys is not on PATH")

// AppID is the SQLite application id ("TAUD") traceaudit writes into its
// exports' header (offset 68), the mark of a file it may replace.
const AppID = 0x54415544

// appIDOffset is where SQLite keeps the application id in the file header.
const appIDOffset = 68

// Options control an export.
type Options struct {
	// Nsys is the nsys executable; "" looks it up on PATH.
	Nsys string
	// CacheDir is the fallback folder; "" is the user cache folder's
	// traceaudit/nsys-export.
	CacheDir string
	// Tick, if set, is called about five times a second while nsys runs.
	Tick func()
	// Note, if set, receives one line when an export was made (where it
	// went), for stderr.
	Note func(msg string)
}

// Export returns the path of an SQLite export of report, reusing one made
// earlier while it is newer than the report, else running nsys. It
// returns ErrNoNsys (wrapped) when an export is needed and nsys is not on
// PATH.
func Export(ctx context.Context, report string, opts Options) (string, error) {
	st, err := os.Stat(report)
	if err != nil {
		return "", err
	}
	targets, err := candidates(report, opts)
	if err != nil {
		return "", err
	}
	// Reuse a fresh export from any candidate place.
	for _, t := range targets {
		if fresh(t, st.ModTime()) {
			return t, nil
		}
	}
	nsys := opts.Nsys
	if nsys == "" {
		if nsys, err = exec.LookPath("nsys"); err != nil {
			return "", ErrNoNsys
		}
	}
	var lastErr error
	for _, t := range targets {
		if !replaceable(t) {
			continue // a file traceaudit did not write
		}
		err := run(ctx, nsys, report, t, opts)
		if err == nil {
			if opts.Note != nil {
				opts.Note(fmt.Sprintf("exported %s with nsys to %s (reused while newer than the report)", report, t))
			}
			return t, nil
		}
		var nf *nsysFailed
		if errors.As(err, &nf) || ctx.Err() != nil {
			return "", err // nsys itself failed: another folder will not help
		}
		lastErr = err // this folder cannot be written: try the next
	}
	if lastErr == nil {
		lastErr = errors.New("every place for the export holds a file traceaudit did not write")
	}
	return "", fmt.Errorf("cannot write the SQLite export: %w", lastErr)
}

// candidates are the export's places: beside the report, then the cache.
func candidates(report string, opts Options) ([]string, error) {
	abs, err := filepath.Abs(report)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(abs)
	out := []string{filepath.Join(filepath.Dir(abs), "."+name+".traceaudit.sqlite")}
	cache := opts.CacheDir
	if cache == "" {
		if base, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(base, "traceaudit", "nsys-export")
		}
	}
	if cache != "" {
		sum := sha256.Sum256([]byte(abs))
		out = append(out, filepath.Join(cache, hex.EncodeToString(sum[:8])+"-"+name+".traceaudit.sqlite"))
	}
	return out, nil
}

// ours reports whether path is a regular file traceaudit exported.
func ours(path string) bool {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var id [4]byte
	if _, err := f.ReadAt(id[:], appIDOffset); err != nil {
		return false
	}
	return binary.BigEndian.Uint32(id[:]) == AppID
}

// fresh reports whether path is traceaudit's export, newer than the report.
func fresh(path string, reportTime time.Time) bool {
	st, err := os.Stat(path)
	return err == nil && ours(path) && st.ModTime().After(reportTime)
}

// replaceable reports whether an export may be written at path: nothing
// is there, or an export of traceaudit's.
func replaceable(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, os.ErrNotExist) || ours(path)
}

// mkdirTemp makes the temporary folder nsys writes into (a variable for
// tests that simulate a read-only folder).
var mkdirTemp = os.MkdirTemp

// nsysFailed is nsys exiting with an error.
type nsysFailed struct {
	code int
	msg  string
}

func (e *nsysFailed) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("nsys export failed (exit %d)", e.code)
	}
	return fmt.Sprintf("nsys export failed (exit %d): %s", e.code, e.msg)
}

// run exports report to target through a temporary folder beside target.
func run(ctx context.Context, nsys, report, target string, opts Options) error {
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := mkdirTemp(dir, ".traceaudit-export-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "export.sqlite")
	cmd := exec.CommandContext(ctx, nsys, "export", "--type", "sqlite", "--output", out, report)
	var stderr bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return &nsysFailed{code: -1, msg: err.Error()}
	}
	done := make(chan struct{})
	if opts.Tick != nil {
		go func() {
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					opts.Tick()
				}
			}
		}()
	}
	err = cmd.Wait()
	close(done)
	if err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return &nsysFailed{code: code, msg: lastLine(stderr.String())}
	}
	if err := mark(out); err != nil {
		return &nsysFailed{code: 0, msg: fmt.Sprintf("the export is not an SQLite file (%v)", err)}
	}
	if !replaceable(target) { // a file appeared meanwhile
		return errors.New(target + " holds a file traceaudit did not write")
	}
	return os.Rename(out, target)
}

// mark writes AppID into the export's header, after checking it is an
// SQLite file nsys finished writing.
func mark(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 100)
	if _, err := io.ReadFull(f, head); err != nil {
		return err
	}
	if !bytes.HasPrefix(head, []byte("SQLite format 3\x00")) {
		return errors.New("no SQLite header")
	}
	var id [4]byte
	binary.BigEndian.PutUint32(id[:], AppID)
	if _, err := f.WriteAt(id[:], appIDOffset); err != nil {
		return err
	}
	return f.Sync()
}

// lastLine is the last non-empty line of s, for one-line errors.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
