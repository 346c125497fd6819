package report

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/traceaudit/traceaudit/analyze/job"

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

// ForJobDiff is the document of a comparison of two jobs: text, Markdown
// and JSON, which its report folder holds without plots.
func ForJobDiff(d *compare.JobDiff) *Document {
	return &Document{value: d, formats: map[Format]renderer{
		Text:     asText(func(p *printer) { jobDiffText(p, d) }),
		Markdown: asMarkdown(func(p *printer, o Options) { jobDiffMarkdown(p, d, o) }),
		JSON:     asJSON(d),
	}, plots: noPlots}
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

func idList(ids []string) string {
	if len(ids) == 0 {
		return "-"
	}
	return strings.Join(ids, ", ")
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
	if len(d.Changes) > 0 {
		p.line("")
		p.line("%-20s %-32s %-32s %s", "finding", "before", "after", "status")
		for _, c := range d.Changes {
			p.line("%-20s %-32s %-32s %s", c.ID, sideText(c.Before), sideText(c.After), p.paint(c.Status, statusColor(c.Status)))
		}
	}
}

// textWarnings writes a diff's warnings, wrapped.
func textWarnings(p *printer, ws []string) {
	for _, w := range ws {
		hanging(p, "", "  ", "warning: "+w, textWidth)
	}
}

// mdWarnings writes a diff's warnings as quotes.
func mdWarnings(p *printer, ws []string) {
	for _, w := range ws {
		p.line("")
		p.line("> ⚠️ %s", mdEscape(w))
	}
}

// diffWindow says whether either run's steps are its window.
func diffWindow(d *compare.Diff) bool {
	return compare.WindowSteps(d.Before) || compare.WindowSteps(d.After)
}

// jobWindow says whether rank (-1: any rank) of either job has its window
// for steps.
func jobWindow(d *compare.JobDiff, rank int) bool {
	for _, j := range []*job.Analysis{d.Before, d.After} {
		for _, r := range j.Ranks {
			if (rank < 0 || *r.Rank == rank) && compare.WindowSteps(r.Analysis) {
				return true
			}
		}
	}
	return false
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

// stragglerText names a straggler, or "none".
func stragglerText(s *job.Straggler) string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("rank %d (%s, the others wait %s per step)", s.Rank, s.Cause, units.Dur(s.WaitNSPerStep))
}

// jobDiffText writes the terminal form of a diff of two jobs: the job's
// pace, verdict and straggler, then each rank's step time and findings.
func jobDiffText(p *printer, d *compare.JobDiff) {
	p.line("job of %d ranks -> job of %d ranks", d.Before.Job.Ranks, d.After.Job.Ranks)
	p.line("step (slowest rank): %s -> %s (%s)", units.Dur(slowestStep(d.Before)), units.Dur(slowestStep(d.After)), speedupText(d.StepSpeedup, jobWindow(d, -1)))
	p.line("verdict before: %s", d.Verdict.Before)
	p.line("verdict after:  %s", d.Verdict.After)
	p.line("straggler: %s -> %s%s", stragglerText(d.Straggler.Before), stragglerText(d.Straggler.After), statusSuffix(d.Straggler.Status))
	textWarnings(p, d.Warnings)
	p.line("")
	p.line("%-5s %-30s %-30s %-14s %s", "rank", "step before", "step after", "speedup", "findings resolved / new / regressed")
	for _, r := range d.Ranks {
		p.line("%-5d %-30s %-30s %-14s %s / %s / %s", r.Rank, units.Dur(r.BeforeStepNS)+" "+verdictHead(r.Verdict.Before),
			units.Dur(r.AfterStepNS)+" "+verdictHead(r.Verdict.After), rankSpeedup(d, r),
			idList(r.Findings.Resolved), idList(r.Findings.New), idList(r.Findings.Regressed))
	}
}

// jobDiffMarkdown writes a diff of two jobs for a pull request.
func jobDiffMarkdown(p *printer, d *compare.JobDiff, o Options) {
	p.line("## traceaudit diff: job of %d ranks → job of %d ranks", d.Before.Job.Ranks, d.After.Job.Ranks)
	p.line("")
	p.line("**Step (slowest rank) %s → %s: %s.**", units.Dur(slowestStep(d.Before)), units.Dur(slowestStep(d.After)), speedupText(d.StepSpeedup, jobWindow(d, -1)))
	p.line("")
	p.line("- verdict before: %s", mdEscape(d.Verdict.Before))
	p.line("- verdict after: %s", mdEscape(d.Verdict.After))
	p.line("- straggler: %s → %s%s", mdEscape(stragglerText(d.Straggler.Before)), mdEscape(stragglerText(d.Straggler.After)), statusSuffix(d.Straggler.Status))
	mdWarnings(p, d.Warnings)
	p.line("")
	p.line("| rank | step before | step after | speedup | resolved | new | regressed |")
	p.line("|---:|---:|---:|---:|---|---|---|")
	for _, r := range d.Ranks {
		p.line("| %d | %s (%s) | %s (%s) | %s | %s | %s | %s |", r.Rank, units.Dur(r.BeforeStepNS), mdEscape(verdictHead(r.Verdict.Before)),
			units.Dur(r.AfterStepNS), mdEscape(verdictHead(r.Verdict.After)), rankSpeedup(d, r),
			mdIDs(r.Findings.Resolved), mdIDs(r.Findings.New), mdIDs(r.Findings.Regressed))
	}
	mdPlots(p, o.Plots, false)
	mdCommand(p, o.Command)
}

// rankSpeedup says one rank's step speedup ("-" where its steps are its
// window: the job's warning says why).
func rankSpeedup(d *compare.JobDiff, r compare.RankChange) string {
	if r.StepSpeedup == 0 && jobWindow(d, r.Rank) {
		return "-"
	}
	return speedupText(r.StepSpeedup, false)
}

func statusSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// slowestStep is the longest median step among a job's ranks.
func slowestStep(j *job.Analysis) int64 {
	var m int64
	for _, s := range j.Job.StepNSByRank {
		m = max(m, s)
	}
	return m
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
