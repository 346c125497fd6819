package stats

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/timeline"
)

// TableKinds are the reports of `traceaudit stats --report`, in the order
// the help lists them.
var TableKinds = []string{"kernels", "api", "nvtx", "copies", "os"}

// Table is an nsys-stats-style summary of one kind of event: one row per
// name, sorted by total time (the `traceaudit stats --report` object;
// fields may be added, never renamed).
type Table struct {
	File string `json:"file"`
	// Report is the kind of table: kernels, api, nvtx, copies or os.
	Report string `json:"report"`
	// TotalNS is the summed time of all rows.
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
	// Share is TotalNS over the table's total time.
	Share float64 `json:"share"`
	// Bytes is the summed size of copies and memsets (copies table only).
	Bytes int64 `json:"bytes,omitempty"`
}

// NewTable builds the table of one kind: "kernels" (GPU kernels by name),
// "api" (CUDA/HIP API calls by name, version suffixes such as _v3020
// dropped), "nvtx" (host ranges: NVTX, record_function, ProfilerStep,
// DataLoader), "copies" (memcpys by direction and memory kinds, and
// memsets) or "os" (OS runtime calls). Cost: O(n log n) in the events.
func NewTable(tl *timeline.Timeline, kind string) (*Table, error) {
	var key func(e *timeline.Event) (string, bool)
	switch kind {
	case "kernels":
		key = func(e *timeline.Event) (string, bool) { return tl.Name(e.Name), e.Kind == timeline.KindKernel }
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
		slices.Sort(g.durs)
		r := Row{Name: name, Count: len(g.durs), MinNS: g.durs[0], MaxNS: g.durs[len(g.durs)-1], MedianNS: median(g.durs)}
		for _, d := range g.durs {
			r.TotalNS += d
		}
		r.AvgNS = r.TotalNS / int64(r.Count)
		if kind == "copies" {
			r.Bytes = g.bytes
		}
		t.TotalNS += r.TotalNS
		t.Rows = append(t.Rows, r)
	}
	slices.SortFunc(t.Rows, func(a, b Row) int {
		if c := cmp.Compare(b.TotalNS, a.TotalNS); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	for i := range t.Rows {
		if t.TotalNS > 0 {
			t.Rows[i].Share = float64(t.Rows[i].TotalNS) / float64(t.TotalNS)
		}
	}
	return t, nil
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
