// Package chrome reads PyTorch profiler (Kineto) Chrome traces into a
// timeline.Timeline.
//
// Formats handled, all as uncompressed JSON (package ingest un-gzips):
//   - a JSON object with "traceEvents" (every Kineto version), or a bare
//     JSON array of events;
//   - 2021 Kineto: categories Operator, Runtime, Kernel, Memcpy, Memset;
//     string tids ("stream 7", "1890023232"); lowercase "external id";
//     [memory] instants without a category;
//   - 2022-2023: cpu_op, user_annotation, cuda_runtime, cuda_driver, kernel,
//     gpu_memcpy, gpu_memset, cuda_sync, python_function; integer tids;
//     integer microsecond timestamps since the Unix epoch;
//   - 2024 on: timestamps with nanosecond fractions ("5081063989749.483"),
//     relative to "baseTimeNanoseconds", which may come before or after
//     traceEvents; files without metadata (M) events;
//   - ROCm traces: HIP calls under cuda_runtime, "Memcpy HtoD (Host ->
//     Device)" copies (memory kind timeline.MemHost), copy sizes taken from
//     the HIP call's "size" argument.
//
// Parse streams: it never holds the whole input, and never decodes events
// into maps. The top level of the trace is tokenized as it arrives; the
// traceEvents array is read in chunks of about 2 MB that workers (one per
// GOMAXPROCS) parse in parallel, each in one pass: a small lexer finds the
// members of each event and their raw text, and timestamps and ids are
// converted from that text. Chunks are cut where an event seems to start,
// checked in input order against the end of the chunk before, and parsed
// again where the cut was wrong, so the result does not depend on where the
// input was cut or which worker finished first. gjson reads the few small
// top-level values (deviceProperties, baseTimeNanoseconds) and unescapes
// strings. Timestamps become int64 nanoseconds exactly, never via float64.
//
// Device and host events are told apart by category, never by pid: in some
// traces pid 0 is both GPU 0 and a host process.
package chrome

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// Format is the Source.Format of timelines read by this package.
const Format = "chrome-trace"

// Options tunes Parse. The zero value is valid.
type Options struct {
	// Progress, if set, is called from the goroutine that called Parse
	// about every 8 MB of input, with the bytes read so far and the total
	// (Size, or -1 when unknown).
	Progress func(done, total int64)
	// Warn, if set, receives non-fatal problems in plain words: a
	// truncated input (the message starts with ErrTruncated's text), or
	// events of categories Parse does not read.
	Warn func(msg string)
	// Size is the input's size in bytes when known, else 0. It is passed
	// to Progress and sizes the first read buffer.
	Size int64
	// MaxEvents, when above 0, stops reading with ErrTooLarge once the
	// trace holds more events than this: the caller derives it from the
	// memory available, so that a trace too large for the machine fails
	// with a clear error instead of exhausting memory.
	MaxEvents int64
	// Shapes asks for the operators' input shapes (record_shapes=True
	// writes them as "Input Dims") in Timeline.Shapes. Off by default: it
	// costs a scan of every operator's arguments.
	Shapes bool

	bufSize int // read buffer size; 0: defaultBufSize (tests shrink it)
}

// ErrTruncated is the text that starts the Warn message for an input that
// ends inside (or after) traceEvents, as the file of a job killed mid-write
// does. Such input is not an error: Parse keeps every complete event.
var ErrTruncated = errors.New("truncated")

// ErrTooLarge is returned (wrapped) when a trace has more events than
// Options.MaxEvents.
var ErrTooLarge = errors.New("too large for the memory available")

// Parse reads an uncompressed Chrome trace from r and returns its
// validated timeline. src is recorded as the timeline's Source, with
// Format set to "chrome-trace" and Version to the Kineto era the file's
// layout suggests ("kineto-2021", "kineto-2022", "kineto-2024",
// "kineto-2025"; "" when there is nothing to tell).
//
// Errors name the JSON path or the byte offset of the problem, as in
// "chrome: traceEvents[17].dur: negative duration -3".
func Parse(r io.Reader, src timeline.Source, opts Options) (*timeline.Timeline, error) {
	p := &parser{
		in:          newInput(r, opts.Size, opts.bufSize, opts.Progress),
		opts:        opts,
		top:         map[string][]byte{},
		maxInFlight: 2*runtime.GOMAXPROCS(0) + 2,
	}
	err := p.parseTop()
	p.finish()
	p.in.release()
	switch {
	case err == nil:
	case err == errEOF || err == errNUL:
		if !p.sawEvents {
			if err == errNUL {
				return nil, fmt.Errorf("chrome: NUL byte at byte %d, before traceEvents", p.in.offset(p.in.pos))
			}
			return nil, fmt.Errorf("chrome: unexpected end of input at byte %d, before traceEvents", p.in.offset(p.in.end))
		}
		p.truncated(err == errNUL)
	default:
		return nil, err
	}
	if opts.Progress != nil {
		opts.Progress(p.in.offset(p.in.end), p.in.total)
	}
	return p.build(src)
}

// parser holds the state of one Parse call.
type parser struct {
	in          *input
	opts        Options
	scan        valueScan
	prefix      string            // JSON path of the events array: "traceEvents", or "" for a bare array
	sawEvents   bool              // the events array has begun
	closed      bool              // the events array has ended
	top         map[string][]byte // captured top-level values
	runtimeKeys bool              // cupti_version & co. are present (2025 on)

	// Chunks in flight, and the state of the accepted text.
	fifo        []*chunk // dispatched and not yet accepted, in input order
	maxInFlight int
	jobs        chan *chunk
	wg          sync.WaitGroup
	started     bool
	main        *worker // parses lone chunks and re-parses, on this goroutine
	arena       arena   // holds the workers' sorted events

	results    []*chunkResult // accepted chunks, in input order
	nEvents    int            // accepted elements of the events array
	endState   elemState      // state at the end of the accepted text
	acceptedTo int64          // input offset where the accepted text ends
	lastGood   int64          // input offset just after the last complete element
	carry      []byte         // an element cut by a wrong chunk boundary, to parse again
	carryState elemState      // state at the start of carry
	carryAt    int64          // input offset of carry
}

// chunk is a run of the events array's text, data[lo:hi], and what a
// worker made of it.
type chunk struct {
	data   []byte
	lo, hi int
	base   int64     // input offset of data[0]
	start  elemState // assumed state at lo
	final  bool      // the input ends at hi
	done   chan struct{}
	res    chunkResult
}

// truncated warns about an input that ended early: at its end, or at a
// NUL byte (nul), after which the rest is read and counted as lost.
func (p *parser) truncated(nul bool) {
	in := p.in
	total := in.offset(in.end)
	if nul {
		total += in.drainRest()
	}
	lost := total - p.lastGood
	if p.opts.Warn == nil {
		return
	}
	if p.closed {
		p.opts.Warn(fmt.Sprintf("%v after traceEvents: kept all %s events, lost the last %s bytes (top-level keys there, such as baseTimeNanoseconds, may be missing)",
			ErrTruncated, units.Count64(int64(p.nEvents)), units.Count64(lost)))
		return
	}
	p.opts.Warn(fmt.Sprintf("%v: kept %s complete events, lost the last %s bytes", ErrTruncated, units.Count64(int64(p.nEvents)), units.Count64(lost)))
}

// warnUnknown reports events skipped for their category, most frequent first.
func (p *parser) warnUnknown(counts map[string]int) {
	if p.opts.Warn == nil || len(counts) == 0 {
		return
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	list := units.TopCounts(counts, 5, func(name string, n int) string {
		if name == "" {
			name = "(none)"
		}
		return fmt.Sprintf("%q x%d", name, n)
	})
	p.opts.Warn(fmt.Sprintf("skipped %s events of categories traceaudit does not read: %s", units.Count64(int64(total)), list))
}
