// Package headless drives a real headless Chromium (Debian's chromium
// package) for tests: it dumps a page's DOM after its scripts ran and takes
// screenshots. Every run uses a new, empty profile folder and the flags
// that keep the browser off the network.
package headless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// ErrNoBrowser means no Chromium was found.
var ErrNoBrowser = errors.New("no chromium on PATH (Debian: apt-get install chromium)")

// Find returns the Chromium executable: $TRACEAUDIT_CHROMIUM, else
// chromium, chromium-browser or google-chrome on PATH.
func Find() (string, error) {
	if p := os.Getenv("TRACEAUDIT_CHROMIUM"); p != "" {
		return exec.LookPath(p)
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// Browser runs one Chromium executable.
type Browser struct {
	Path string
	// Budget is the virtual time pages get to run their scripts.
	Budget time.Duration
	// Crashes counts the runs that crashed and were started again.
	Crashes int
}

// runError is a failed browser run: its message, wrapping the exit.
type runError struct {
	err error
	msg string
}

func (e *runError) Error() string { return e.msg }
func (e *runError) Unwrap() error { return e.err }

// New finds Chromium.
func New() (*Browser, error) {
	p, err := Find()
	if err != nil {
		return nil, err
	}
	return &Browser{Path: p, Budget: 10 * time.Second}, nil
}

// attempts is how often a browser that crashed (killed by a signal, as
// Chromium now and then is on a loaded machine) is started again; a
// browser that exits with an error is not.
const attempts = 3

func (b *Browser) run(ctx context.Context, extra ...string) ([]byte, error) {
	var err error
	for range attempts {
		var out []byte
		out, err = b.once(ctx, extra...)
		var ee *exec.ExitError
		if err == nil || !errors.As(err, &ee) || !signaled(ee) || ctx.Err() != nil {
			return out, err
		}
		b.Crashes++
	}
	return nil, err
}

func (b *Browser) once(ctx context.Context, extra ...string) ([]byte, error) {
	profile, err := os.MkdirTemp("", "traceaudit-chromium-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--virtual-time-budget=" + strconv.FormatInt(b.Budget.Milliseconds(), 10)}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.Path, append(args, extra...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, &runError{err: err, msg: fmt.Sprintf("%s: %v: %s", b.Path, err, lastLines(stderr.String(), 5))}
	}
	return out.Bytes(), nil
}

// DumpDOM loads url and returns the serialised DOM once its scripts ran.
func (b *Browser) DumpDOM(ctx context.Context, url string) (string, error) {
	out, err := b.run(ctx, "--dump-dom", url)
	return string(out), err
}

// Screenshot loads url in a window of width x height pixels and writes a
// PNG of it to path.
func (b *Browser) Screenshot(ctx context.Context, url, path string, width, height int) error {
	if _, err := b.run(ctx, fmt.Sprintf("--window-size=%d,%d", width, height), "--hide-scrollbars", "--screenshot="+path, url); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 {
		return fmt.Errorf("no screenshot written at %s", path)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte(" | ")))
}

// signaled reports whether the process was killed by a signal (a crash).
func signaled(ee *exec.ExitError) bool {
	ws, ok := ee.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}
