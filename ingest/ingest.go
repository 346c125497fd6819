// Package ingest opens a profile and hands it to the reader for its format:
// Nsight Systems SQLite exports to ingest/nsys, PyTorch profiler Chrome
// traces (plain or gzip-compressed) to ingest/chrome. The format is detected
// from the file's first bytes, not from its name; the name only serves to
// recognise Nsight Systems report files that must be exported first. Each
// format is one entry of a registry (formats.go): how it is detected, and
// its reader, of one signature for all.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/traceaudit/traceaudit/ingest/chrome"
	"github.com/traceaudit/traceaudit/ingest/nsys"
	"github.com/traceaudit/traceaudit/ingest/nsysrep"
	"github.com/traceaudit/traceaudit/internal/sysmem"
	"github.com/traceaudit/traceaudit/timeline"
)

// Options control reading.
type Options struct {
	// Progress, if set, is called now and then with the work done and the
	// work in all (bytes of input, or rows for nsys exports; total may be
	// -1 where unknown).
	Progress func(done, total int64)
	// Warn, if set, receives non-fatal problems such as a truncated trace.
	Warn func(msg string)
	// Stage, if set, is called when reading enters a new stage that
	// Progress then reports ("exporting run.nsys-rep with nsys").
	Stage func(label string)
	// Note, if set, receives messages the user should see that are not
	// warnings (an export written beside their report).
	Note func(msg string)
	// Context cancels long work (an nsys export); nil: never.
	Context context.Context
	// NsysCacheDir overrides where exports of .nsys-rep reports go when
	// the report's folder cannot take them (tests).
	NsysCacheDir string
	// MemoryLimit is the memory, in bytes, the timeline may use; inputs
	// with more events than fit are refused before they exhaust it. 0: the
	// TRACEAUDIT_MEMORY_LIMIT environment variable if set, else the memory
	// available (MemAvailable, or the cgroup limit).
	MemoryLimit int64
	// Shapes asks for operators' input shapes where the trace records them
	// (Timeline.Shapes; PyTorch profiler traces made with record_shapes).
	Shapes bool
}

// BytesPerEvent is the memory budget of one event while reading and
// building a timeline (the event itself, its index entries, sort and
// growth slack).
const BytesPerEvent = 128

// maxEvents is how many events fit in the memory limit (0: no limit known).
func (o Options) maxEvents() int64 {
	lim := o.MemoryLimit
	if lim <= 0 {
		if v, err := strconv.ParseInt(os.Getenv("TRACEAUDIT_MEMORY_LIMIT"), 10, 64); err == nil && v > 0 {
			lim = v
		} else {
			lim = sysmem.Available()
		}
	}
	return lim / BytesPerEvent
}

// Error is an input problem: the file, what is wrong, and, where there is
// something the user can do, what to do.
type Error struct {
	Path string
	Err  error
	// Hint is the action to take ("" when there is none).
	Hint string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s: %v", e.Path, e.Err)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Detect reads the start of path and says which format it is.
func Detect(path string) (Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return FormatUnknown, err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return FormatUnknown, err
	}
	return detectBytes(path, head[:n]), nil
}

// Open reads the profile at path into a validated timeline. Every error it
// returns is an *Error naming the file; every warning names it too.
func Open(path string, opts Options) (*timeline.Timeline, error) {
	if warn := opts.Warn; warn != nil {
		opts.Warn = func(msg string) {
			if !strings.HasPrefix(msg, path+": ") {
				msg = path + ": " + msg
			}
			warn(msg)
		}
	}
	tl, err := open(path, opts)
	if err != nil {
		var ie *Error
		if errors.As(err, &ie) {
			return nil, err
		}
		return nil, &Error{Path: path, Err: err}
	}
	return tl, nil
}

func open(path string, opts Options) (*timeline.Timeline, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &Error{Path: path, Err: errors.New("no such file")}
	case errors.Is(err, fs.ErrPermission):
		return nil, &Error{Path: path, Err: errors.New("permission denied")}
	case err != nil:
		return nil, err
	case st.IsDir():
		return nil, &Error{Path: path, Err: errors.New("is a directory, not a trace file")}
	case st.Size() == 0:
		return nil, &Error{Path: path, Err: errors.New("empty file")}
	}
	format, err := Detect(path)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, &Error{Path: path, Err: errors.New("permission denied")}
		}
		return nil, err
	}
	if f := lookup(format); f != nil {
		return f.read(path, st.Size(), opts)
	}
	return nil, &Error{Path: path,
		Err: errors.New("not a recognised profile: expected an Nsight Systems SQLite export or a PyTorch profiler Chrome trace (.json or .json.gz)")}
}

// openReport exports an Nsight Systems report with nsys (or reuses an
// earlier export) and reads the export; without nsys it says how to
// export.
func openReport(path string, _ int64, opts Options) (*timeline.Timeline, error) {
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if opts.Stage != nil {
		opts.Stage("exporting " + path + " with nsys")
	}
	var tick func()
	if opts.Progress != nil {
		tick = func() { opts.Progress(0, 0) }
	}
	export, err := nsysrep.Export(ctx, path, nsysrep.Options{Tick: tick, Note: opts.Note, CacheDir: opts.NsysCacheDir})
	if errors.Is(err, nsysrep.ErrNoNsys) {
		out := strings.TrimSuffix(path, filepath.Ext(path)) + ".sqlite"
		return nil, &Error{Path: path,
			Err:  errors.New("an Nsight Systems report, not an SQLite export, and nsys is not on PATH"),
			Hint: fmt.Sprintf("export it first: nsys export --type sqlite -o %s %s", out, path)}
	}
	if err != nil {
		return nil, &Error{Path: path, Err: err}
	}
	if opts.Stage != nil {
		opts.Stage("reading " + path)
	}
	tl, err := nsys.ReadFile(export, nsys.Options{Progress: opts.Progress, Warn: opts.Warn, MaxEvents: opts.maxEvents()})
	if errors.Is(err, nsys.ErrTooLarge) {
		return nil, tooLarge(path, err)
	}
	if err != nil {
		return nil, &Error{Path: path, Err: fmt.Errorf("its export %s: %w", export, err)}
	}
	tl.Source.Path = path
	return tl, nil
}

// tooLarge turns a reader's too-large error into an Error with advice.
func tooLarge(path string, err error) error {
	if errors.Is(err, nsys.ErrTooLarge) || errors.Is(err, chrome.ErrTooLarge) {
		return &Error{Path: path, Err: err,
			Hint: "capture fewer steps (a profiler schedule with fewer active steps, or nsys --duration), or run on a machine with more memory; TRACEAUDIT_MEMORY_LIMIT sets the limit in bytes"}
	}
	return err
}

// openChrome streams a Chrome trace, decompressing gzip on its own goroutine
// (gunzip.go) so that decompression and parsing overlap.
func openChrome(path string, size int64, gz bool, opts Options) (*timeline.Timeline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src := timeline.Source{Path: path, Format: "chrome-trace"}
	copts := chrome.Options{Progress: opts.Progress, Warn: opts.Warn, MaxEvents: opts.maxEvents(), Shapes: opts.Shapes}
	if !gz {
		copts.Size = size
		return chrome.Parse(f, src, copts)
	}
	zr, err := newGunzip(f)
	if err != nil {
		return nil, err
	}
	if opts.Progress != nil {
		// Report progress in compressed bytes, whose total is known.
		copts.Progress = func(int64, int64) { opts.Progress(zr.counted.n.Load(), size) }
	}
	// The parser's warnings wait for the decompressor's verdict: a cut
	// gzip stream and the JSON it cut short are one truncation, one line.
	var warns []string
	copts.Warn = func(msg string) { warns = append(warns, msg) }
	tl, err := chrome.Parse(zr, src, copts)
	lost := zr.Close() // stops the decompressor if the parser quit early
	if err != nil {
		if lost != nil {
			return nil, fmt.Errorf("gzip stream truncated (%v) and no usable events before the cut: %w", lost, err)
		}
		return nil, err
	}
	at := zr.counted.n.Load()
	merged := false
	for _, msg := range warns {
		if rest, ok := strings.CutPrefix(msg, "truncated: "); ok && lost != nil {
			msg, merged = fmt.Sprintf("truncated (the gzip stream ends after %d compressed bytes): %s", at, rest), true
		}
		if opts.Warn != nil {
			opts.Warn(msg)
		}
	}
	if lost != nil && !merged && opts.Warn != nil {
		opts.Warn(fmt.Sprintf("%s: the gzip stream is truncated after %d compressed bytes; events after the cut are lost", path, at))
	}
	return tl, nil
}
