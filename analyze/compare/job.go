package compare

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/internal/units"
)

// JobDiff is the `traceaudit diff --format json` object of two jobs: the
// step time of each rank, the job verdict and the straggler, before and
// after, and each rank's findings' changes. Fields may be added, never
// renamed.
type JobDiff struct {
	Before *job.Analysis `json:"before"`
	After  *job.Analysis `json:"after"`
	// StepSpeedup is the job's pace before over after: the slowest rank's
	// median step (the ranks of a job move together), 0 when unknown or
	// when a rank of either job marks no steps (see WindowSteps).
	StepSpeedup float64 `json:"step_speedup"`
	// Warnings say why the comparison may mislead.
	Warnings []string `json:"warnings"`
	// Verdict is the job verdict before and after.
	Verdict Pair `json:"verdict"`
	// Straggler is the straggler before and after, and what became of it:
	// "resolved", "new", "persisting", "moved" (another rank) or "".
	Straggler StragglerChange `json:"straggler"`
	// Job holds the changes of the job's own findings (straggler).
	Job FindingChanges `json:"job"`
	// Ranks are the ranks present in both jobs, by rank.
	Ranks []RankChange `json:"ranks"`
}

// Pair is a value before and after.
type Pair struct {
	Before string `json:"before"`
	After  string `json:"after"`
}

// StragglerChange is the straggler of each job.
type StragglerChange struct {
	Before *job.Straggler `json:"before"`
	After  *job.Straggler `json:"after"`
	Status string         `json:"status"`
}

// RankChange is one rank in both jobs.
type RankChange struct {
	Rank         int   `json:"rank"`
	BeforeStepNS int64 `json:"before_step_ns"`
	AfterStepNS  int64 `json:"after_step_ns"`
	// StepSpeedup is before over after (0 when either has no steps or
	// marks none).
	StepSpeedup float64 `json:"step_speedup"`
	// Verdict is the rank's verdict before and after.
	Verdict  Pair           `json:"verdict"`
	Findings FindingChanges `json:"findings"`
}

// CompareJobs diffs two jobs.
func CompareJobs(before, after *job.Analysis) *JobDiff {
	d := &JobDiff{Before: before, After: after, Ranks: []RankChange{},
		Verdict:   Pair{Before: before.Job.Verdict, After: after.Job.Verdict},
		Straggler: StragglerChange{Before: before.Job.Straggler, After: after.Job.Straggler},
		Job:       changesOf(before.Job.Findings, after.Job.Findings),
		Warnings:  []string{},
	}
	window := windowRanks(before, after)
	if window != "" {
		d.Warnings = append(d.Warnings, windowWhy(window))
	} else if b, a := slowest(before), slowest(after); b > 0 && a > 0 {
		d.StepSpeedup = float64(b) / float64(a)
		if w := loosePace(d.StepSpeedup, slowestRank(before, "the job before"), slowestRank(after, "the job after")); w != "" {
			d.Warnings = append(d.Warnings, w)
		}
	}
	switch sb, sa := before.Job.Straggler, after.Job.Straggler; {
	case sb != nil && sa == nil:
		d.Straggler.Status = "resolved"
	case sb == nil && sa != nil:
		d.Straggler.Status = "new"
	case sb != nil && sa != nil && sb.Rank == sa.Rank:
		d.Straggler.Status = "persisting"
	case sb != nil && sa != nil:
		d.Straggler.Status = "moved"
	}
	byRank := map[int]*job.Rank{}
	for _, r := range after.Ranks {
		byRank[*r.Rank] = r
	}
	for _, b := range before.Ranks {
		a := byRank[*b.Rank]
		if a == nil {
			continue
		}
		rc := RankChange{Rank: *b.Rank, BeforeStepNS: b.Steps.MedianNS, AfterStepNS: a.Steps.MedianNS,
			Verdict: Pair{Before: b.Verdict, After: a.Verdict}, Findings: changesOf(b.Findings, a.Findings)}
		if rc.BeforeStepNS > 0 && rc.AfterStepNS > 0 && !WindowSteps(b.Analysis) && !WindowSteps(a.Analysis) {
			rc.StepSpeedup = float64(rc.BeforeStepNS) / float64(rc.AfterStepNS)
		}
		d.Ranks = append(d.Ranks, rc)
	}
	slices.SortFunc(d.Ranks, func(x, y RankChange) int { return cmp.Compare(x.Rank, y.Rank) })
	return d
}

// windowRanks names the jobs with a rank whose steps are its window (see
// WindowSteps), with the longest such window, or "".
func windowRanks(before, after *job.Analysis) string {
	var names []string
	for _, j := range []struct {
		name string
		r    *job.Analysis
	}{{"the job before", before}, {"the job after", after}} {
		var n int
		var w int64
		for _, r := range j.r.Ranks {
			if WindowSteps(r.Analysis) {
				n++
				w = max(w, r.Steps.MedianNS)
			}
		}
		if n > 0 {
			names = append(names, fmt.Sprintf("%s (%d of %d ranks, a window of %s)", j.name, n, len(j.r.Ranks), units.Dur(w)))
		}
	}
	return strings.Join(names, " and ")
}

// slowest is the longest median step among a job's ranks.
func slowest(j *job.Analysis) int64 {
	var m int64
	for _, s := range j.Job.StepNSByRank {
		m = max(m, s)
	}
	return m
}

// slowestRank is the rank that sets job j's pace (the longest median
// step; ties: the lower rank), named for a warning.
func slowestRank(j *job.Analysis, name string) run {
	var best *job.Rank
	for _, r := range j.Ranks {
		if best == nil || r.Steps.MedianNS > best.Steps.MedianNS || (r.Steps.MedianNS == best.Steps.MedianNS && *r.Rank < *best.Rank) {
			best = r
		}
	}
	if best == nil {
		return run{}
	}
	return run{fmt.Sprintf("rank %d of %s", *best.Rank, name), best.Steps}
}

// Worst is the highest severity, after, among the new and regressed
// findings of the job and of every rank: what --fail-on tests.
func (d *JobDiff) Worst() analyze.Severity {
	w := worst(d.Job.Changes)
	for _, r := range d.Ranks {
		w = max(w, worst(r.Findings.Changes))
	}
	return w
}
