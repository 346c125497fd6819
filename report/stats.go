package report

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/traceaudit/traceaudit/analyze/stats"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// ForStats is the document of `traceaudit stats`, what a trace records:
// text and JSON, no report folder.
func ForStats(s *stats.Stats) *Document {
	return &Document{value: s, formats: map[Format]renderer{
		Text: asText(func(p *printer) { statsText(p, s) }),
		JSON: asJSON(s),
	}}
}

// statsText writes the short human summary of `traceaudit stats`.
func statsText(p *printer, s *stats.Stats) {
	d := &s.Detail
	head := filepath.Base(s.File) + "  (" + s.Format
	if d.Version != "" {
		head += " " + d.Version
	}
	p.line(head + ")")
	gpus := fmt.Sprintf("%d GPU", s.Devices)
	if s.Devices != 1 {
		gpus += "s"
	}
	if len(d.DeviceNames) > 0 {
		gpus += " (" + strings.Join(uniq(d.DeviceNames), ", ") + ")"
	}
	p.line("window %s, %s, %s, %s", units.Dur(d.WindowNS), gpus, plural(s.Streams, "stream"), plural(s.Host.Threads, "host thread"))
	p.line("")
	if s.GPU.SpanNS > 0 {
		p.line("GPU busy %s of a %s span (%s); kernels alone %s (%s)",
			units.Dur(s.GPU.BusyNS), units.Dur(s.GPU.SpanNS), units.Pct(float64(s.GPU.BusyNS)/float64(s.GPU.SpanNS)),
			units.Dur(d.ComputeBusyNS), units.Pct(float64(d.ComputeBusyNS)/float64(s.GPU.SpanNS)))
	} else {
		p.line("GPU: no GPU work recorded")
	}
	p.line("  %-8s %9s %10s", "kernels", units.Count(s.GPU.Kernels), units.Dur(d.KernelNS))
	p.line("  %-8s %9s %10s", "memcpys", units.Count(s.GPU.Memcpys), units.Dur(d.MemcpyNS))
	p.line("  %-8s %9s %10s", "memsets", units.Count(s.GPU.Memsets), units.Dur(d.MemsetNS))
	if d.GraphExecs > 0 {
		p.line("  %s whole CUDA graph executions (busy time, not counted as kernels)", units.Count(d.GraphExecs))
	}
	if len(d.TopKernels) > 0 {
		p.line("  longest kernels: %s", nameTimes(d.TopKernels, 3, 60, "run"))
	}
	if len(d.Copies) > 0 {
		p.line("")
		p.line("%-30s %7s %10s %10s %7s", "copies", "count", "bytes", "GPU time", "GB/s")
		for _, g := range d.Copies {
			p.line("  %-28s %7s %10s %10s %7s", copyLabel(g), units.Count(g.Count), units.Bytes(g.Bytes), units.Dur(g.DurNS), units.GBps(g.Bytes, g.DurNS))
		}
	}
	p.line("")
	p.line("host: %s API calls, %s ranges, %s ops, %s OS calls", units.Count(s.Host.APICalls), units.Count(s.Host.Ranges), units.Count(d.Ops), units.Count(s.Host.OSCalls))
	if len(d.TopAPI) > 0 {
		p.line("  API calls by time: %s", nameTimes(d.TopAPI, 4, 40, "call"))
	}
	if len(d.TopOS) > 0 {
		p.line("  OS calls by time:  %s", nameTimes(d.TopOS, 4, 40, "call"))
	}
	if miss := missing(d.Observed); len(miss) > 0 {
		p.line("")
		p.line("not recorded: %s", strings.Join(miss, "; "))
	}
	p.line("")
	p.line("full tables: traceaudit stats --report kernels|api|nvtx|copies|os %s", s.File)
}

// plural is "1 stream", "3 streams".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return units.Count(n) + " " + noun + "s"
}

func copyLabel(g stats.CopyGroup) string { return stats.CopyName(g.Copy, g.Src, g.Dst) }

// nameTimes lists the first n names with their count and total time:
// "cudaDeviceSynchronize (4 calls, 148 ms total)".
func nameTimes(v []stats.NameTime, n, width int, noun string) string {
	var parts []string
	for i, x := range v {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s, %s total)", units.Clip(x.Name, width), plural(x.Count, noun), units.Dur(x.DurNS)))
	}
	return strings.Join(parts, ", ")
}

// missing lists what the input did not record, with how to record it.
func missing(o timeline.Observed) []string {
	var m []string
	if !o.GPU {
		m = append(m, "GPU activity")
	}
	if !o.APICalls {
		m = append(m, "CUDA API calls")
	}
	if !o.OSCalls {
		m = append(m, "OS runtime calls (nsys --trace=osrt)")
	}
	if !o.NVTX && !o.Annotations && !o.DataLoader {
		m = append(m, "host ranges (NVTX or record_function)")
	}
	return m
}

func uniq(v []string) []string {
	var out []string
	seen := map[string]int{}
	for _, s := range v {
		if seen[s] == 0 {
			out = append(out, s)
		}
		seen[s]++
	}
	for i, s := range out {
		if n := seen[s]; n > 1 {
			out[i] = fmt.Sprintf("%d× %s", n, s)
		}
	}
	return out
}
