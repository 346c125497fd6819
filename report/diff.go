package report

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/traceaudit/traceaudit/analyze/compare"
	"github.com/traceaudit/traceaudit/internal/units"
)

func sideText(s compare.Side) string {
	if s.Severity == 0 {
		return "-"
	}
	return fmt.Sprintf("%s %s (%s/step)", s.Severity, units.Pct(s.Share), units.Dur(s.WastedNS))
}

func speedupText(x float64) string {
	switch {
	case x == 0:
		return "no steady steps to compare"
	case x >= 1:
		return fmt.Sprintf("%s faster", units.Speedup(x))
	}
	return fmt.Sprintf("%s slower", units.Speedup(1/x))
}

func idList(ids []string) string {
	if len(ids) == 0 {
		return "-"
	}
	return strings.Join(ids, ", ")
}

// diffText writes the terminal form of a diff.
func diffText(p *printer, d *compare.Diff) {
	p.line("%s -> %s", filepath.Base(d.Before.File), filepath.Base(d.After.File))
	p.line("step: %s -> %s (%s)", units.Dur(d.Before.Steps.MedianNS), units.Dur(d.After.Steps.MedianNS), speedupText(d.StepSpeedup))
	p.line("before: %s", d.Before.Verdict)
	p.line("after:  %s", d.After.Verdict)
	p.line("")
	p.line("resolved:   %s", idList(d.Resolved))
	p.line("new:        %s", idList(d.New))
	p.line("regressed:  %s", idList(d.Regressed))
	p.line("persisting: %s", idList(d.Persisting))
	if len(d.Changes) > 0 {
		p.line("")
		p.line("%-20s %-32s %-32s %s", "finding", "before", "after", "status")
		for _, c := range d.Changes {
			p.line("%-20s %-32s %-32s %s", c.ID, sideText(c.Before), sideText(c.After), c.Status)
		}
	}
}

// diffMarkdown writes a diff for a pull request comment.
func diffMarkdown(p *printer, d *compare.Diff, o Options) {
	p.line("## traceaudit diff: %s → %s", mdEscape(filepath.Base(d.Before.File)), mdEscape(filepath.Base(d.After.File)))
	p.line("")
	p.line("**Step %s → %s: %s.**", units.Dur(d.Before.Steps.MedianNS), units.Dur(d.After.Steps.MedianNS), speedupText(d.StepSpeedup))
	p.line("")
	p.line("- before: %s", mdEscape(d.Before.Verdict))
	p.line("- after: %s", mdEscape(d.After.Verdict))
	p.line("")
	p.line("| | findings |")
	p.line("|---|---|")
	p.line("| ✅ resolved | %s |", mdIDs(d.Resolved))
	p.line("| 🆕 new | %s |", mdIDs(d.New))
	p.line("| 📈 regressed | %s |", mdIDs(d.Regressed))
	p.line("| ⏸ persisting | %s |", mdIDs(d.Persisting))
	if len(d.Changes) > 0 {
		p.line("")
		p.line("| finding | before | after | status |")
		p.line("|---|---|---|---|")
		for _, c := range d.Changes {
			p.line("| `%s` | %s | %s | %s |", c.ID, sideText(c.Before), sideText(c.After), c.Status)
		}
	}
	mdPlots(p, o.Plots, false)
	mdCommand(p, o.Command)
}

func mdIDs(ids []string) string {
	if len(ids) == 0 {
		return "-"
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "`" + id + "`"
	}
	return strings.Join(out, ", ")
}
