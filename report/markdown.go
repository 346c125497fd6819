package report

import (
	"path/filepath"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/internal/units"
)

// analyzeMarkdown writes a report that reads well on GitHub: verdict,
// findings table, per-step split, each finding's fix and code, plots, what
// the trace could not show, and the command that produced it.
func analyzeMarkdown(p *printer, r *audit.Analysis, o Options) {
	p.line("## traceaudit: %s", mdEscape(filepath.Base(r.File)))
	p.line("")
	if n := aloneNote(r); n != "" {
		p.line("> %s", mdEscape(n))
		p.line("")
	}
	p.line("**%s**", mdEscape(r.Verdict))
	p.line("")
	s := r.Steps
	sum := stepsSummary(s, mdEscape)
	if HasComm(r) {
		p.line("%s. GPU busy in the steady state: kernels %s, collectives %s, copies %s.", sum, units.Pct(r.GPU.ComputeBusyShare), units.Pct(r.GPU.CommBusyShare), units.Pct(r.GPU.CopyBusyShare))
	} else {
		p.line("%s. GPU busy in the steady state: kernels %s, copies %s.", sum, units.Pct(r.GPU.ComputeBusyShare), units.Pct(r.GPU.CopyBusyShare))
	}
	p.line("")
	findingsTable(p, r)
	p.line("")
	writeStepTable(p, r)
	for _, c := range analyzeCharts(r) {
		mermaidBlock(p, c)
	}
	for _, f := range r.Findings {
		findingMarkdown(p, f, windowStart(r), "traceaudit replay --variants "+strings.Join(f.VerifyWith, ",")+" "+filepath.Base(r.File))
	}
	mdPlots(p, o.Plots, true)
	if len(r.NotObservable) > 0 {
		p.line("")
		p.line("### Not observable in this trace")
		p.line("")
		for _, n := range r.NotObservable {
			p.line("- `%s`: %s", n.ID, mdEscape(n.Why))
		}
	}
	mdCommand(p, o.Command)
}

// findingsTable is the one-line-per-finding summary table.
func findingsTable(p *printer, r *audit.Analysis) {
	if len(r.Findings) == 0 {
		p.line("No findings: nothing starves the GPU beyond the info threshold.")
		return
	}
	p.line("| | finding | wasted per step | share | est. speedup | fix |")
	p.line("|---|---|---:|---:|---:|---|")
	for _, f := range r.Findings {
		p.line("| %s | `%s` %s | %s | %s | %s | %s |", severityIcon(f.Severity.String()), f.ID, mdEscape(f.Title),
			units.Dur(f.WastedNS), units.Pct(f.Share), units.Speedup(f.EstimatedSpeedup), mdEscape(firstSentence(f.Fix)))
	}
}

// findingMarkdown details one finding: fix, code, evidence (times from
// origin) and the replay command that verifies it.
func findingMarkdown(p *printer, f analyze.Finding, origin int64, verify string) {
	p.line("")
	p.line("### `%s` (%s): %s", f.ID, f.Severity, mdEscape(f.Title))
	p.line("")
	p.line("%s", mdEscape(f.Fix))
	if f.Code != "" {
		fence := codeFence(f.Code)
		p.line("")
		p.line("%spython", styled(fence))
		p.line("%s", f.Code)
		p.line("%s", styled(fence))
	}
	if len(f.Evidence) > 0 {
		p.line("")
		p.line("<details><summary>Evidence (%d)</summary>", len(f.Evidence))
		p.line("")
		p.line("| at | length | track | what |")
		p.line("|---:|---:|---|---|")
		for _, e := range f.Evidence {
			p.line("| %s | %s | %s | %s |", at(e.StartNS-origin), units.Dur(e.EndNS-e.StartNS), styled(mdCode(e.Track, true)), mdEscape(e.What))
		}
		p.line("")
		p.line("</details>")
	}
	if len(f.VerifyWith) > 0 {
		p.line("")
		p.line("Verify on a GPU: %s", styled(mdCode(verify, false)))
	}
}

// mdPlots embeds plots with their captions, each under a heading when
// headings is set.
func mdPlots(p *printer, plots []Plot, headings bool) {
	for _, pl := range plots {
		p.line("")
		if headings {
			p.line("### %s", mdEscape(pl.Title))
			p.line("")
		}
		p.line("![%s](%s)", mdEscape(pl.Title), pl.File)
		p.line("")
		p.line("*%s*", mdEscape(pl.Caption))
	}
}

// mdCommand quotes the command line that produced a report.
func mdCommand(p *printer, command string) {
	if command != "" {
		p.line("")
		p.line("<sub>Produced by %s</sub>", styled(mdCode(command, false)))
	}
}

func writeStepTable(p *printer, r *audit.Analysis) {
	if len(r.Steps.PerStep) == 0 {
		return
	}
	comm := HasComm(r)
	cells := func(b index.Breakdown) string {
		var v []string
		for _, k := range shownBuckets(comm) {
			v = append(v, units.Dur(b[k]))
		}
		return strings.Join(v, " | ")
	}
	if comm {
		p.line("| step | length | compute | comm | copy | sync | os | data | other |")
		p.line("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	} else {
		p.line("| step | length | compute | copy | sync | os | data | other |")
		p.line("|---|---:|---:|---:|---:|---:|---:|---:|")
	}
	for i, s := range r.Steps.PerStep {
		p.line("| %s | %s | %s |", mdEscape(stepLabel(s, i)), units.Dur(s.EndNS-s.StartNS), cells(s.BreakdownNS))
	}
	b := r.Steps.BreakdownNS
	p.line("| **mean steady step** | **%s** | %s |", units.Dur(b.Total()), cells(b))
}

func severityIcon(s string) string {
	switch s {
	case "error":
		return "🔴 error"
	case "warning":
		return "🟠 warning"
	}
	return "🔵 info"
}

// firstSentence is the text up to the first ". ".
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i+1]
	}
	return s
}
