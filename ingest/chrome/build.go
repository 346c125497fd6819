package chrome

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/traceaudit/traceaudit/ingest/internal/merge"
	"github.com/traceaudit/traceaudit/internal/hugepage"
	"github.com/traceaudit/traceaudit/timeline"
)

// build merges the chunk results, in input order, into a timeline.
func (p *parser) build(src timeline.Source) (*timeline.Timeline, error) {
	base, err := p.baseTime()
	if err != nil {
		return nil, err
	}
	var s seen
	unknown := map[string]int{}
	total := 0
	var sizes map[int64]int64
	var colls map[int64]timeline.Collective
	for _, r := range p.results {
		s.merge(r.seen)
		total += len(r.events)
		for k, n := range r.unknown {
			unknown[k] += *n
		}
		for _, cs := range r.sizes {
			firstByCorr(&sizes, cs.corr, cs.size)
		}
		for _, cc := range r.colls {
			firstByCorr(&colls, cc.corr, cc.c)
		}
	}
	src.Format = Format
	src.Version = p.version(s)
	b := timeline.NewBuilder(src)
	if err := p.addDevices(b); err != nil {
		return nil, err
	}
	b.UseBuffer(hugepage.Make[timeline.Event](0, total))
	b.MakeInt32s = func(n int) []int32 { return hugepage.Make[int32](n, n) }
	b.FreeInt32s = func(s []int32) { hugepage.NewReleaser(s).Release(cap(s)) }
	// Names and tracks are declared chunk by chunk, in input order, so
	// their numbering does not depend on how the chunks were cut.
	hosts := map[[2]int64]bool{}
	runs := make([]run, 0, len(p.results))
	for _, r := range p.results {
		u := run{events: r.events}
		for _, n := range r.names {
			u.names = append(u.names, b.Intern(n))
		}
		for _, k := range r.tracks {
			if k.gpu {
				u.tracks = append(u.tracks, b.GPUTrack(k.a, k.b))
			} else {
				u.tracks = append(u.tracks, b.HostTrack(k.a, k.b))
				hosts[[2]int64{k.a, k.b}] = true
			}
		}
		for _, sh := range r.shapes {
			e := timeline.Event{Start: sh.start + base, End: sh.end + base, Track: u.tracks[sh.track], Name: u.names[sh.name]}
			b.AddShape(&e, sh.shape)
		}
		if len(u.events) > 0 {
			runs = append(runs, u)
		}
		r.events = nil
	}
	var addErr error
	evs := make([][]timeline.Event, len(runs))
	for i := range runs {
		evs[i] = runs[i].events
	}
	merge.Runs(evs, func(k int, e timeline.Event) {
		u := &runs[k]
		e.Name = u.names[e.Name]
		e.Track = u.tracks[e.Track]
		e.Start += base
		e.End += base
		if e.End > timeline.MaxTime || e.Start < -timeline.MaxTime {
			addErr = fmt.Errorf("chrome: baseTimeNanoseconds %d puts event times beyond 2^62 ns", base)
		}
		if e.Bytes == 0 && e.Corr != 0 && sizes != nil && (e.Kind == timeline.KindMemcpy || e.Kind == timeline.KindMemset) {
			e.Bytes = sizes[e.Corr]
		}
		if e.Kind == timeline.KindKernel && e.Corr != 0 && colls != nil {
			if c, ok := colls[e.Corr]; ok {
				b.AddCollective(e, c)
				return
			}
		}
		b.Add(e)
	})
	p.arena.free()
	if addErr != nil {
		return nil, addErr
	}
	p.nameThreads(b, hosts)
	b.Dist = p.distributed()
	b.Observed = timeline.Observed{
		GPU:         s.gpu,
		APICalls:    s.api,
		HostOps:     s.hostOps,
		Annotations: s.annotations,
		DataLoader:  s.dataLoader,
		MemoryKinds: s.memKinds,
		// The PyTorch profiler records its own annotations and DataLoader
		// spans, never OS runtime calls or NVTX.
		CanAnnotations: true,
	}
	if len(unknown) > 0 {
		b.Unread = unknown
	}
	p.warnUnknown(unknown)
	tl, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("chrome: %w", err)
	}
	return tl, nil
}

// run is one chunk's events, sorted by the worker, with the builder's
// numbers for its chunk-local names and tracks.
type run struct {
	events []timeline.Event
	names  []timeline.NameID
	tracks []timeline.TrackID
}

// baseTime reads baseTimeNanoseconds (an integer, or a string holding
// one); 0 when absent.
func (p *parser) baseTime() (int64, error) {
	raw := p.top["baseTimeNanoseconds"]
	if raw == nil {
		return 0, nil
	}
	v := gjson.ParseBytes(raw)
	var text []byte
	switch v.Type {
	case gjson.Number:
		text = raw
	case gjson.String:
		text = trimSpace([]byte(v.Str))
	case gjson.Null:
		return 0, nil
	default:
		return 0, fmt.Errorf("chrome: baseTimeNanoseconds: want an integer, got %s", jsonType(v))
	}
	n, ok := parseInt(text)
	if !ok {
		return 0, fmt.Errorf("chrome: baseTimeNanoseconds: want an integer, got %s", quoteText(text))
	}
	if n < 0 || n > timeline.MaxTime {
		return 0, fmt.Errorf("chrome: baseTimeNanoseconds: %d out of range", n)
	}
	return n, nil
}

// addDevices reads deviceProperties: [{"id", "name", "numSms",
// "totalGlobalMem", ...}].
func (p *parser) addDevices(b *timeline.Builder) error {
	raw := p.top["deviceProperties"]
	if raw == nil {
		return nil
	}
	v := gjson.ParseBytes(raw)
	if v.Type == gjson.Null {
		return nil
	}
	if !v.IsArray() {
		return fmt.Errorf("chrome: deviceProperties: want an array, got %s", jsonType(v))
	}
	if !gjson.ValidBytes(raw) {
		return fmt.Errorf("chrome: deviceProperties: invalid JSON")
	}
	var err error
	i := -1
	v.ForEach(func(_, d gjson.Result) bool {
		i++
		if !d.IsObject() {
			err = fmt.Errorf("chrome: deviceProperties[%d]: want an object, got %s", i, jsonType(d))
			return false
		}
		var dev timeline.Device
		num := func(key string) int64 {
			f := d.Get(key)
			if !f.Exists() || f.Type == gjson.Null || err != nil {
				return 0
			}
			n, ok := parseInt([]byte(f.Raw))
			if f.Type != gjson.Number || !ok {
				err = fmt.Errorf("chrome: deviceProperties[%d].%s: want an integer, got %s", i, key, quoteText([]byte(f.Raw)))
			}
			return n
		}
		dev.ID = num("id")
		dev.SMs = int(num("numSms"))
		dev.MemoryBytes = num("totalGlobalMem")
		if n := d.Get("name"); n.Type == gjson.String {
			dev.Name = n.Str
		}
		if err == nil && (dev.SMs < 0 || dev.MemoryBytes < 0) {
			err = fmt.Errorf("chrome: deviceProperties[%d]: negative size", i)
		}
		if err == nil {
			b.AddDevice(dev)
		}
		return err == nil
	})
	return err
}

// nameThreads names the host threads that have events. Kineto sometimes
// names a thread twice, once with the OS thread name and once with the
// process name ("pt_autograd_0" and "python3"), in either order; the name
// that differs from the process name wins, and otherwise the last one.
func (p *parser) nameThreads(b *timeline.Builder, hosts map[[2]int64]bool) {
	procs := map[int64]string{}
	names := map[[2]int64]string{}
	var order [][2]int64
	for _, r := range p.results {
		for _, t := range r.threads {
			if t.process {
				procs[t.pid] = t.name
			}
		}
	}
	for _, r := range p.results {
		for _, t := range r.threads {
			k := [2]int64{t.pid, t.tid}
			label, ok := threadLabel(t.name)
			if t.process || !ok || !hosts[k] {
				continue
			}
			old, seen := names[k]
			if !seen {
				order = append(order, k)
			}
			if !seen || old == procs[t.pid] || label != procs[t.pid] {
				names[k] = label
			}
		}
	}
	for _, k := range order {
		b.SetThreadName(k[0], k[1], names[k])
	}
}

// jsonType names the JSON type of a gjson result, for errors.
func jsonType(v gjson.Result) string {
	switch v.Type {
	case gjson.Null:
		return "null"
	case gjson.False, gjson.True:
		return "boolean"
	case gjson.Number:
		return "number"
	case gjson.String:
		return "string"
	}
	if v.IsArray() {
		return "array"
	}
	return "object"
}

// firstByCorr records v for correlation id corr in *m, making the map on
// first use, unless an earlier chunk already recorded one (the first wins).
func firstByCorr[V any](m *map[int64]V, corr int64, v V) {
	if *m == nil {
		*m = map[int64]V{}
	}
	if _, dup := (*m)[corr]; !dup {
		(*m)[corr] = v
	}
}
