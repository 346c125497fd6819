package ingest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// TestRegistry: the Formats after FormatUnknown have one entry each, with
// a name of their own that String gives.
func TestRegistry(t *testing.T) {
	if Format(len(formats)) < FormatNsysReport {
		t.Fatalf("%d entries: not every format is registered", len(formats))
	}
	names := map[string]bool{}
	for f := FormatUnknown + 1; f <= Format(len(formats)); f++ {
		n := 0
		for _, e := range formats {
			if e.format == f {
				n++
			}
		}
		if n != 1 || f.String() == "unknown" || names[f.String()] {
			t.Errorf("format %d (%s): %d entries", f, f, n)
		}
		names[f.String()] = true
	}
	if len(formats) != len(names) || FormatUnknown.String() != "unknown" || Format(len(formats)+1).String() != "unknown" {
		t.Errorf("%d entries for %d formats", len(formats), len(names))
	}
}

// TestDetect: the first bytes decide, in the registry's order; the name
// counts only for Nsight Systems reports.
func TestDetect(t *testing.T) {
	cases := []struct {
		path string
		head string
		want Format
	}{
		{"run.sqlite", "SQLite format 3\x00\x10\x00", FormatNsys},
		{"run.json", "SQLite format 3\x00", FormatNsys},
		{"run.json.gz", "\x1f\x8b\x08\x00", FormatChromeGzip},
		{"run.json", `{"traceEvents": []}`, FormatChrome},
		{"run.txt", "\xef\xbb\xbf \r\n\t[{}]", FormatChrome},
		{"run.nsys-rep", "\x00binary", FormatNsysReport},
		{"RUN.QDREP", "", FormatNsysReport},
		{"run.nsys-rep", "{}", FormatChrome},
		{"run.json", "42", FormatUnknown},
		{"run.sqlite", "SQLite format 2", FormatUnknown},
		{"notes.txt", "", FormatUnknown},
	}
	for _, c := range cases {
		if got := detectBytes(c.path, []byte(c.head)); got != c.want {
			t.Errorf("%s %q: %s, want %s", c.path, c.head, got, c.want)
		}
	}
}

// TestOpenDispatches: Open hands each format to its reader, through Detect
// on the file itself.
func TestOpenDispatches(t *testing.T) {
	dir := t.TempDir()
	gz, err := os.ReadFile(testfix.Project("b0_pageable_sync.pt.trace.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := plain.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	plainPath := filepath.Join(dir, "b0.json")
	if err := os.WriteFile(plainPath, plain.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path   string
		format Format
		source string
	}{
		{testfix.Project("m0_munmap.nsys.sqlite"), FormatNsys, "nsys-sqlite"},
		{testfix.Project("b0_pageable_sync.pt.trace.json.gz"), FormatChromeGzip, "chrome-trace"},
		{plainPath, FormatChrome, "chrome-trace"},
	}
	for _, c := range cases {
		if f, err := Detect(c.path); f != c.format || err != nil {
			t.Errorf("Detect(%s) = %s, %v; want %s", c.path, f, err, c.format)
		}
		tl, err := Open(c.path, Options{})
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		if tl.Source.Format != c.source || tl.Source.Path != c.path || len(tl.Events) == 0 {
			t.Errorf("%s: source %+v, %d events", c.path, tl.Source, len(tl.Events))
		}
	}

	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("a note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(notes, Options{})
	var ie *Error
	if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), notes+": not a recognised profile: expected") || ie.Hint != "" {
		t.Errorf("a text file: %v", err)
	}
}
