package timelinetext

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/traceaudit/traceaudit/timeline"
)

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
	if err := finishColl(&p, k.String()); err != nil {
		return err
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
	if err := finishColl(&work, verb); err != nil {
		return err
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

// finishColl checks that only a kernel carries collective keys (what names
// the line in the error) and moves the event's bytes to the collective's
// message size.
func finishColl(p *pending, what string) error {
	if p.coll == nil {
		return nil
	}
	if p.e.Kind != timeline.KindKernel {
		return fmt.Errorf("%s with collective keys (coll, group, ranks, dtype, seq): only kernels are collectives", what)
	}
	p.coll.Bytes, p.e.Bytes = p.e.Bytes, 0 // a collective's bytes are its message's
	return nil
}
