package report

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/internal/units"
)

// ForJob is the document of the ranks of one job analysed together: text,
// Markdown, JSON and HTML; its report folder shows where each rank's step
// goes.
func ForJob(j *job.Analysis) *Document {
	return &Document{value: j, formats: map[Format]renderer{
		Text:     asText(func(p *printer) { jobText(p, j) }),
		Markdown: asMarkdown(func(p *printer, o Options) { jobMarkdown(p, j, o) }),
		JSON:     asJSON(j),
		HTML:     asHTML(func() htmlPage { return jobHTML(j) }),
	}, plots: func(p Plotter) error { return p.Ranks(j) }}
}

// jobText writes the terminal report of a job: the job verdict, a table of
// the ranks (step, verdict, top finding, wait for the others), then the
// straggler finding and the straggler's own report, or, when no rank holds
// the others back, the report of a rank with the verdict most ranks share.
func jobText(p *printer, j *job.Analysis) {
	if !p.verbose {
		jobBrief(p, j)
		return
	}
	p.line("job of %s  (%s)", rankCount(j), jobFiles(j))
	p.line("%s", jobVerdictLine(j))
	p.line("")
	p.line("%-6s %-4s %-8s %-10s %-21s %-16s %s", "rank", "GPU", "pid", "mean step", "verdict", "wait per step", "top finding")
	for _, r := range j.Ranks {
		mark := ""
		if s := j.Job.Straggler; s != nil && s.Rank == *r.Rank {
			mark = " *"
		}
		p.line("%-6s %-4s %-8d %-10s %-21s %-16s %s", fmt.Sprintf("%d%s", *r.Rank, mark), device(*r.Device), *r.PID,
			units.Dur(r.Steps.MeanNS), verdictHead(r.Verdict), waitCell(r), topFinding(r.Analysis))
	}
	p.line("%s", jobLegend(j))
	focus := focusRank(j)
	if s := j.Job.Straggler; s != nil {
		findingsText(p, j.Job.Findings, focus.WindowStartNS, func(f analyze.Finding) string { return replayCommand(j, s.Rank, f) })
	} else {
		p.line("")
		p.line("no rank holds the others back: no rank makes the others wait %s of a step or more beyond what it waits for them",
			units.Pct(job.MinStragglerShare))
	}
	if focus == nil {
		return
	}
	p.line("")
	p.line("── %s ──", focusTitle(j, focus))
	p.line("%s  (%s)", filepath.Base(focus.File), focus.Format)
	p.line("%s", focus.Verdict)
	p.line("")
	writeStepsText(p, focus.Analysis)
	if len(focus.Findings) == 0 {
		p.line("")
		p.line("no findings: nothing starves the GPU beyond the info threshold")
	}
	findingsText(p, focus.Findings, focus.WindowStartNS, func(f analyze.Finding) string { return replayCommand(j, *focus.Rank, f) })
	notObservableText(p, focus.Analysis)
}

// jobBrief is the job's text in a screen: the verdict, the ranks, the
// straggler in a line (its cause and the job's gain when it is fixed),
// then the brief of the rank the report is about.
func jobBrief(p *printer, j *job.Analysis) {
	p.line("%s", fitLine(fmt.Sprintf("job of %s  (%s)", rankCount(j), jobFiles(j)), p.cols()))
	for _, l := range wrap(jobVerdictLine(j), p.cols()) {
		p.line("%s", l)
	}
	p.line("")
	p.line("%-6s %-4s %-8s %-10s %-21s %-16s %s", "rank", "GPU", "pid", "mean step", "verdict", "wait per step", "top finding")
	shown := briefRanks(j)
	for _, r := range shown {
		mark := ""
		if s := j.Job.Straggler; s != nil && s.Rank == *r.Rank {
			mark = " *"
		}
		p.line("%s", fitLine(fmt.Sprintf("%-6s %-4s %-8d %-10s %-21s %-16s %s", fmt.Sprintf("%d%s", *r.Rank, mark), device(*r.Device), *r.PID,
			units.Dur(r.Steps.MeanNS), verdictHead(r.Verdict), waitCell(r), topFinding(r.Analysis)), p.cols()))
	}
	if len(shown) < len(j.Ranks) {
		for _, l := range wrap(moreRanks(j, shown), p.cols()) {
			p.line("%s", l)
		}
	}
	for _, l := range wrap(jobLegend(j), p.cols()) {
		p.line("%s", l)
	}
	focus := focusRank(j)
	p.line("")
	if s := j.Job.Straggler; s != nil && len(j.Job.Findings) > 0 {
		f := j.Job.Findings[0]
		for _, l := range wrap(fmt.Sprintf("straggler: rank %d; the others wait %s a step for it (%s of their step); fixing its %s (below) speeds the job %s",
			s.Rank, units.Dur(s.WaitNSPerStep), units.Pct(f.Share), s.Cause, gain(f)), p.cols()) {
			p.line("%s", l)
		}
	} else {
		for _, l := range wrap(fmt.Sprintf("no rank holds the others back: no rank makes the others wait %s of a step or more beyond what it waits for them",
			units.Pct(job.MinStragglerShare)), p.cols()) {
			p.line("%s", l)
		}
	}
	if focus == nil {
		return
	}
	p.line("")
	p.line("%s", fitLine(fmt.Sprintf("── %s: %s ──", focusTitle(j, focus), filepath.Base(focus.File)), p.cols()))
	briefBody(p, focus.Analysis)
}

// MaxBriefRanks is how many ranks the brief text lists: a larger job shows
// the straggler and the ranks that wait least for the others (those the
// others wait for), and sums up the rest.
const MaxBriefRanks = 8

// briefRanks are the ranks the brief text lists, in rank order.
func briefRanks(j *job.Analysis) []*job.Rank {
	if len(j.Ranks) <= MaxBriefRanks {
		return j.Ranks
	}
	order := slices.Clone(j.Ranks)
	straggler := func(r *job.Rank) bool { return j.Job.Straggler != nil && j.Job.Straggler.Rank == *r.Rank }
	slices.SortStableFunc(order, func(a, b *job.Rank) int {
		if sa, sb := straggler(a), straggler(b); sa != sb {
			if sa {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.WaitNSPerStep, b.WaitNSPerStep); c != 0 {
			return c
		}
		return cmp.Compare(*a.Rank, *b.Rank)
	})
	order = order[:MaxBriefRanks]
	slices.SortFunc(order, func(a, b *job.Rank) int { return cmp.Compare(*a.Rank, *b.Rank) })
	return order
}

// moreRanks sums up the ranks the brief text leaves out of shown: their
// mean steps and waits, least, median and most.
func moreRanks(j *job.Analysis, shown []*job.Rank) string {
	listed := map[int]bool{}
	for _, r := range shown {
		listed[*r.Rank] = true
	}
	n := len(j.Ranks) - len(shown)
	var steps, waits []int64
	for _, r := range j.Ranks {
		if !listed[*r.Rank] {
			steps, waits = append(steps, r.Steps.MeanNS), append(waits, r.WaitNSPerStep)
		}
	}
	spread := func(v []int64) string {
		slices.Sort(v)
		return fmt.Sprintf("%s to %s (median %s)", units.Dur(v[0]), units.Dur(v[len(v)-1]), units.Dur(v[len(v)/2]))
	}
	return fmt.Sprintf("... %s not listed: mean step %s, wait per step %s; --verbose lists every rank",
		plural(n, "rank"), spread(steps), spread(waits))
}

// jobMarkdown writes a job for a pull request: verdict, ranks table,
// straggler, the focus rank's findings, the rank plot.
func jobMarkdown(p *printer, j *job.Analysis, o Options) {
	p.line("## traceaudit job: %s", mdEscape(rankCount(j)))
	p.line("")
	p.line("**%s**", mdEscape(jobVerdictLine(j)))
	p.line("")
	p.line("| rank | GPU | pid | mean step | verdict | wait per step | top finding |")
	p.line("|---:|---:|---:|---:|---|---:|---|")
	for _, r := range j.Ranks {
		rank := fmt.Sprintf("%d", *r.Rank)
		if s := j.Job.Straggler; s != nil && s.Rank == *r.Rank {
			rank = fmt.Sprintf("**%d** (straggler)", *r.Rank)
		}
		p.line("| %s | %s | %d | %s | %s | %s | %s |", rank, device(*r.Device), *r.PID, units.Dur(r.Steps.MeanNS),
			mdEscape(verdictHead(r.Verdict)), waitCell(r), mdEscape(topFinding(r.Analysis)))
	}
	p.line("")
	p.line("*%s*", mdEscape(strings.TrimPrefix(jobLegend(j), "* marks the straggler; ")))
	focus := focusRank(j)
	if s := j.Job.Straggler; s != nil {
		for _, f := range j.Job.Findings {
			findingMarkdown(p, f, focus.WindowStartNS, replayCommand(j, s.Rank, f))
		}
	} else {
		p.line("")
		p.line("No rank holds the others back: no rank makes the others wait %s of a step or more beyond what it waits for them.",
			units.Pct(job.MinStragglerShare))
	}
	mdPlots(p, o.Plots, true)
	if focus != nil {
		p.line("")
		p.line("### %s", mdEscape(focusTitle(j, focus)))
		p.line("")
		p.line("**%s**", mdEscape(focus.Verdict))
		p.line("")
		findingsTable(p, focus.Analysis)
		for _, f := range focus.Findings {
			findingMarkdown(p, f, focus.WindowStartNS, replayCommand(j, *focus.Rank, f))
		}
	}
	mdCommand(p, o.Command)
}

// jobHTML is a job's page: the ranks, the straggler finding, then the
// straggler's own findings (or those of a rank with the shared verdict).
func jobHTML(j *job.Analysis) htmlPage {
	pg := htmlPage{Title: "traceaudit job: " + rankCount(j), Verdict: jobVerdictLine(j)}
	if m := MaxJobSeverity(j); m >= analyze.SeverityWarning {
		pg.Worst = m.String()
	}
	pg.Sub = []string{jobFiles(j)}
	pg.Lead = []string{strings.TrimPrefix(jobLegend(j), "* marks the straggler; ")}
	t := htmlTable{ID: "ranks", Caption: "Ranks",
		Head: []htmlHead{txt("rank"), hnum("GPU"), hnum("pid"), hnum("mean step"), txt("verdict"), hnum("wait per step"), txt("top finding")}}
	for _, r := range j.Ranks {
		row := htmlRow{Cells: []htmlCell{ct(fmt.Sprint(*r.Rank)), cn(device(*r.Device)), cn(fmt.Sprint(*r.PID)), cn(units.Dur(r.Steps.MeanNS)),
			ct(verdictHead(r.Verdict)), cn(waitCell(r)), ct(topFinding(r.Analysis))}}
		if s := j.Job.Straggler; s != nil && s.Rank == *r.Rank {
			row.Cells[0].Text += " (straggler)"
			row.Class = "total"
		}
		t.Rows = append(t.Rows, row)
	}
	pg.Tables = append(pg.Tables, t)
	focus := focusRank(j)
	if focus == nil {
		return pg
	}
	if s := j.Job.Straggler; s != nil {
		for _, f := range j.Job.Findings {
			pg.Findings = append(pg.Findings, findingHTML(f, focus.WindowStartNS, replayCommand(j, s.Rank, f)))
		}
	} else {
		pg.Lead = append(pg.Lead, fmt.Sprintf("No rank holds the others back: no rank makes the others wait %s of a step or more beyond what it waits for them.",
			units.Pct(job.MinStragglerShare)))
	}
	pg.Lead = append(pg.Lead, focusTitle(j, focus)+": "+focus.Verdict+".")
	for _, f := range focus.Findings {
		pg.Findings = append(pg.Findings, findingHTML(f, focus.WindowStartNS, replayCommand(j, *focus.Rank, f)))
	}
	pg.NotesTitle = fmt.Sprintf("Not observable in rank %d's trace", *focus.Rank)
	for _, n := range focus.NotObservable {
		pg.Notes = append(pg.Notes, htmlNote{ID: n.ID, Text: n.Why})
	}
	return pg
}

// rankCount says how many ranks of what size: "2 ranks (world size 2)".
func rankCount(j *job.Analysis) string {
	s := fmt.Sprintf("%d ranks", j.Job.Ranks)
	if ws := j.Job.WorldSize; ws != nil && *ws != j.Job.Ranks {
		s += fmt.Sprintf(" of %d", *ws)
	}
	return s
}

// jobFiles names the job's trace files.
func jobFiles(j *job.Analysis) string {
	var names []string
	seen := map[string]bool{}
	for _, r := range j.Ranks {
		if b := filepath.Base(r.File); !seen[b] {
			seen[b] = true
			names = append(names, b)
		}
	}
	if len(names) > 3 {
		return fmt.Sprintf("%s, ... %d files", strings.Join(names[:2], ", "), len(names))
	}
	return strings.Join(names, ", ")
}

// jobVerdictLine is the job verdict, saying whose it is.
func jobVerdictLine(j *job.Analysis) string {
	if s := j.Job.Straggler; s != nil {
		return fmt.Sprintf("%s  (rank %d, which the others wait for)", j.Job.Verdict, s.Rank)
	}
	return j.Job.Verdict
}

// jobLegend explains the table.
func jobLegend(j *job.Analysis) string {
	clock := "ranks on one clock"
	if j.Job.Clock == "aligned" {
		clock = "ranks' clocks aligned by the ends of their collectives"
	}
	s := fmt.Sprintf("wait: time in collectives waiting for the other ranks, with no compute running, a mean per step as the step is; %d collectives matched across ranks, %s",
		j.Job.MatchedCollectives, clock)
	if j.Job.Straggler != nil {
		s = "* marks the straggler; " + s
	}
	return s
}

// focusRank is the rank whose findings the report details: the straggler,
// else the first rank with the job's verdict.
func focusRank(j *job.Analysis) *job.Rank {
	for _, r := range j.Ranks {
		if s := j.Job.Straggler; s != nil && s.Rank == *r.Rank {
			return r
		}
	}
	for _, r := range j.Ranks {
		if r.Verdict == j.Job.Verdict {
			return r
		}
	}
	if len(j.Ranks) > 0 {
		return j.Ranks[0]
	}
	return nil
}

func focusTitle(j *job.Analysis, r *job.Rank) string {
	if s := j.Job.Straggler; s != nil && s.Rank == *r.Rank {
		return fmt.Sprintf("rank %d, the straggler: its own findings", *r.Rank)
	}
	return fmt.Sprintf("rank %d, with the verdict most ranks share: its findings", *r.Rank)
}

// replayCommand is the command that verifies finding f on rank's replay.
func replayCommand(j *job.Analysis, rank int, f analyze.Finding) string {
	var files []string
	seen := map[string]bool{}
	for _, r := range j.Ranks {
		if !seen[r.File] {
			seen[r.File] = true
			files = append(files, r.File)
		}
	}
	return fmt.Sprintf("traceaudit replay --rank %d --variants %s %s", rank, strings.Join(f.VerifyWith, ","), strings.Join(files, " "))
}

func device(d int64) string {
	if d < 0 {
		return "-"
	}
	return fmt.Sprintf("%d", d)
}

// verdictHead is a verdict's first words ("input-bound").
func verdictHead(v string) string {
	h, _, _ := strings.Cut(v, ":")
	return h
}

// waitCell is a rank's wait for the others per step, with its share: the
// share its comm-wait finding gives (of the steady window, like every
// finding), else of its mean step.
func waitCell(r *job.Rank) string {
	if r.WaitNSPerStep == 0 {
		return units.Dur(r.WaitNSPerStep)
	}
	for _, f := range r.Findings {
		if f.ID == "comm-wait" && f.WastedNS == r.WaitNSPerStep {
			return fmt.Sprintf("%s (%s)", units.Dur(r.WaitNSPerStep), units.Pct(f.Share))
		}
	}
	if r.Steps.MeanNS == 0 {
		return units.Dur(r.WaitNSPerStep)
	}
	return fmt.Sprintf("%s (%s)", units.Dur(r.WaitNSPerStep), units.Pct(float64(r.WaitNSPerStep)/float64(r.Steps.MeanNS)))
}

// topFinding is what a rank's row shows: its own cause as job.Cause names
// it (gpu-idle only when no other finding explains half of it), or the
// effect of waiting for the others (comm-exposed, comm-wait) when that
// costs it more.
func topFinding(r *audit.Analysis) string {
	var f *analyze.Finding
	if _, cause := job.Cause(r); cause != nil {
		f = cause
	}
	for i := range r.Findings {
		// The effects of waiting (comm-exposed, comm-wait), not facts
		// such as copy-at-peak.
		if g := &r.Findings[i]; job.IsEffect(g.ID) && strings.HasPrefix(g.ID, "comm-") && (f == nil || g.WastedNS > f.WastedNS) {
			f = g
		}
	}
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%s %s (%s)", f.ID, units.Dur(f.WastedNS), units.Pct(f.Share))
}

// MaxJobSeverity is the highest severity among a job's findings and its
// ranks'.
func MaxJobSeverity(j *job.Analysis) analyze.Severity {
	m := analyze.SeverityNone
	for _, f := range j.Job.Findings {
		m = max(m, f.Severity)
	}
	for _, r := range j.Ranks {
		m = max(m, MaxSeverity(r.Analysis))
	}
	return m
}
