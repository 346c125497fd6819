package timelinetext

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/traceaudit/traceaudit/timeline"
)

// Span is where one event that a line declared lies: its track's label
// (without the thread name) and its time range in nanoseconds.
type Span struct {
	Track      string
	Start, End int64
}

// Error is a decoding error at a line of the text (1-based; 0 when it is
// about the whole timeline, such as a validation error).
type Error struct {
	Line int
	Err  error
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return "timelinetext: " + e.Err.Error()
	}
	return fmt.Sprintf("timelinetext: line %d: %v", e.Line, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Decode reads a timeline from text. Errors are *Error, naming the line.
func Decode(text []byte) (*timeline.Timeline, error) {
	tl, _, err := DecodeSpans(text)
	return tl, err
}

// DecodeSpans is Decode that also returns, for each line that declares
// events (by 1-based line number), where those events lie, so that a test
// can relate what an analyzer reports to the lines of its input.
func DecodeSpans(text []byte) (*timeline.Timeline, map[int][]Span, error) {
	d := &decoder{trackIdx: map[trackKey]int{}, spans: map[int][]Span{}, src: timeline.Source{Format: "text"}}
	var recs []record
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, 1<<24)
	line := 0
	for sc.Scan() {
		line++
		content, _ := SplitComment(sc.Text())
		f, err := Fields(content)
		if err != nil {
			return nil, nil, &Error{Line: line, Err: err}
		}
		if len(f) > 0 {
			recs = append(recs, record{line, f})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, &Error{Line: line + 1, Err: err}
	}
	if _, _, err := d.run(recs, 0); err != nil {
		return nil, nil, err
	}
	tl, err := d.build()
	if err != nil {
		return nil, nil, &Error{Err: err}
	}
	return tl, d.spans, nil
}

// record is one non-blank line's fields.
type record struct {
	line   int
	fields []string
}

// maxRepeated bounds the lines that repeat blocks expand to (a variable
// for tests).
var maxRepeated = 1 << 20

// run decodes recs until the "end" that closes this depth, and returns what
// follows it and whether it was found. repeat blocks run their lines N times, shifting times by EVERY
// each time:
//
//	repeat 4 10ms
//	range host/1/1 0 +10ms "step"
//	end
func (d *decoder) run(recs []record, depth int) (rest []record, closed bool, err error) {
	for len(recs) > 0 {
		r := recs[0]
		recs = recs[1:]
		switch r.fields[0] {
		case "end":
			if len(r.fields) != 1 || depth == 0 {
				return nil, false, &Error{Line: r.line, Err: fmt.Errorf("end without repeat, or with arguments")}
			}
			return recs, true, nil
		case "repeat":
			n, every, err := d.repeatArgs(r.fields[1:])
			if err != nil {
				return nil, false, &Error{Line: r.line, Err: err}
			}
			shift := d.shift
			for i := range max(n, 1) {
				// Once with n == 0, to find the end of the block.
				d.shift = shift + int64(i)*every
				if n == 0 {
					d.skip++
				}
				if rest, closed, err = d.run(recs, depth+1); err != nil {
					return nil, false, err
				}
				if n == 0 {
					d.skip--
				}
				if !closed {
					return nil, false, &Error{Line: r.line, Err: fmt.Errorf("repeat without end")}
				}
			}
			d.shift = shift
			recs = rest
		default:
			if d.skip > 0 {
				continue
			}
			if depth > 0 {
				if d.lines++; d.lines > maxRepeated {
					return nil, false, &Error{Line: r.line, Err: fmt.Errorf("repeat blocks expand to more than %d lines", maxRepeated)}
				}
			}
			if err := d.line(r.line, r.fields, depth); err != nil {
				return nil, false, &Error{Line: r.line, Err: err}
			}
		}
	}
	return nil, false, nil
}

func (d *decoder) repeatArgs(f []string) (int, int64, error) {
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("repeat: want a count and a period: repeat 4 10ms")
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 0 || n > maxRepeated {
		return 0, 0, fmt.Errorf("repeat: bad count %q", f[0])
	}
	every, err := ParseTime(f[1])
	if err == nil && (every < 0 || every > timeline.MaxTime/int64(max(n, 1))) {
		err = fmt.Errorf("period out of range")
	}
	if err != nil {
		return 0, 0, fmt.Errorf("repeat: %w", err)
	}
	return n, every, nil
}

// trackKey is a track as the text names it.
type trackKey struct {
	gpu  bool
	a, b int64
}

func (k trackKey) String() string {
	if k.gpu {
		return fmt.Sprintf("gpu%d/stream%d", k.a, k.b)
	}
	return fmt.Sprintf("host/%d/%d", k.a, k.b)
}

// parseTrack reads "host/PID/TID" or "gpuDEV/streamID".
func parseTrack(s string) (trackKey, bool) {
	var k trackKey
	var x, y string
	var ok bool
	if rest, isHost := strings.CutPrefix(s, "host/"); isHost {
		x, y, ok = strings.Cut(rest, "/")
	} else if rest, isGPU := strings.CutPrefix(s, "gpu"); isGPU {
		k.gpu = true
		x, y, ok = strings.Cut(rest, "/stream")
	}
	if !ok {
		return k, false
	}
	var err1, err2 error
	k.a, err1 = strconv.ParseInt(x, 10, 64)
	k.b, err2 = strconv.ParseInt(y, 10, 64)
	return k, err1 == nil && err2 == nil
}

// pending is a parsed event, added to the builder once the whole text is
// read (auto correlation ids need the largest explicit one).
type pending struct {
	e         timeline.Event
	coll      *timeline.Collective // a kernel's collective (coll=, group=, ranks=, dtype=, seq=)
	name      string
	track     int
	rangeKind bool // Range was given (kind=)
	auto      int  // shared by the two events of a launch or copy line without corr=: 1-based group
}

type decoder struct {
	dist     timeline.Distributed
	src      timeline.Source
	observed *timeline.Observed
	origin   int64
	devices  []timeline.Device
	tracks   []trackKey
	names    map[int]string // thread names by track
	trackIdx map[trackKey]int
	events   []pending
	groups   int
	maxCorr  int64
	spans    map[int][]Span
	seenSrc  bool
	// shift moves the times of lines inside repeat blocks; skip > 0 while
	// a block of count 0 is read; lines counts the lines repeated.
	shift       int64
	skip, lines int
}

func (d *decoder) track(s string) (int, error) {
	k, ok := parseTrack(s)
	if !ok {
		return 0, fmt.Errorf("bad track %q: want host/PID/TID or gpuDEV/streamID", s)
	}
	i, ok := d.trackIdx[k]
	if !ok {
		i = len(d.tracks)
		d.tracks = append(d.tracks, k)
		d.trackIdx[k] = i
	}
	return i, nil
}

func (d *decoder) line(n int, f []string, depth int) error {
	switch f[0] {
	case "source", "origin", "observed", "device", "track", "dist":
		if depth > 0 {
			return fmt.Errorf("%s inside a repeat block", f[0])
		}
	}
	switch f[0] {
	case "source":
		return d.source(f[1:])
	case "origin":
		if len(f) != 2 {
			return fmt.Errorf("origin: want one time")
		}
		t, err := ParseTime(f[1])
		if err == nil {
			d.origin, err = offset(0, t)
		}
		return err
	case "observed":
		return d.observedLine(f[1:])
	case "device":
		return d.device(f[1:])
	case "track":
		return d.trackLine(f[1:])
	case "dist":
		return d.distLine(f[1:])
	case "launch", "copy":
		return d.pair(n, f)
	}
	k, ok := kindByName[f[0]]
	if !ok {
		return fmt.Errorf("unknown line %q: want an event kind (%s), launch, copy, or a directive (source, origin, observed, device, track, dist, repeat, end)", f[0], strings.Join(kindNames(), ", "))
	}
	return d.event(n, k, f[1:])
}

// distLine reads `dist rank=N [world=N] [backend="nccl"]`.
func (d *decoder) distLine(f []string) error {
	if d.dist.Known {
		return fmt.Errorf("a second dist line")
	}
	d.dist.Known = true
	seenRank := false
	for _, kv := range f {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("dist: want key=value, got %q", kv)
		}
		var err error
		switch k {
		case "rank":
			d.dist.Rank, err = strconv.Atoi(v)
			seenRank = true
		case "world":
			d.dist.WorldSize, err = strconv.Atoi(v)
		case "backend":
			d.dist.Backend, err = unquote(v)
		default:
			return fmt.Errorf("dist: unknown key %q (rank, world, backend)", k)
		}
		if err != nil {
			return fmt.Errorf("dist %s: %w", k, err)
		}
	}
	if !seenRank {
		return fmt.Errorf("dist: want rank=N")
	}
	return nil
}

func (d *decoder) source(f []string) error {
	if d.seenSrc {
		return fmt.Errorf("a second source line")
	}
	d.seenSrc = true
	for _, kv := range f {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("source: want key=\"value\", got %q", kv)
		}
		s, err := unquote(v)
		if err != nil {
			return fmt.Errorf("source %s: %w", k, err)
		}
		switch k {
		case "path":
			d.src.Path = s
		case "format":
			d.src.Format = s
		case "version":
			d.src.Version = s
		default:
			return fmt.Errorf("source: unknown key %q (path, format, version)", k)
		}
	}
	return nil
}

// observedWords name the Observed fields in `observed` lines.
var observedWords = []struct {
	word string
	get  func(*timeline.Observed) *bool
}{
	{"gpu", func(o *timeline.Observed) *bool { return &o.GPU }},
	{"api", func(o *timeline.Observed) *bool { return &o.APICalls }},
	{"os", func(o *timeline.Observed) *bool { return &o.OSCalls }},
	{"nvtx", func(o *timeline.Observed) *bool { return &o.NVTX }},
	{"ops", func(o *timeline.Observed) *bool { return &o.HostOps }},
	{"annotations", func(o *timeline.Observed) *bool { return &o.Annotations }},
	{"dataloader", func(o *timeline.Observed) *bool { return &o.DataLoader }},
	{"memkinds", func(o *timeline.Observed) *bool { return &o.MemoryKinds }},
	{"can-os", func(o *timeline.Observed) *bool { return &o.CanOSCalls }},
	{"can-nvtx", func(o *timeline.Observed) *bool { return &o.CanNVTX }},
	{"can-annotations", func(o *timeline.Observed) *bool { return &o.CanAnnotations }},
}

func (d *decoder) observedLine(f []string) error {
	if d.observed != nil {
		return fmt.Errorf("a second observed line")
	}
	d.observed = &timeline.Observed{}
next:
	for _, w := range f {
		for _, o := range observedWords {
			if o.word == w {
				*o.get(d.observed) = true
				continue next
			}
		}
		var all []string
		for _, o := range observedWords {
			all = append(all, o.word)
		}
		return fmt.Errorf("observed: unknown word %q (%s)", w, strings.Join(all, ", "))
	}
	return nil
}

func (d *decoder) device(f []string) error {
	if len(f) == 0 {
		return fmt.Errorf("device: want an id")
	}
	id, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return fmt.Errorf("device: bad id %q", f[0])
	}
	dev := timeline.Device{ID: id}
	for _, x := range f[1:] {
		if IsQuoted(x) {
			if dev.Name, err = unquote(x); err != nil {
				return err
			}
			continue
		}
		k, v, _ := strings.Cut(x, "=")
		switch k {
		case "sms":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return fmt.Errorf("device: bad sms %q", v)
			}
			dev.SMs = int(n)
		case "mem":
			if dev.MemoryBytes, err = ParseSize(v); err != nil {
				return fmt.Errorf("device mem: %w", err)
			}
		default:
			return fmt.Errorf("device: unknown field %q (\"name\", sms=N, mem=SIZE)", x)
		}
	}
	d.devices = append(d.devices, dev)
	return nil
}

func (d *decoder) trackLine(f []string) error {
	if len(f) == 0 || len(f) > 2 {
		return fmt.Errorf("track: want a track and, for a host thread, an optional \"name\"")
	}
	t, err := d.track(f[0])
	if err != nil {
		return err
	}
	if len(f) == 2 {
		if d.tracks[t].gpu {
			return fmt.Errorf("track: GPU tracks have no name")
		}
		name, err := unquote(f[1])
		if err != nil {
			return err
		}
		if d.names == nil {
			d.names = map[int]string{}
		}
		d.names[t] = name
	}
	return nil
}

var kindByName = func() map[string]timeline.Kind {
	m := map[string]timeline.Kind{}
	for k := timeline.KindKernel; k < timeline.NumKinds; k++ {
		m[k.String()] = k
	}
	return m
}()

func kindNames() []string {
	var out []string
	for k := timeline.KindKernel; k < timeline.NumKinds; k++ {
		out = append(out, k.String())
	}
	return out
}
