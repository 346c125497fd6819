package report

import (
	"fmt"

	"github.com/traceaudit/traceaudit/analyze/compare"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/internal/units"
)

// ForJobDiff is the document of a comparison of two jobs: text, Markdown
// and JSON, which its report folder holds without plots.
func ForJobDiff(d *compare.JobDiff) *Document {
	return &Document{value: d, formats: map[Format]renderer{
		Text:     asText(func(p *printer) { jobDiffText(p, d) }),
		Markdown: asMarkdown(func(p *printer, o Options) { jobDiffMarkdown(p, d, o) }),
		JSON:     asJSON(d),
	}, plots: noPlots}
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

// stragglerText names a straggler, or "none".
func stragglerText(s *job.Straggler) string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("rank %d (%s, the others wait %s per step)", s.Rank, s.Cause, units.Dur(s.WaitNSPerStep))
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
