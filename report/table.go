package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/traceaudit/traceaudit/analyze/stats"
	"github.com/traceaudit/traceaudit/internal/units"
)

// ForTable is the document of one full stats table (`traceaudit stats
// --report`): text, CSV and JSON, no report folder.
func ForTable(t *stats.Table) *Document {
	return &Document{value: t, formats: map[Format]renderer{
		Text: asText(func(p *printer) { tableText(p, t) }),
		CSV:  func(w io.Writer, _ Options) error { return tableCSV(w, t) },
		JSON: asJSON(t),
	}}
}

// tableTitles head the text tables.
var tableTitles = map[string]string{
	"kernels": "GPU kernels",
	"api":     "CUDA API calls",
	"nvtx":    "host ranges (NVTX, record_function, ProfilerStep, DataLoader)",
	"copies":  "GPU copies and memsets",
	"os":      "OS runtime calls",
	"ops":     "torch.profiler's key_averages() (operators, ranges, API calls, GPU work)",
}

// tableText writes an nsys-stats-style table: share, total, count, average,
// median, min and max per name, by total time (copies add bytes and GB/s).
func tableText(p *printer, t *stats.Table) {
	title, unit := tableTitles[t.Report], "name"
	if t.GroupBy == "shape" {
		title, unit = "torch.profiler's key_averages(group_by_input_shape=True)", "row"
	}
	p.line("%s: %s by total time, %s in %s", filepath.Base(t.File), title, units.Dur(t.TotalNS), plural(len(t.Rows), unit))
	if len(t.Rows) == 0 {
		if t.Report == "ops" {
			p.line("(none recorded: operators come from the PyTorch profiler's CPU activity; an Nsight Systems export holds none)")
			return
		}
		p.line("(none recorded)")
		return
	}
	if t.Report == "ops" {
		opsText(p, t)
		return
	}
	copies := t.Report == "copies"
	head := fmt.Sprintf("%8s %10s %9s %10s %10s %10s %10s %10s", "share", "total", "count", "avg", "median", "min", "max", "stddev")
	if copies {
		head += fmt.Sprintf(" %10s %7s", "bytes", "GB/s")
	}
	p.line("%s  %s", head, "name")
	for _, r := range t.Rows {
		row := fmt.Sprintf("%8s %10s %9s %10s %10s %10s %10s %10s", units.Pct(r.Share), units.Dur(r.TotalNS), units.Count(r.Count),
			units.Dur(r.AvgNS), units.Dur(r.MedianNS), units.Dur(r.MinNS), units.Dur(r.MaxNS), units.Dur(r.StddevNS))
		if copies {
			row += fmt.Sprintf(" %10s %7s", units.Bytes(r.Bytes), units.GBps(r.Bytes, r.TotalNS))
		}
		p.line("%s  %s", styled(row), r.Name)
	}
}

// opsText writes the operators table in the manner of key_averages():
// self host time and its share, total host time and its mean and standard
// deviation, self and total GPU time, calls.
func opsText(p *printer, t *stats.Table) {
	var cuda int64
	for _, r := range t.Rows {
		cuda += r.CUDASelfNS
	}
	name := "name"
	if t.GroupBy == "shape" {
		name += "  input shapes"
	}
	p.line("%9s %10s %10s %10s %10s %10s %9s %10s %9s  %s", "self CPU%", "self CPU", "CPU total", "CPU avg", "CPU stddev", "self CUDA",
		"self CUDA%", "CUDA total", "calls", name)
	for _, r := range t.Rows {
		row := fmt.Sprintf("%9s %10s %10s %10s %10s %10s %9s %10s %9s", units.Pct(r.Share), units.Dur(r.SelfNS), units.Dur(r.TotalNS),
			units.Dur(r.AvgNS), units.Dur(r.StddevNS), units.Dur(r.CUDASelfNS), units.Pct(share(r.CUDASelfNS, cuda)),
			units.Dur(r.CUDATotalNS), units.Count(r.Count))
		if t.GroupBy == "shape" {
			p.line("%s  %s  %s", styled(row), r.Name, r.InputShapes)
			continue
		}
		p.line("%s  %s", styled(row), r.Name)
	}
	p.line("self CPU total %s, self CUDA total %s", units.Dur(t.TotalNS), units.Dur(cuda))
}

func share(a, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return float64(a) / float64(total)
}

// tableCSV writes a table as CSV with times in nanoseconds. Names that a
// spreadsheet would run as a formula (starting with = + - @ or a tab or
// carriage return) get a leading apostrophe.
func tableCSV(w io.Writer, t *stats.Table) error {
	cw := csv.NewWriter(w)
	head := []string{"name", "count", "total_ns", "avg_ns", "median_ns", "min_ns", "max_ns", "stddev_ns", "share"}
	copies, ops := t.Report == "copies", t.Report == "ops"
	if copies {
		head = append(head, "bytes")
	}
	if ops {
		head = append(head, "self_ns", "cuda_self_ns", "cuda_total_ns")
	}
	byShape := t.GroupBy == "shape"
	if byShape {
		head = append(head, "input_shapes")
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, r := range t.Rows {
		rec := []string{csvSafe(r.Name), strconv.Itoa(r.Count), i64(r.TotalNS), i64(r.AvgNS), i64(r.MedianNS), i64(r.MinNS), i64(r.MaxNS),
			i64(r.StddevNS), strconv.FormatFloat(r.Share, 'f', 6, 64)}
		if copies {
			rec = append(rec, i64(r.Bytes))
		}
		if ops {
			rec = append(rec, i64(r.SelfNS), i64(r.CUDASelfNS), i64(r.CUDATotalNS))
		}
		if byShape {
			rec = append(rec, csvSafe(r.InputShapes))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvSafe defuses spreadsheet formulas (OWASP's CSV injection advice) and
// strips control characters.
func csvSafe(s string) string {
	s = termSafe(s)
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
