package stats

import (
	"cmp"
	"math"
	"slices"

	"github.com/traceaudit/traceaudit/timeline"
)

// opsTable is the PyTorch profiler's key_averages() view of a trace's
// operators (`--report ops`): per operator name its calls, its host time
// in total and less the operators it called (self), and the GPU time of
// the kernels, copies and memsets launched under it, by itself (self:
// the innermost operator around the launch) and in total (every operator
// around it). Sorted by total host time. Cost: O(n log n) in the events.
func opsTable(tl *timeline.Timeline) *Table {
	// GPU time launched by each API call.
	gpu := map[int32]int64{}
	for i := range tl.Events {
		e := &tl.Events[i]
		if (e.Kind == timeline.KindKernel || e.Kind == timeline.KindMemcpy || e.Kind == timeline.KindMemset) && e.Link >= 0 {
			gpu[e.Link] += e.Dur()
		}
	}
	type acc struct {
		durs                  []int64
		self, cudaSelf, cudaT int64
	}
	rows := map[timeline.NameID]*acc{}
	row := func(n timeline.NameID) *acc {
		a := rows[n]
		if a == nil {
			a = &acc{}
			rows[n] = a
		}
		return a
	}
	for t := range tl.Tracks {
		tr := &tl.Tracks[t]
		if tr.Kind != timeline.TrackHost {
			continue
		}
		// The thread's operators, and its calls that launched GPU work,
		// in time order (an operator before what it encloses).
		var evs []int32
		for _, i := range tr.Events {
			e := &tl.Events[i]
			if e.Kind == timeline.KindOp || e.Kind == timeline.KindAPI && gpu[i] > 0 {
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
			return cmp.Compare(ea.Kind, eb.Kind) // an operator before a call that starts and ends with it
		})
		type open struct {
			ev       int32
			children int64
		}
		var stack []open
		closeTo := func(at int64) {
			for len(stack) > 0 && tl.Events[stack[len(stack)-1].ev].End <= at {
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				e := &tl.Events[top.ev]
				row(e.Name).self += max(0, e.Dur()-top.children)
			}
		}
		for _, i := range evs {
			e := &tl.Events[i]
			closeTo(e.Start)
			if e.Kind == timeline.KindAPI {
				d := gpu[i]
				if len(stack) > 0 {
					row(tl.Events[stack[len(stack)-1].ev].Name).cudaSelf += d
				}
				for _, o := range stack {
					row(tl.Events[o.ev].Name).cudaT += d
				}
				continue
			}
			if len(stack) > 0 {
				stack[len(stack)-1].children += e.Dur()
			}
			a := row(e.Name)
			a.durs = append(a.durs, e.Dur())
			stack = append(stack, open{ev: i})
		}
		closeTo(math.MaxInt64)
	}
	t := &Table{File: tl.Source.Path, Report: "ops", Rows: make([]Row, 0, len(rows))}
	for name, a := range rows {
		r := durRow(tl.Name(name), a.durs)
		r.SelfNS, r.CUDASelfNS, r.CUDATotalNS = a.self, a.cudaSelf, a.cudaT
		t.TotalNS += r.SelfNS
		t.Rows = append(t.Rows, r)
	}
	t.finish(func(r *Row) int64 { return r.SelfNS })
	return t
}
