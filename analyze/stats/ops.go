package stats

import (
	"cmp"
	"math"
	"slices"

	"github.com/traceaudit/traceaudit/timeline"
)

// opsTable is the PyTorch profiler's key_averages() view of a trace
// (`--report ops`), with its rows: every operator, record_function range,
// ProfilerStep (as "ProfilerStep*"), DataLoader fetch and CUDA API call
// by name, with its calls and its host time in total and less what it
// encloses (self); and every kernel, copy and memset by name, with its GPU
// time. An operator's GPU time is that of the work launched under it, by
// itself (self: the innermost operator or range around the launching
// call) and in total (any around it). Sorted by total host time. byShape
// makes a row per name and input shapes; fullNames keeps kernel names
// whole. A trace without operators (an nsys export) has no rows. Cost:
// O(n log n) in the events.
func opsTable(tl *timeline.Timeline, byShape, fullNames bool) *Table {
	t := &Table{File: tl.Source.Path, Report: "ops"}
	if byShape {
		t.GroupBy = "shape"
	}
	if !hasOps(tl) {
		return t
	}
	// GPU time launched by each API call.
	gpu := map[int32]int64{}
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind.IsGPUWork() && e.Link >= 0 {
			gpu[e.Link] += e.Dur()
		}
	}
	type acc struct {
		durs                  []int64
		count                 int
		self, cudaSelf, cudaT int64
	}
	// A row: a name and, by shape, the input shapes (an operator recorded
	// without any, and every other row, has "[]", as in PyTorch).
	type key struct {
		name  string
		shape string
	}
	rows := map[key]*acc{}
	rowOf := func(name string, ev int32) *acc {
		k := key{name: name}
		if byShape {
			k.shape, _ = tl.ShapeOf(ev)
		}
		a := rows[k]
		if a == nil {
			a = &acc{}
			rows[k] = a
		}
		return a
	}
	hostName := func(e *timeline.Event) string {
		if e.Kind == timeline.KindRange && e.Range == timeline.RangeStep {
			return "ProfilerStep*"
		}
		return tl.Name(e.Name)
	}
	for i := range tl.Events {
		if e := &tl.Events[i]; e.Kind.IsGPUWork() && !e.Has(timeline.FlagGraphExec) {
			name := tl.Name(e.Name)
			if e.Kind == timeline.KindKernel && !fullNames {
				name = timeline.ShortKernelName(name)
			}
			a := rowOf(name, int32(i))
			a.count++
			a.cudaSelf += e.Dur()
			a.cudaT += e.Dur()
		}
	}
	for ti := range tl.Tracks {
		tr := &tl.Tracks[ti]
		if tr.Kind != timeline.TrackHost {
			continue
		}
		// The thread's rows in time order, an enclosing one first.
		var evs []int32
		for _, i := range tr.Events {
			if hostRow(&tl.Events[i]) {
				evs = append(evs, i)
			}
		}
		slices.SortFunc(evs, func(a, b int32) int {
			ea, eb := &tl.Events[a], &tl.Events[b]
			if c := cmp.Compare(ea.Start, eb.Start); c != 0 {
				return c
			}
			if c := cmp.Compare(eb.End, ea.End); c != 0 {
				return c
			}
			return cmp.Compare(nesting(ea.Kind), nesting(eb.Kind))
		})
		type open struct {
			ev       int32
			row      *acc
			api      bool // an API call: it takes no GPU time of its own
			children int64
		}
		var stack []open
		closeTo := func(at int64) {
			for len(stack) > 0 && tl.Events[stack[len(stack)-1].ev].End <= at {
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				top.row.self += max(0, tl.Events[top.ev].Dur()-top.children)
			}
		}
		for _, i := range evs {
			e := &tl.Events[i]
			closeTo(e.Start)
			if d := gpu[i]; d > 0 {
				self := true
				for k := len(stack) - 1; k >= 0; k-- {
					if stack[k].api {
						continue
					}
					if self {
						stack[k].row.cudaSelf += d
						self = false
					}
					stack[k].row.cudaT += d
				}
			}
			if len(stack) > 0 {
				stack[len(stack)-1].children += e.Dur()
			}
			a := rowOf(hostName(e), i)
			a.durs = append(a.durs, e.Dur())
			stack = append(stack, open{ev: i, row: a, api: e.Kind == timeline.KindAPI})
		}
		closeTo(math.MaxInt64)
	}
	t.Rows = make([]Row, 0, len(rows))
	for k, a := range rows {
		var r Row
		if len(a.durs) > 0 {
			r = durRow(k.name, a.durs)
		} else {
			r = Row{Name: k.name, Count: a.count}
		}
		r.SelfNS, r.CUDASelfNS, r.CUDATotalNS = a.self, a.cudaSelf, a.cudaT
		if byShape {
			r.InputShapes = cmp.Or(k.shape, "[]")
		}
		t.TotalNS += r.SelfNS
		t.Rows = append(t.Rows, r)
	}
	t.finish(func(r *Row) int64 { return r.SelfNS })
	return t
}

// hasOps reports whether the trace holds PyTorch operators.
func hasOps(tl *timeline.Timeline) bool {
	for i := range tl.Events {
		if tl.Events[i].Kind == timeline.KindOp {
			return true
		}
	}
	return false
}

// hostRow reports whether e is a host row of the ops table: an operator,
// a profiler range (record_function, ProfilerStep, DataLoader) or an API
// call.
func hostRow(e *timeline.Event) bool {
	switch e.Kind {
	case timeline.KindOp, timeline.KindAPI:
		return true
	case timeline.KindRange:
		return e.Range == timeline.RangeAnnotation || e.Range == timeline.RangeStep || e.Range == timeline.RangeDataLoader
	}
	return false
}

// nesting orders host rows that start and end together: a range encloses
// an operator, which encloses an API call.
func nesting(k timeline.Kind) int {
	switch k {
	case timeline.KindRange:
		return 0
	case timeline.KindOp:
		return 1
	}
	return 2
}
