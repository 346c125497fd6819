package timelinetext

import (
	"bufio"
	"io"
	"strconv"
	"strings"

	"github.com/traceaudit/traceaudit/timeline"
)

// Encode writes tl as text that Decode reads back into an equal timeline:
// the source, what the input observed, the devices, the tracks in their
// order, an origin (the first event's start, so that the times that follow
// are short), then one line per event in timeline order. Fields at their
// zero or derived value (an API class that the name implies, a range kind
// that the name implies) are left out.
func Encode(w io.Writer, tl *timeline.Timeline) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var line []byte
	put := func(parts ...string) {
		line = line[:0]
		for i, p := range parts {
			if p == "" {
				continue
			}
			if i > 0 {
				line = append(line, ' ')
			}
			line = append(line, p...)
		}
		line = append(line, '\n')
		bw.Write(line)
	}
	src := tl.Source
	var sf []string
	for _, kv := range [][2]string{{"path", src.Path}, {"format", src.Format}, {"version", src.Version}} {
		if kv[1] != "" {
			sf = append(sf, kv[0]+"="+strconv.Quote(kv[1]))
		}
	}
	if len(sf) > 0 {
		put("source", strings.Join(sf, " "))
	}
	var ow []string
	o := tl.Observed
	for _, x := range observedWords {
		if *x.get(&o) {
			ow = append(ow, x.word)
		}
	}
	put("observed", strings.Join(ow, " "))
	if d := tl.Dist; d.Known {
		f := []string{"dist", "rank=" + strconv.Itoa(d.Rank)}
		if d.WorldSize != 0 {
			f = append(f, "world="+strconv.Itoa(d.WorldSize))
		}
		if d.Backend != "" {
			f = append(f, "backend="+strconv.Quote(d.Backend))
		}
		put(f...)
	}
	for _, d := range tl.Devices {
		f := []string{"device", strconv.FormatInt(d.ID, 10)}
		if d.Name != "" {
			f = append(f, strconv.Quote(d.Name))
		}
		if d.SMs != 0 {
			f = append(f, "sms="+strconv.Itoa(d.SMs))
		}
		if d.MemoryBytes != 0 {
			f = append(f, "mem="+FormatSize(d.MemoryBytes))
		}
		put(f...)
	}
	labels := make([]string, len(tl.Tracks))
	for i := range tl.Tracks {
		t := &tl.Tracks[i]
		k := trackKey{gpu: t.Kind == timeline.TrackGPU, a: t.PID, b: t.TID}
		if k.gpu {
			k.a, k.b = t.Device, t.Stream
		}
		labels[i] = k.String()
		if t.Name != "" {
			put("track", labels[i], strconv.Quote(t.Name))
		} else {
			put("track", labels[i])
		}
	}
	var origin int64
	if len(tl.Events) > 0 && tl.Events[0].Start > 0 {
		origin = tl.Events[0].Start
		put("origin", strconv.FormatInt(origin, 10))
	}
	for i := range tl.Events {
		f := eventFields(tl, &tl.Events[i], labels, origin)
		if c, ok := tl.Collective(int32(i)); ok {
			f = append(f, collectiveFields(c)...)
		}
		put(f...)
	}
	return bw.Flush()
}

// collectiveFields are the keys of a kernel's collective.
func collectiveFields(c *timeline.Collective) []string {
	f := []string{"coll=" + strconv.Quote(c.Op)}
	if c.Group != "" {
		f = append(f, "group="+strconv.Quote(c.Group))
	}
	if c.GroupSize != 0 {
		f = append(f, "ranks="+strconv.Itoa(c.GroupSize))
	}
	if c.DType != "" {
		f = append(f, "dtype="+strconv.Quote(c.DType))
	}
	if c.Seq >= 0 {
		f = append(f, "seq="+strconv.FormatInt(c.Seq, 10))
	}
	if c.Bytes != 0 {
		f = append(f, "bytes="+FormatSize(c.Bytes))
	}
	return f
}

// eventFields are the fields of one event's line.
func eventFields(tl *timeline.Timeline, e *timeline.Event, labels []string, origin int64) []string {
	name := tl.Name(e.Name)
	f := []string{e.Kind.String(), labels[e.Track], FormatTime(e.Start - origin)}
	if d := e.End - e.Start; d > 0 {
		f = append(f, "+"+FormatTime(d))
	} else if d < 0 { // overflowed: an absurd timeline, written exactly all the same
		f = append(f, FormatTime(e.End-origin))
	}
	if name != "" {
		f = append(f, strconv.Quote(name))
	}
	if e.Corr != 0 {
		f = append(f, "corr="+strconv.FormatInt(e.Corr, 10))
	}
	if e.Proc != 0 {
		f = append(f, "proc="+strconv.FormatUint(uint64(e.Proc), 10))
	}
	if e.Copy != timeline.CopyUnknown {
		f = append(f, "dir="+e.Copy.String())
	}
	if e.Src != timeline.MemUnknown {
		f = append(f, "src="+e.Src.String())
	}
	if e.Dst != timeline.MemUnknown {
		f = append(f, "dst="+e.Dst.String())
	}
	if e.Bytes != 0 {
		f = append(f, "bytes="+FormatSize(e.Bytes))
	}
	if e.Kind == timeline.KindAPI && e.API != timeline.ClassifyAPI(name) {
		f = append(f, "class="+e.API.String())
	}
	if e.Kind == timeline.KindRange && e.Range != timeline.ClassifyRange(name, timeline.RangeNVTX) ||
		e.Kind != timeline.KindRange && e.Range != timeline.RangeOther {
		f = append(f, "kind="+e.Range.String())
	}
	if e.Kind != timeline.KindAPI && e.API != timeline.APIOther {
		f = append(f, "class="+e.API.String())
	}
	for _, fl := range []struct {
		bit  timeline.Flag
		word string
	}{{timeline.FlagDriver, "driver"}, {timeline.FlagGraph, "graph"}, {timeline.FlagOpenEnd, "open"}} {
		if e.Has(fl.bit) {
			f = append(f, fl.word)
		}
	}
	return f
}
