package report

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/internal/version"
	"github.com/traceaudit/traceaudit/timeline"
)

// The annotated trace (annotated.json in report folders) is a Chrome trace
// of the steady window that Perfetto UI (ui.perfetto.dev) and
// chrome://tracing open: the trace's own events, host threads and GPU
// streams, plus a "traceaudit" process whose threads are the steps and
// each finding, the finding's evidence as slices with the fix in their
// arguments. Timestamps are microseconds from the trace's first event, so
// they match the "at" times of the other reports. Perfetto requires the
// slices of a thread to nest perfectly, so events that overlap without
// nesting go to extra lanes of their thread, named "(overlapping)".

// Process ids of the tracks that are not host processes: above Linux's
// largest pid (2^22), so they cannot collide with a host pid.
const (
	gpuPIDBase    = 1<<22 + 1
	auditPID      = 1<<22 + 1000
	extraLaneBase = 1<<22 + 1 // thread ids of extra lanes
)

// ErrNoTimeline is returned for documents without their timeline (an
// analyze report read back from JSON).
var ErrNoTimeline = errors.New("the report has no timeline: the annotated trace needs the trace itself")

// traceEvent is one Chrome trace event.
type traceEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat,omitempty"`
	Ph   string          `json:"ph"`
	PID  int64           `json:"pid"`
	TID  int64           `json:"tid"`
	TS   json.Number     `json:"ts"`
	Dur  json.Number     `json:"dur,omitempty"`
	S    string          `json:"s,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
}

// micros formats nanoseconds as microseconds with three decimals, exactly.
func micros(ns int64) json.Number {
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	return json.Number(fmt.Sprintf("%s%d.%03d", sign, ns/1000, ns%1000))
}

func args(kv ...any) json.RawMessage {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

// lanes assigns slices of one thread to lanes in which they nest
// perfectly; slices must come sorted by start, longer first.
type lanes struct{ stacks [][][2]int64 }

func (l *lanes) place(start, end int64) int {
	for i, st := range l.stacks {
		for len(st) > 0 && st[len(st)-1][1] <= start {
			st = st[:len(st)-1]
		}
		l.stacks[i] = st
		if len(st) == 0 || (start >= st[len(st)-1][0] && end <= st[len(st)-1][1]) {
			l.stacks[i] = append(st, [2]int64{start, end})
			return i
		}
	}
	l.stacks = append(l.stacks, [][2]int64{{start, end}})
	return len(l.stacks) - 1
}

// traceWriter accumulates events and the names of their threads.
type traceWriter struct {
	origin  int64
	events  []traceEvent
	meta    []traceEvent
	lanes   map[[2]int64]*lanes
	extra   map[[3]int64]int64 // (pid, tid, lane) -> tid of the extra lane
	nextTID map[int64]int64
	names   map[[2]int64]string
}

func newTraceWriter(origin int64) *traceWriter {
	return &traceWriter{origin: origin, lanes: map[[2]int64]*lanes{}, extra: map[[3]int64]int64{}, nextTID: map[int64]int64{}, names: map[[2]int64]string{}}
}

// thread names a thread once.
func (w *traceWriter) thread(pid, tid int64, name string, sort int) {
	k := [2]int64{pid, tid}
	if _, ok := w.names[k]; ok {
		return
	}
	w.names[k] = name
	w.meta = append(w.meta,
		traceEvent{Name: "thread_name", Ph: "M", PID: pid, TID: tid, TS: "0", Args: args("name", termSafe(name))},
		traceEvent{Name: "thread_sort_index", Ph: "M", PID: pid, TID: tid, TS: "0", Args: args("sort_index", sort)})
}

func (w *traceWriter) process(pid int64, name string, sort int) {
	w.meta = append(w.meta,
		traceEvent{Name: "process_name", Ph: "M", PID: pid, TS: "0", Args: args("name", termSafe(name))},
		traceEvent{Name: "process_sort_index", Ph: "M", PID: pid, TS: "0", Args: args("sort_index", sort)})
}

// slice adds a complete event on (pid, tid), moving it to an extra lane
// of that thread when it would not nest.
func (w *traceWriter) slice(pid, tid int64, name, cat string, start, end int64, a json.RawMessage) {
	k := [2]int64{pid, tid}
	l := w.lanes[k]
	if l == nil {
		l = &lanes{}
		w.lanes[k] = l
	}
	if lane := l.place(start, end); lane > 0 {
		ek := [3]int64{pid, tid, int64(lane)}
		t, ok := w.extra[ek]
		if !ok {
			t = extraLaneBase + w.nextTID[pid]
			w.nextTID[pid]++
			w.extra[ek] = t
			w.thread(pid, t, fmt.Sprintf("%s (overlapping %d)", w.names[k], lane), 1000+lane)
		}
		tid = t
	}
	ph, dur := "X", micros(end-start)
	s := ""
	if end == start {
		ph, dur, s = "i", "", "t"
	}
	w.events = append(w.events, traceEvent{Name: termSafe(name), Cat: cat, Ph: ph, PID: pid, TID: tid, TS: micros(start - w.origin), Dur: dur, S: s, Args: a})
}

// steadyWindow is the span of the steady steps (the whole trace when there
// are none).
func steadyWindow(r *audit.Analysis) (lo, hi int64) {
	lo, hi = r.Timeline.Span()
	first := true
	for _, s := range r.Steps.PerStep {
		if s.Startup || s.Teardown {
			continue
		}
		if first {
			lo, hi, first = s.StartNS, s.EndNS, false
		}
		lo, hi = min(lo, s.StartNS), max(hi, s.EndNS)
	}
	return lo, hi
}

// chromeTrace writes the annotated Chrome trace of an analyze report.
func chromeTrace(w io.Writer, r *audit.Analysis) error {
	if r.Timeline == nil {
		return fmt.Errorf("report: %s: %w", ChromeTrace, ErrNoTimeline)
	}
	tl := r.Timeline
	origin := windowStart(r)
	lo, hi := steadyWindow(r)
	tw := newTraceWriter(origin)

	// The traceaudit process: steps, then one thread per finding.
	tw.process(auditPID, "traceaudit: "+r.Verdict, -1)
	tw.thread(auditPID, 1, "steps", 0)
	for i, s := range r.Steps.PerStep {
		if s.EndNS <= lo || s.StartNS >= hi {
			continue
		}
		b := s.BreakdownNS
		tw.slice(auditPID, 1, stepName(s, i), "step", s.StartNS, s.EndNS, args("compute_ns", b[index.Compute], "copy_ns", b[index.Copy], "sync_ns", b[index.Sync],
			"os_ns", b[index.OS], "data_ns", b[index.Data], "other_ns", b[index.Other]))
	}
	for i, f := range r.Findings {
		tid := int64(2 + i)
		tw.thread(auditPID, tid, fmt.Sprintf("finding %s (%s)", f.ID, f.Severity), 1+i)
		ev := slices.Clone(f.Evidence) // worst first in the report; by time for lanes
		slices.SortStableFunc(ev, func(a, b analyze.Evidence) int {
			if a.StartNS != b.StartNS {
				return cmp.Compare(a.StartNS, b.StartNS)
			}
			return cmp.Compare(b.EndNS, a.EndNS)
		})
		for _, e := range ev {
			tw.slice(auditPID, tid, e.What, "finding,"+f.ID, e.StartNS, e.EndNS,
				args("finding", f.ID, "severity", f.Severity.String(), "title", termSafe(f.Title), "evidence_track", termSafe(e.Track),
					"wasted_ns_per_step", f.WastedNS, "share", f.Share, "fix", termSafe(f.Fix)))
		}
	}

	// The trace's own tracks.
	seenPID := map[int64]bool{}
	for ti := range tl.Tracks {
		t := &tl.Tracks[ti]
		var pid, tid int64
		var name string
		if t.Kind == timeline.TrackGPU {
			pid, tid, name = gpuPIDBase+t.Device, t.Stream, fmt.Sprintf("stream %d", t.Stream)
			if !seenPID[pid] {
				tw.process(pid, gpuName(tl, t.Device), 1000+int(t.Device))
			}
		} else {
			pid, tid, name = t.PID, t.TID, fmt.Sprintf("thread %d", t.TID)
			if t.Name != "" {
				name = fmt.Sprintf("%s (%d)", t.Name, t.TID)
			}
			if !seenPID[pid] {
				tw.process(pid, fmt.Sprintf("host process %d", t.PID), 100)
			}
		}
		seenPID[pid] = true
		tw.thread(pid, tid, name, int(min(tid, 1<<20)))
		for _, ei := range t.Events {
			e := &tl.Events[ei]
			if e.End < lo || e.Start > hi || e.Kind == timeline.KindInvalid {
				continue
			}
			tw.slice(pid, tid, tl.Name(e.Name), e.Kind.String(), e.Start, e.End, eventArgs(e))
		}
	}

	bw := bufio.NewWriter(w)
	head, _ := json.Marshal(map[string]any{"traceaudit": version.Tool(), "file": termSafe(r.File), "verdict": termSafe(r.Verdict),
		"window": "steady steps only", "schema_version": version.Schema, "origin_ns": origin, "window_ns": []int64{lo, hi}})
	fmt.Fprintf(bw, "{\"displayTimeUnit\":\"ms\",\"otherData\":%s,\"traceEvents\":[\n", head)
	all := append(tw.meta, tw.events...)
	for i := range all {
		b, err := json.Marshal(&all[i])
		if err != nil {
			return fmt.Errorf("report: %s: %w", ChromeTrace, err)
		}
		bw.Write(b)
		if i < len(all)-1 {
			bw.WriteString(",\n")
		}
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// eventArgs are the arguments shown for an event: a copy's size and
// memory kinds, a memset's size.
func eventArgs(e *timeline.Event) json.RawMessage {
	switch e.Kind {
	case timeline.KindMemcpy:
		return args("bytes", e.Bytes, "copy", e.Copy.String(), "src", e.Src.String(), "dst", e.Dst.String())
	case timeline.KindMemset:
		return args("bytes", e.Bytes)
	}
	return nil
}

// gpuName names a GPU process: "GPU 0 (NVIDIA H200)".
func gpuName(tl *timeline.Timeline, dev int64) string {
	i := slices.IndexFunc(tl.Devices, func(d timeline.Device) bool { return d.ID == dev })
	if i >= 0 && tl.Devices[i].Name != "" {
		return "GPU " + strconv.FormatInt(dev, 10) + " (" + tl.Devices[i].Name + ")"
	}
	return "GPU " + strconv.FormatInt(dev, 10)
}
