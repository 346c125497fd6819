package ingest

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/ingest/nsys"
	"github.com/traceaudit/traceaudit/timeline"
)

// Format is a recognised input format.
type Format int

// Formats. Each has one entry in the registry, formats.
const (
	FormatUnknown Format = iota
	// FormatNsys is an Nsight Systems SQLite export.
	FormatNsys
	// FormatChrome is a Chrome trace (JSON).
	FormatChrome
	// FormatChromeGzip is a gzip-compressed Chrome trace.
	FormatChromeGzip
	// FormatNsysReport is an Nsight Systems report (.nsys-rep, .qdrep),
	// which must be exported to SQLite first.
	FormatNsysReport
)

// readFunc is the one signature of every format's reader: it reads the
// file at path, size bytes long (neither missing, empty nor a folder:
// Open checked), into a validated timeline. Its errors may leave out the
// path (Open adds it); a too-large input is an *Error with advice
// (tooLarge).
type readFunc func(path string, size int64, opts Options) (*timeline.Timeline, error)

// format is one entry of the registry: the format, its name, how the
// file's first bytes (up to 512; or, failing those, its name) show it,
// and its reader.
type format struct {
	format Format
	name   string
	detect func(path string, head []byte) bool
	read   readFunc
}

// formats is the registry of input formats, in detection order: a file
// is of the first format whose detect holds. Adding a format is adding an
// entry (and its Format constant).
var formats = []format{
	{FormatNsys, timeline.FormatNsys, prefix(sqliteMagic), readNsys},
	{FormatChromeGzip, "chrome-trace (gzip)", prefix(gzipMagic), readChromeGzip},
	{FormatChrome, "chrome-trace", jsonStart, readChrome},
	{FormatNsysReport, "nsys-report", extension(".nsys-rep", ".qdrep"), openReport},
}

var (
	sqliteMagic = []byte("SQLite format 3\x00")
	gzipMagic   = []byte{0x1f, 0x8b}
)

// prefix detects a format by the magic bytes its files start with.
func prefix(magic []byte) func(string, []byte) bool {
	return func(_ string, head []byte) bool { return bytes.HasPrefix(head, magic) }
}

// jsonStart detects JSON: '{' or '[' after an optional byte-order mark and
// white space.
func jsonStart(_ string, head []byte) bool {
	t := bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// extension detects a format by the file name's extension, for files whose
// bytes tell nothing traceaudit reads.
func extension(exts ...string) func(string, []byte) bool {
	return func(path string, _ []byte) bool { return slices.Contains(exts, strings.ToLower(filepath.Ext(path))) }
}

// lookup is f's registry entry (nil for FormatUnknown).
func lookup(f Format) *format {
	for i := range formats {
		if formats[i].format == f {
			return &formats[i]
		}
	}
	return nil
}

func (f Format) String() string {
	if e := lookup(f); e != nil {
		return e.name
	}
	return "unknown"
}

func detectBytes(path string, head []byte) Format {
	for _, e := range formats {
		if e.detect(path, head) {
			return e.format
		}
	}
	return FormatUnknown
}

// readNsys reads an Nsight Systems SQLite export.
func readNsys(path string, _ int64, opts Options) (*timeline.Timeline, error) {
	tl, err := nsys.ReadFile(path, nsys.Options{Progress: opts.Progress, Warn: opts.Warn, MaxEvents: opts.maxEvents()})
	return tl, tooLarge(path, err)
}

// readChrome reads an uncompressed Chrome trace.
func readChrome(path string, size int64, opts Options) (*timeline.Timeline, error) {
	tl, err := openChrome(path, size, false, opts)
	return tl, tooLarge(path, err)
}

// readChromeGzip reads a gzip-compressed Chrome trace.
func readChromeGzip(path string, size int64, opts Options) (*timeline.Timeline, error) {
	tl, err := openChrome(path, size, true, opts)
	return tl, tooLarge(path, err)
}
