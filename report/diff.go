package report

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/compare"
	"github.com/traceaudit/traceaudit/internal/units"
)

// ForDiff is the document of a comparison of two traces: text, Markdown,
// JSON and HTML; its report folder shows the step split before and after.
func ForDiff(d *compare.Diff) *Document {
	return &Document{value: d, formats: map[Format]renderer{
		Text:     asText(func(p *printer) { diffText(p, d) }),
		Markdown: asMarkdown(func(p *printer, o Options) { diffMarkdown(p, d, o) }),
		JSON:     asJSON(d),
		HTML:     asHTML(func() htmlPage { return diffHTML(d) }),
	}, plots: func(p Plotter) error { return p.StepsDiff(d.Before, d.After) }}
}

// diffText writes the terminal form of a diff.
func diffText(p *printer, d *compare.Diff) {
	p.line("%s -> %s", filepath.Base(d.Before.File), filepath.Base(d.After.File))
	p.line("step: %s -> %s (%s)", units.Dur(d.Before.Steps.MedianNS), units.Dur(d.After.Steps.MedianNS), speedupText(d.StepSpeedup, diffWindow(d)))
	p.line("before: %s", d.Before.Verdict)
	p.line("after:  %s", d.After.Verdict)
	textWarnings(p, d.Warnings)
	p.line("")
	p.line("resolved:   %s", idList(d.Resolved))
	p.line("new:        %s", idList(d.New))
	p.line("regressed:  %s", idList(d.Regressed))
	p.line("persisting: %s", idList(d.Persisting))
	if len(d.Resolved)+len(d.New)+len(d.Regressed) == 0 {
		p.line("no change: no finding resolved, new or regressed")
	}
	if len(d.Changes) > 0 {
		p.line("")
		p.line("%-20s %-32s %-32s %s", "finding", "before", "after", "status")
		for _, c := range d.Changes {
			p.line("%-20s %-32s %-32s %s", c.ID, sideText(c.Before), sideText(c.After), p.paint(c.Status, statusColor(c.Status)))
		}
	}
}

// diffMarkdown writes a diff for a pull request comment.
func diffMarkdown(p *printer, d *compare.Diff, o Options) {
	p.line("## traceaudit diff: %s → %s", mdEscape(filepath.Base(d.Before.File)), mdEscape(filepath.Base(d.After.File)))
	p.line("")
	p.line("**Step %s → %s: %s.**", units.Dur(d.Before.Steps.MedianNS), units.Dur(d.After.Steps.MedianNS), speedupText(d.StepSpeedup, diffWindow(d)))
	p.line("")
	p.line("- before: %s", mdEscape(d.Before.Verdict))
	p.line("- after: %s", mdEscape(d.After.Verdict))
	mdWarnings(p, d.Warnings)
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
	for _, c := range diffCharts(d) {
		mermaidBlock(p, c)
	}
	mdPlots(p, o.Plots, false)
	mdCommand(p, o.Command)
}

func diffHTML(d *compare.Diff) htmlPage {
	pg := htmlPage{Title: "traceaudit diff: " + filepath.Base(d.Before.File) + " → " + filepath.Base(d.After.File),
		Verdict: fmt.Sprintf("Step %s → %s: %s", units.Dur(d.Before.Steps.MedianNS), units.Dur(d.After.Steps.MedianNS), speedupText(d.StepSpeedup, diffWindow(d)))}
	if d.Worst() >= analyze.SeverityWarning {
		pg.Worst = d.Worst().String()
	}
	pg.Lead = []string{"Before: " + d.Before.Verdict, "After: " + d.After.Verdict}
	for _, w := range d.Warnings {
		pg.Lead = append(pg.Lead, "Warning: "+w)
	}
	t := htmlTable{ID: "changes", Caption: "Findings before and after", Head: []htmlHead{txt("finding"), txt("before"), txt("after"), txt("status")}}
	for _, c := range d.Changes {
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{ct(c.ID), ct(sideText(c.Before)), ct(sideText(c.After)), {Text: c.Status, Class: "status-" + c.Status}}})
	}
	pg.Tables = append(pg.Tables, t)
	return pg
}

// diffCharts compare the median step before and after.
func diffCharts(d *compare.Diff) [][]string {
	bs, as := d.Before.Steps.MedianNS, d.After.Steps.MedianNS
	if bs <= 0 && as <= 0 {
		return nil
	}
	unit, div := timeUnit(max(bs, as))
	return [][]string{mermaidBars("Median step ("+unit+")", unit, []string{"before", "after"},
		[]float64{float64(bs) / div, float64(as) / div}, false)}
}

func sideText(s compare.Side) string {
	if s.Severity == 0 {
		return "-"
	}
	return fmt.Sprintf("%s %s (%s/step)", s.Severity, units.Pct(s.Share), units.Dur(s.WastedNS))
}

// speedupText says a step speedup; window: a run's steps are its whole
// window (compare.WindowSteps), so 0 means no step markers.
func speedupText(x float64, window bool) string {
	switch {
	case x == 0 && window:
		return "no step speedup: no step markers"
	case x == 0:
		return "no steady steps to compare"
	case x >= 1:
		return fmt.Sprintf("%s faster", units.Speedup(x))
	}
	return fmt.Sprintf("%s slower", units.Speedup(1/x))
}

// diffWindow says whether either run's steps are its window.
func diffWindow(d *compare.Diff) bool {
	return compare.WindowSteps(d.Before) || compare.WindowSteps(d.After)
}

func idList(ids []string) string {
	if len(ids) == 0 {
		return "-"
	}
	return strings.Join(ids, ", ")
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

// textWarnings writes a diff's warnings, wrapped.
func textWarnings(p *printer, ws []string) {
	for _, w := range ws {
		hanging(p, "", "  ", "warning: "+w, p.cols())
	}
}

// mdWarnings writes a diff's warnings as quotes.
func mdWarnings(p *printer, ws []string) {
	for _, w := range ws {
		p.line("")
		p.line("> ⚠️ %s", mdEscape(w))
	}
}

// statusColor is the colour of a diff status: what got worse in red, what
// got fixed in green.
func statusColor(status string) string {
	switch status {
	case "new", "regressed":
		return ansiRed
	case "resolved":
		return ansiGreen
	}
	return ""
}
