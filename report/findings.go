package report

import (
	"fmt"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/internal/units"
)

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
		for _, l := range wrap(f.Title, p.cols()-3) {
			p.line("   %s", l)
		}
		for _, l := range wrap("fix: "+f.Fix, p.cols()-3) {
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
				for _, l := range wrap(e.What, p.cols()-8) {
					p.line("        %s", l)
				}
			}
		}
		if len(f.VerifyWith) > 0 {
			p.line("   verify on a GPU: %s", verify(f))
		}
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

// findingHTML is one finding for the page: its figures, fix, code,
// evidence (times from origin) and the replay command that verifies it.
func findingHTML(f analyze.Finding, origin int64, verify string) htmlFinding {
	hf := htmlFinding{ID: f.ID, Severity: f.Severity.String(), Title: f.Title, Fix: f.Fix, Code: f.Code}
	if f.WastedNS > 0 {
		hf.Figures = figures(f)
	} else {
		hf.Figures = "informational: no time wasted"
	}
	for _, e := range f.Evidence {
		hf.Evidence = append(hf.Evidence, htmlEvidence{At: at(e.StartNS - origin), Length: units.Dur(e.EndNS - e.StartNS), Track: e.Track, What: e.What})
	}
	if len(f.VerifyWith) > 0 {
		hf.Verify = verify
	}
	return hf
}

// figures is a finding's cost in words: its time per step, its share of
// what it is measured against (the others' step for the straggler, else
// the steady window) and its estimated speedup ("at most" for a bound
// where the step model ran).
func figures(f analyze.Finding) string {
	of := "of the steady window"
	if f.ID == job.StragglerID {
		of = "of the others' step"
	}
	est := "est."
	if f.EstimateSource == "bound" {
		est = "est. at most" // the step model had no simulation of it: the bound stands
	}
	return fmt.Sprintf("%s per step, %s %s, %s %s if fixed", units.Dur(f.WastedNS), units.Pct(f.Share), of, est, units.Speedup(f.EstimatedSpeedup))
}

// at formats an offset from the start of the trace: "+1.234 s" ("-0.045 s"
// for a peer's time before this rank's trace began).
func at(ns int64) string {
	if ns < 0 {
		return fmt.Sprintf("-%.3f s", float64(-ns)/1e9)
	}
	return fmt.Sprintf("+%.3f s", float64(ns)/1e9)
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
