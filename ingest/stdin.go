package ingest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/traceaudit/traceaudit/timeline"
)

// OpenReader reads a profile from r (standard input), named name in the
// timeline, errors and warnings. The bytes are spooled to a temporary file
// first (an SQLite export cannot be read as a stream; the format is
// detected from the first bytes as for files), which is removed before
// OpenReader returns.
func OpenReader(name string, r io.Reader, opts Options) (*timeline.Timeline, error) {
	f, err := os.CreateTemp("", "traceaudit-stdin-*")
	if err != nil {
		return nil, &Error{Path: name, Err: fmt.Errorf("spooling to a temporary file: %w", err)}
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, &Error{Path: name, Err: fmt.Errorf("reading: %w", err)}
	}
	if warn := opts.Warn; warn != nil {
		opts.Warn = func(msg string) { warn(strings.ReplaceAll(msg, tmp, name)) }
	}
	tl, err := Open(tmp, opts)
	if err != nil {
		var ie *Error
		if errors.As(err, &ie) {
			return nil, &Error{Path: name, Err: errors.New(strings.ReplaceAll(ie.Err.Error(), tmp, name)), Hint: strings.ReplaceAll(ie.Hint, tmp, name)}
		}
		return nil, &Error{Path: name, Err: err}
	}
	tl.Source.Path = name
	return tl, nil
}
