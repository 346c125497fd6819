package stats

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/timeline"
)

// TableKinds are the reports of `traceaudit stats --report`, in the order
// the help lists them.
var TableKinds = []string{"kernels", "api", "nvtx", "copies", "os", "ops"}

// Table is an nsys-stats-style summary of one kind of event: one row per
// name, sorted by total time (the `traceaudit stats --report` object;
// fields may be added, never renamed).
type Table struct {
	File string `json:"file"`
	// Report is the kind of table: kernels, api, nvtx, copies, os or ops.
	Report string `json:"report"`
	// GroupBy is "shape" where ops rows are one per operator and input
	// shapes, "" where they are one per name.
	GroupBy string `json:"group_by,omitempty"`
	// TotalNS is the summed time of all rows (ops: their self host time,
	// since an operator's total holds those it called).
	TotalNS int64 `json:"total_ns"`
	Rows    []Row `json:"rows"`
}

// Row is one name's events. Times are in nanoseconds.
type Row struct {
	Name     string `json:"name"`
	Count    int    `json:"count"`
	TotalNS  int64  `json:"total_ns"`
	AvgNS    int64  `json:"avg_ns"`
	MedianNS int64  `json:"median_ns"`
	MinNS    int64  `json:"min_ns"`
	MaxNS    int64  `json:"max_ns"`
	// StddevNS is the sample standard deviation of the times (0 for one).
	StddevNS int64 `json:"stddev_ns"`
	// Share is TotalNS over the table's total time (ops: SelfNS).
	Share float64 `json:"share"`
	// Bytes is the summed size of copies and memsets (copies table only).
	Bytes int64 `json:"bytes,omitempty"`
	// SelfNS, CUDASelfNS and CUDATotalNS are an operator's host time less
	// the operators it called, and the GPU time launched directly under it
	// and under it or any operator it called (ops table only; TotalNS is
	// its total host time).
	SelfNS      int64 `json:"self_ns,omitempty"`
	CUDASelfNS  int64 `json:"cuda_self_ns,omitempty"`
	CUDATotalNS int64 `json:"cuda_total_ns,omitempty"`
	// InputShapes are the operator's input shapes in an ops table grouped
	// by shape, as PyTorch prints them ("[[64, 3], []]"; "[]": none).
	InputShapes string `json:"input_shapes,omitempty"`
}

// TableOptions choose how NewTable names and groups rows.
type TableOptions struct {
	// FullNames keeps kernel names as the trace has them.
	FullNames bool
	// ByShape makes the ops table one row per operator name and input
	// shapes, as key_averages(group_by_input_shape=True) does.
	ByShape bool
}

// ErrNoShapes is returned for an ops table by shape of a trace that holds
// no input shapes.
var ErrNoShapes = errors.New("the trace records no input shapes (capture with torch.profiler.profile(record_shapes=True))")

// NewTable builds the table of one kind: "kernels" (GPU kernels by name),
// "api" (CUDA/HIP API calls by name, version suffixes such as _v3020
// dropped), "nvtx" (host ranges: NVTX, record_function, ProfilerStep,
// DataLoader), "copies" (memcpys by direction and memory kinds, and
// memsets) or "os" (OS runtime calls). Cost: O(n log n) in the events.
//
// Kernel names are shortened as Nsight Systems shortens them
// (timeline.ShortKernelName), so that a Chrome trace's table and an nsys
// export's name a kernel alike; o.FullNames keeps them as the trace has
// them. o.ByShape applies to "ops" alone.
func NewTable(tl *timeline.Timeline, kind string, o TableOptions) (*Table, error) {
	fullNames := o.FullNames
	var key func(e *timeline.Event) (string, bool)
	kernel := func(e *timeline.Event) string {
		if fullNames {
			return tl.Name(e.Name)
		}
		return timeline.ShortKernelName(tl.Name(e.Name))
	}
	switch kind {
	case "kernels":
		key = func(e *timeline.Event) (string, bool) { return kernel(e), e.Kind == timeline.KindKernel }
	case "api":
		key = func(e *timeline.Event) (string, bool) {
			return timeline.BaseAPIName(tl.Name(e.Name)), e.Kind == timeline.KindAPI
		}
	case "nvtx":
		key = func(e *timeline.Event) (string, bool) { return tl.Name(e.Name), e.Kind == timeline.KindRange }
	case "os":
		key = func(e *timeline.Event) (string, bool) { return tl.Name(e.Name), e.Kind == timeline.KindOS }
	case "copies":
		key = func(e *timeline.Event) (string, bool) {
			switch e.Kind {
			case timeline.KindMemcpy:
				return CopyName(e.Copy, e.Src, e.Dst), true
			case timeline.KindMemset:
				return "memset " + e.Dst.String(), true
			}
			return "", false
		}
	case "ops":
		if o.ByShape && len(tl.Shapes) == 0 {
			return nil, ErrNoShapes
		}
		return opsTable(tl, o.ByShape, o.FullNames), nil
	default:
		return nil, fmt.Errorf("unknown report %q: want one of %s", kind, strings.Join(TableKinds, ", "))
	}
	type group struct {
		durs  []int64
		bytes int64
	}
	groups := map[string]*group{}
	for i := range tl.Events {
		e := &tl.Events[i]
		name, ok := key(e)
		if !ok {
			continue
		}
		g := groups[name]
		if g == nil {
			g = &group{}
			groups[name] = g
		}
		g.durs = append(g.durs, e.Dur())
		g.bytes += e.Bytes
	}
	t := &Table{File: tl.Source.Path, Report: kind, Rows: make([]Row, 0, len(groups))}
	for name, g := range groups {
		r := durRow(name, g.durs)
		if kind == "copies" {
			r.Bytes = g.bytes
		}
		t.TotalNS += r.TotalNS
		t.Rows = append(t.Rows, r)
	}
	t.finish(func(r *Row) int64 { return r.TotalNS })
	return t, nil
}

// durRow is the row of name's durations (at least one): count, total,
// mean, median, least, most and sample standard deviation.
func durRow(name string, durs []int64) Row {
	slices.Sort(durs)
	r := Row{Name: name, Count: len(durs), MinNS: durs[0], MaxNS: durs[len(durs)-1], MedianNS: median(durs)}
	for _, d := range durs {
		r.TotalNS += d
	}
	r.AvgNS = r.TotalNS / int64(r.Count)
	if r.Count > 1 {
		mean := float64(r.TotalNS) / float64(r.Count)
		var ss float64
		for _, d := range durs {
			ss += (float64(d) - mean) * (float64(d) - mean)
		}
		r.StddevNS = int64(math.Round(math.Sqrt(ss / float64(r.Count-1))))
	}
	return r
}

// finish orders the rows by total time, then name, and gives each its
// share of the table's total: part of the row over TotalNS.
func (t *Table) finish(part func(*Row) int64) {
	slices.SortFunc(t.Rows, func(a, b Row) int {
		if c := cmp.Compare(b.TotalNS, a.TotalNS); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return cmp.Compare(a.InputShapes, b.InputShapes)
	})
	for i := range t.Rows {
		if t.TotalNS > 0 {
			t.Rows[i].Share = float64(part(&t.Rows[i])) / float64(t.TotalNS)
		}
	}
}

// median of sorted durations: the middle one, or the mean of the two
// middle ones (rounded down) for an even count.
func median(sorted []int64) int64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return sorted[n/2-1] + (sorted[n/2]-sorted[n/2-1])/2
}

// CopyName labels a copy: "HtoD pageable->device", or the direction alone
// when the memory kinds are unknown.
func CopyName(c timeline.CopyKind, src, dst timeline.MemKind) string {
	if src == timeline.MemUnknown && dst == timeline.MemUnknown {
		return c.String()
	}
	return fmt.Sprintf("%s %s->%s", c, src, dst)
}
