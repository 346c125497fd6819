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
	for k := timeline.KindKernel; k.String() != fmt.Sprintf("kind(%d)", uint8(k)); k++ {
		m[k.String()] = k
	}
	return m
}()

func kindNames() []string {
	var out []string
	for k := timeline.KindKernel; ; k++ {
		if _, ok := kindByName[k.String()]; !ok {
			return out
		}
		out = append(out, k.String())
	}
}

// times reads START and an optional END (a time, or +DURATION) from f,
// returning how many fields it used. Times are relative to the origin.
func (d *decoder) times(f []string) (start, end int64, used int, err error) {
	if len(f) == 0 {
		return 0, 0, 0, fmt.Errorf("want a start time")
	}
	v, err := ParseTime(f[0])
	if err != nil {
		return 0, 0, 0, err
	}
	base, err := offset(d.origin, d.shift)
	if err != nil {
		return 0, 0, 0, err
	}
	if start, err = offset(base, v); err != nil {
		return 0, 0, 0, err
	}
	end, used = start, 1
	if len(f) > 1 && isTime(f[1]) {
		dur, isDur := strings.CutPrefix(f[1], "+")
		if isDur {
			base = start
		}
		if v, err = ParseTime(dur); err != nil {
			return 0, 0, 0, err
		}
		if end, err = offset(base, v); err != nil {
			return 0, 0, 0, err
		}
		used = 2
	}
	if end < start {
		return 0, 0, 0, fmt.Errorf("ends (%s) before it starts (%s)", FormatTime(end-base), FormatTime(start-base))
	}
	return start, end, used, nil
}

// offset is base + v, refused beyond ±timeline.MaxTime.
func offset(base, v int64) (int64, error) {
	lim := timeline.MaxTime
	if v > lim || v < -lim || base > lim || base < -lim || base+v > lim || base+v < -lim {
		return 0, fmt.Errorf("time %s beyond ±2^62 ns", FormatTime(v))
	}
	return base + v, nil
}

func isTime(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "+"), "-")
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// event reads `KIND TRACK START [END] ["NAME"] [key=value | flag]...`.
func (d *decoder) event(n int, k timeline.Kind, f []string) error {
	if len(f) < 2 {
		return fmt.Errorf("%s: want a track and a start time", k)
	}
	t, err := d.track(f[0])
	if err != nil {
		return err
	}
	if d.tracks[t].gpu != k.OnGPU() {
		return fmt.Errorf("%s on %s: %s events live on %s tracks", k, d.tracks[t], k, map[bool]string{true: "GPU", false: "host"}[k.OnGPU()])
	}
	p := pending{e: timeline.Event{Kind: k}, track: t}
	var used int
	if p.e.Start, p.e.End, used, err = d.times(f[1:]); err != nil {
		return err
	}
	if err := d.attrs(&p, f[1+used:], nil); err != nil {
		return err
	}
	if k == timeline.KindMarker && p.e.End != p.e.Start {
		return fmt.Errorf("marker with a duration")
	}
	if p.coll != nil {
		if k != timeline.KindKernel {
			return fmt.Errorf("%s with collective keys (coll, group, ranks, dtype, seq): only kernels are collectives", k)
		}
		p.coll.Bytes, p.e.Bytes = p.e.Bytes, 0 // a collective's bytes are its message's
	}
	d.add(n, p)
	return nil
}

func (d *decoder) add(n int, p pending) {
	d.maxCorr = max(d.maxCorr, p.e.Corr)
	d.events = append(d.events, p)
	d.spans[n] = append(d.spans[n], Span{Track: d.tracks[p.track].String(), Start: p.e.Start, End: p.e.End})
}

// attrs reads a name, key=value fields and flags into p. extra, when set,
// handles keys the caller knows (api= of launch and copy lines) first.
func (d *decoder) attrs(p *pending, f []string, extra func(k, v string) (bool, error)) error {
	e := &p.e
	named := false
	for _, x := range f {
		if IsQuoted(x) {
			if named {
				return fmt.Errorf("a second name %s", x)
			}
			s, err := unquote(x)
			if err != nil {
				return err
			}
			p.name, named = s, true
			continue
		}
		k, v, isKV := strings.Cut(x, "=")
		if !isKV {
			switch x {
			case "driver":
				e.Flags |= timeline.FlagDriver
			case "graph":
				e.Flags |= timeline.FlagGraph
			case "open":
				e.Flags |= timeline.FlagOpenEnd
			default:
				return fmt.Errorf("unknown flag %q (driver, graph, open)", x)
			}
			continue
		}
		if extra != nil {
			if ok, err := extra(k, v); ok || err != nil {
				if err != nil {
					return fmt.Errorf("%s: %w", k, err)
				}
				continue
			}
		}
		var err error
		coll := func() *timeline.Collective {
			if p.coll == nil {
				p.coll = &timeline.Collective{Seq: -1}
			}
			return p.coll
		}
		switch k {
		case "coll":
			coll().Op, err = unquote(v)
		case "group":
			coll().Group, err = unquote(v)
		case "dtype":
			coll().DType, err = unquote(v)
		case "ranks":
			coll().GroupSize, err = strconv.Atoi(v)
		case "seq":
			coll().Seq, err = strconv.ParseInt(v, 10, 64)
		case "corr":
			e.Corr, err = strconv.ParseInt(v, 10, 64)
		case "proc":
			var u uint64
			u, err = strconv.ParseUint(v, 10, 32)
			e.Proc = uint32(u)
		case "bytes":
			e.Bytes, err = ParseSize(v)
		case "dir":
			e.Copy, err = lookup[timeline.CopyKind](v)
		case "src":
			e.Src, err = lookup[timeline.MemKind](v)
		case "dst":
			e.Dst, err = lookup[timeline.MemKind](v)
		case "class":
			e.API, err = lookup[timeline.APIClass](v)
		case "kind":
			e.Range, err = lookup[timeline.RangeKind](v)
			p.rangeKind = true
		default:
			return fmt.Errorf("unknown key %q (corr, proc, bytes, dir, src, dst, class, kind, coll, group, ranks, dtype, seq)", k)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// lookup finds v among the names of an enum's values, which run from 0
// until String falls back to its "name(N)" form.
func lookup[T interface {
	~uint8
	String() string
}](v string) (T, error) {
	var all []string
	for i := 0; i < 256; i++ {
		s := T(i).String()
		if strings.HasSuffix(s, ")") {
			break
		}
		if s == v {
			return T(i), nil
		}
		all = append(all, s)
	}
	return 0, fmt.Errorf("unknown value %q (%s)", v, strings.Join(all, ", "))
}

// pair reads the two-event shorthands:
//
//	launch HOST START [END] STREAM START [END] "kernel" [api="cudaLaunchKernel"] [graph] [corr=N] [proc=N]
//	copy   HOST START [END] STREAM START [END] ["name"] dir=D src=M dst=M bytes=N [api="cudaMemcpyAsync"] [corr=N] [proc=N]
//
// an API call on the host thread and the GPU work it launched, linked by
// corr (a fresh id when not given).
func (d *decoder) pair(n int, f []string) error {
	verb := f[0]
	f = f[1:]
	if len(f) < 4 {
		return fmt.Errorf("%s: want HOST START [END] STREAM START [END] ...", verb)
	}
	h, err := d.track(f[0])
	if err != nil {
		return err
	}
	call := pending{e: timeline.Event{Kind: timeline.KindAPI}, track: h}
	var used int
	if call.e.Start, call.e.End, used, err = d.times(f[1:]); err != nil {
		return err
	}
	f = f[1+used:]
	if len(f) < 2 {
		return fmt.Errorf("%s: want a GPU stream and a start time after the host call", verb)
	}
	s, err := d.track(f[0])
	if err != nil {
		return err
	}
	if d.tracks[h].gpu || !d.tracks[s].gpu {
		return fmt.Errorf("%s: want a host thread, then a GPU stream", verb)
	}
	work := pending{e: timeline.Event{Kind: timeline.KindKernel}, track: s}
	call.name = "cudaLaunchKernel"
	if verb == "copy" {
		work.e.Kind = timeline.KindMemcpy
		call.name = "cudaMemcpyAsync"
	}
	if work.e.Start, work.e.End, used, err = d.times(f[1:]); err != nil {
		return err
	}
	err = d.attrs(&work, f[1+used:], func(k, v string) (bool, error) {
		if k != "api" {
			return false, nil
		}
		s, err := unquote(v)
		call.name = s
		return true, err
	})
	if err != nil {
		return err
	}
	if verb == "launch" && work.name == "" {
		return fmt.Errorf("launch: want the kernel's \"name\"")
	}
	if work.coll != nil {
		if verb != "launch" {
			return fmt.Errorf("copy with collective keys (coll, group, ranks, dtype, seq): only kernels are collectives")
		}
		work.coll.Bytes, work.e.Bytes = work.e.Bytes, 0
	}
	if verb == "copy" && work.name == "" {
		work.name = "Memcpy " + work.e.Copy.String()
	}
	call.e.Proc = work.e.Proc
	call.e.Corr = work.e.Corr
	if work.e.Flags&timeline.FlagDriver != 0 {
		call.e.Flags |= timeline.FlagDriver
		work.e.Flags &^= timeline.FlagDriver
	}
	if call.e.Corr == 0 {
		d.groups++
		call.auto, work.auto = d.groups, d.groups
	}
	d.add(n, call)
	d.add(n, work)
	return nil
}

// build adds everything to a timeline.Builder.
func (d *decoder) build() (*timeline.Timeline, error) {
	b := timeline.NewBuilder(d.src)
	for _, dev := range d.devices {
		b.AddDevice(dev)
	}
	ids := make([]timeline.TrackID, len(d.tracks))
	for i, k := range d.tracks {
		if k.gpu {
			ids[i] = b.GPUTrack(k.a, k.b)
		} else {
			ids[i] = b.HostTrack(k.a, k.b)
			if name, ok := d.names[i]; ok {
				b.SetThreadName(k.a, k.b, name)
			}
		}
	}
	var obs timeline.Observed
	for _, p := range d.events {
		e := p.e
		if p.auto > 0 {
			e.Corr = d.maxCorr + int64(p.auto)
		}
		e.Track = ids[p.track]
		e.Name = b.Intern(p.name)
		if e.Kind == timeline.KindRange && !p.rangeKind {
			e.Range = timeline.ClassifyRange(p.name, timeline.RangeNVTX)
		}
		derive(&obs, &e)
		if p.coll != nil {
			b.AddCollective(e, *p.coll)
			continue
		}
		b.Add(e)
	}
	b.Dist = d.dist
	b.Observed = obs
	if d.observed != nil {
		b.Observed = *d.observed
	}
	return b.Build()
}

// derive records in o what event e shows the input observed, for texts
// without an `observed` line.
func derive(o *timeline.Observed, e *timeline.Event) {
	switch e.Kind {
	case timeline.KindKernel, timeline.KindMemset:
		o.GPU = true
	case timeline.KindMemcpy:
		o.GPU = true
		o.MemoryKinds = o.MemoryKinds || e.Src != timeline.MemUnknown || e.Dst != timeline.MemUnknown
	case timeline.KindAPI:
		o.APICalls = true
	case timeline.KindOS:
		o.OSCalls, o.CanOSCalls = true, true
	case timeline.KindOp:
		o.HostOps = true
	case timeline.KindRange:
		switch e.Range {
		case timeline.RangeNVTX:
			o.NVTX, o.CanNVTX = true, true
		case timeline.RangeAnnotation:
			o.Annotations, o.CanAnnotations = true, true
		case timeline.RangeDataLoader:
			o.DataLoader, o.CanAnnotations = true, true
		}
	}
}
