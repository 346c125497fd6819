package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/internal/units"
)

// ForAnalysis is the document of one trace analysed by itself: text,
// Markdown, JSON, HTML and the annotated Chrome trace; its report folder
// shows the trace's timeline, utilization, steps and findings.
func ForAnalysis(r *audit.Analysis) *Document {
	return &Document{value: r, formats: map[Format]renderer{
		Text:        asText(func(p *printer) { analyzeText(p, r) }),
		Markdown:    asMarkdown(func(p *printer, o Options) { analyzeMarkdown(p, r, o) }),
		JSON:        asJSON(r),
		HTML:        asHTML(func() htmlPage { return analyzeHTML(r) }),
		ChromeTrace: func(w io.Writer, _ Options) error { return chromeTrace(w, r) },
	}, plots: func(p Plotter) error { return p.Analysis(r) }}
}

// textWidth is where the text report wraps prose.
const textWidth = 100

// analyzeText writes the terminal report of a trace read by itself (a
// job's report is jobText): its rank note (aloneNote) where it is one rank
// of several, the verdict, then the step split, then findings by wasted
// time with fix, code and evidence, then what the input could not show.
func analyzeText(p *printer, r *audit.Analysis) {
	p.line("%s  (%s)", filepath.Base(r.File), r.Format)
	if n := aloneNote(r); n != "" {
		for _, l := range wrap(n, textWidth) {
			p.line("%s", l)
		}
	}
	p.line("%s", r.Verdict)
	p.line("")
	writeStepsText(p, r)
	if len(r.Findings) == 0 {
		p.line("")
		p.line("no findings: nothing starves the GPU beyond the info threshold")
	}
	findingsText(p, r.Findings, windowStart(r), func(f analyze.Finding) string {
		return fmt.Sprintf("traceaudit replay --variants %s %s", strings.Join(f.VerifyWith, ","), r.File)
	})
	notObservableText(p, r)
}

// findingsText writes findings, numbered, each with its fix, code,
// evidence (times from origin) and the replay command that verifies it.
func findingsText(p *printer, fs []analyze.Finding, origin int64, verify func(analyze.Finding) string) {
	for i, f := range fs {
		p.line("")
		sev := p.paint(fmt.Sprintf("%-7s", strings.ToUpper(f.Severity.String())), severityColor(f.Severity.String()))
		if f.WastedNS == 0 {
			p.line("%d. %s %-20s informational: no time wasted", i+1, sev, f.ID)
		} else {
			p.line("%d. %s %-20s %s", i+1, sev, f.ID, figures(f))
		}
		for _, l := range wrap(f.Title, textWidth-3) {
			p.line("   %s", l)
		}
		for _, l := range wrap("fix: "+f.Fix, textWidth-3) {
			p.line("   %s", l)
		}
		if f.Code != "" {
			p.line("   code:")
			for _, l := range strings.Split(f.Code, "\n") {
				p.line("     %s", l)
			}
		}
		if len(f.Evidence) > 0 {
			p.line("   evidence (time from the start of the trace):")
			for _, e := range f.Evidence {
				p.line("     %s  %-9s %s", at(e.StartNS-origin), units.Dur(e.EndNS-e.StartNS), e.Track)
				for _, l := range wrap(e.What, textWidth-8) {
					p.line("        %s", l)
				}
			}
		}
		if len(f.VerifyWith) > 0 {
			p.line("   verify on a GPU: %s", verify(f))
		}
	}
}

// notObservableText lists what the trace could not show.
func notObservableText(p *printer, r *audit.Analysis) {
	if len(r.NotObservable) == 0 {
		return
	}
	p.line("")
	p.line("not observable in this trace:")
	for _, n := range r.NotObservable {
		for j, l := range wrap(n.ID+": "+n.Why, textWidth-2) {
			if j == 0 {
				p.line("  %s", l)
			} else {
				p.line("    %s", l)
			}
		}
	}
}

// aloneNote says, for one rank of a larger job read by itself (a world
// size over 1, or MPI calls on its main thread), that what holds it back
// from outside needs the other ranks' traces, else "".
func aloneNote(r *audit.Analysis) string {
	if (r.WorldSize == nil || *r.WorldSize < 2) && len(r.MPICalls) > 0 {
		return fmt.Sprintf("one process of an MPI program, read alone: its MPI calls (%s) wait for ranks whose processes this trace "+
			"does not hold, so the time in them is set by those ranks; profile every rank (nsys profile ... under mpirun) to see which one",
			strings.Join(r.MPICalls, ", "))
	}
	if r.Rank == nil || r.WorldSize == nil || *r.WorldSize < 2 {
		return ""
	}
	return fmt.Sprintf("rank %d of %d, read alone: whether another rank holds this one back (a straggler, waits in collectives) "+
		"needs all %d ranks' traces (traceaudit analyze DIR, or traceaudit job rank*.json)", *r.Rank, *r.WorldSize, *r.WorldSize)
}

// stepsSummary says how many steady steps there are, their median and
// mean, where they come from and what was left out: "3 steady steps,
// median 511 ms, mean 512 ms (steps from ProfilerStep); ...". esc escapes
// the source for the output format.
func stepsSummary(s audit.StepSummary, esc func(string) string) string {
	steady := s.Steady()
	noun := "steady steps"
	if steady == 1 {
		noun = "steady step"
	}
	out := fmt.Sprintf("%d %s, median %s, mean %s (steps from %s)", steady, noun, units.Dur(s.MedianNS), units.Dur(s.MeanNS), esc(s.Source))
	if s.Source == "window" {
		out += "; the trace marks no steps, so the window is judged as one step and figures \"per step\" are per window " +
			"(to judge steps, mark them: torch.profiler with prof.step() each iteration, or an NVTX range around each iteration)"
	}
	if p := s.Precision(); p.Loose() {
		out += fmt.Sprintf("; the steps run from %s to %s, so their mean is known to ±%s (one standard error) and so is every figure "+
			"per step: record about %d steps for ±%s", units.Dur(p.MinNS), units.Dur(p.MaxNS), units.Pct(p.Share), p.WantSteps, units.Pct(audit.LooseMean))
	}
	if s.GPULag > 0 {
		out += fmt.Sprintf("; the GPU runs %s of a step behind the host, so steps follow the GPU work each host step launched", units.Pct(s.GPULag))
	}
	if s.PreWindowNS > 0 {
		out += fmt.Sprintf("; the first %s waited for GPU work queued before the profiler window and is not judged", units.Dur(s.PreWindowNS))
	}
	if s.StartupExcluded > 0 {
		out += fmt.Sprintf("; the start-up step (%s) is excluded", units.Dur(s.StartupNS))
	}
	if s.TeardownExcluded > 0 {
		out += fmt.Sprintf("; the last step (%s, the loop's end) is excluded", units.Dur(s.TeardownNS))
	}
	if s.PausedExcluded > 0 {
		out += fmt.Sprintf("; %d step(s) with a pause of a second or more (waiting for input, sleeping) excluded", s.PausedExcluded)
	}
	return out
}

func writeStepsText(p *printer, r *audit.Analysis) {
	p.line("steps: %s", stepsSummary(r.Steps, func(s string) string { return s }))
	b := r.Steps.BreakdownNS
	total := b.Total()
	comm := HasComm(r)
	if total > 0 {
		part := func(name string, v int64) string {
			return fmt.Sprintf("%s %s (%s)", name, units.Dur(v), units.Pct(float64(v)/float64(total)))
		}
		var parts []string
		for _, k := range shownBuckets(comm) {
			parts = append(parts, part(k.String(), b[k]))
		}
		p.line("each step: %s", strings.Join(parts, " | "))
	}
	if comm {
		p.line("GPU busy: kernels %s, collectives %s, copies %s, any work %s of the steady window",
			units.Pct(r.GPU.ComputeBusyShare), units.Pct(r.GPU.CommBusyShare), units.Pct(r.GPU.CopyBusyShare), units.Pct(r.GPU.BusyShare))
		return
	}
	p.line("GPU busy: kernels %s, copies %s, any work %s of the steady window",
		units.Pct(r.GPU.ComputeBusyShare), units.Pct(r.GPU.CopyBusyShare), units.Pct(r.GPU.BusyShare))
}

// HasComm reports whether the run shows collective communication: reports
// show the comm bucket only then.
func HasComm(r *audit.Analysis) bool {
	return r.GPU.CommBusyShare > 0 || r.Steps.BreakdownNS[index.Comm] > 0
}

// stepName is step i's range name, or "step N" (counted from 1) for a
// step with none.
func stepName(s audit.StepEntry, i int) string {
	if s.Name == "" {
		return fmt.Sprintf("step %d", i+1)
	}
	return s.Name
}

// stepLabel is stepName with why the step is excluded from the steady
// state, if it is: start-up, the loop's end, or a pause.
func stepLabel(s audit.StepEntry, i int) string {
	name := stepName(s, i)
	if s.Startup {
		name += " (start-up, excluded)"
	}
	if s.Teardown {
		name += " (loop end, excluded)"
	}
	if s.Paused {
		name += " (paused, excluded)"
	}
	return name
}

// shownBuckets are the buckets of the two-clock split that the step
// tables show, in order: all of them, comm only where the run communicates.
func shownBuckets(comm bool) []index.Bucket {
	out := make([]index.Bucket, 0, index.NumBuckets)
	for k := range index.NumBuckets {
		if k != index.Comm || comm {
			out = append(out, k)
		}
	}
	return out
}

// windowStart is the trace's first timestamp, from which evidence times
// are shown.
func windowStart(r *audit.Analysis) int64 { return r.WindowStartNS }

// at formats an offset from the start of the trace: "+1.234 s" ("-0.045 s"
// for a peer's time before this rank's trace began).
func at(ns int64) string {
	if ns < 0 {
		return fmt.Sprintf("-%.3f s", float64(-ns)/1e9)
	}
	return fmt.Sprintf("+%.3f s", float64(ns)/1e9)
}

// wrap breaks s into lines of at most width runes at spaces.
func wrap(s string, width int) []string {
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		words := glueUnits(strings.Fields(para))
		cur := ""
		for _, w := range words {
			if cur != "" && len([]rune(cur))+1+len([]rune(w)) > width {
				lines = append(lines, cur)
				cur = ""
			}
			if cur == "" {
				cur = w
			} else {
				cur += " " + w
			}
		}
		lines = append(lines, cur)
	}
	return lines
}

// hanging writes s wrapped at width, its first line after first and the
// others after indent.
func hanging(p *printer, first, indent, s string, width int) {
	for i, l := range wrap(s, width) {
		if i == 0 {
			p.line("%s%s", first, l)
		} else {
			p.line("%s%s", indent, l)
		}
	}
}

// units that stay on the line of the number before them ("23 %", not
// "23" at a line's end and "%" on the next).
var unitWords = map[string]bool{"%": true, "ns": true, "µs": true, "us": true, "ms": true, "s": true, "B": true, "kB": true, "KB": true,
	"MB": true, "GB": true, "KiB": true, "MiB": true, "GiB": true, "GB/s": true}

// glueUnits joins each unit word (with its trailing punctuation) to the
// number before it, so that wrap never breaks between them.
func glueUnits(words []string) []string {
	out := words[:0:0]
	for _, w := range words {
		u := strings.TrimRight(w, ",;:.)")
		if n := len(out); n > 0 && unitWords[u] && strings.IndexFunc(out[n-1][len(out[n-1])-1:], unicode.IsDigit) == 0 {
			out[n-1] += " " + w
			continue
		}
		out = append(out, w)
	}
	return out
}

// MaxSeverity is the highest severity among the reports' findings.
func MaxSeverity(reports ...*audit.Analysis) analyze.Severity {
	m := analyze.SeverityNone
	for _, r := range reports {
		for _, f := range r.Findings {
			m = max(m, f.Severity)
		}
	}
	return m
}

// figures is a finding's cost in words: its time per step, its share of
// what it is measured against (the others' step for the straggler, else
// the steady window) and its estimated speedup.
func figures(f analyze.Finding) string {
	of := "of the steady window"
	if f.ID == job.StragglerID {
		of = "of the others' step"
	}
	return fmt.Sprintf("%s per step, %s %s, est. %s if fixed", units.Dur(f.WastedNS), units.Pct(f.Share), of, units.Speedup(f.EstimatedSpeedup))
}
