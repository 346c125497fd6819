// Package job is the reduce of a multi-rank analysis: from each rank's
// analyze object (audit.Analysis, as `traceaudit analyze --format json`
// prints it, or as analysed in memory) it builds the job document of
// design.md: the ranks on one clock, each collective instance matched
// across ranks, each rank's wait for its peers (its comm-wait finding,
// measured from arrival times), the straggler with its own cause, the job
// verdict and the step time per rank.
//
// The reduce reads only what the analyze JSON holds, so reducing per-rank
// JSON files (`traceaudit job rank*.json`) gives the same document as
// analysing the traces together.
package job

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/model"
)

// Analysis is the job document: the analysis of all ranks of one job. Fields may be added, never renamed.
type Analysis struct {
	Job   Summary `json:"job"`
	Ranks []*Rank `json:"ranks"`
}

// Summary is the job as a whole.
type Summary struct {
	// Ranks is the number of ranks analysed; WorldSize the job's size as
	// the inputs record it (nil: unknown).
	Ranks     int  `json:"ranks"`
	WorldSize *int `json:"world_size"`
	// Verdict is the straggler's verdict when there is one, else the
	// verdict most ranks share.
	Verdict string `json:"verdict"`
	// Straggler is the rank the others wait for, nil when they wait less
	// than MinStragglerShare of a step for any one rank.
	Straggler *Straggler `json:"straggler"`
	// Findings are the job's own findings (straggler).
	Findings []analyze.Finding `json:"findings"`
	// StepNSByRank is each rank's median steady step, in rank order.
	StepNSByRank []int64 `json:"step_ns_by_rank"`
	// Clock says how the ranks' times were put on one clock: "shared" (one
	// host, or one export) or "aligned" (shifted so that matched
	// collectives end together; see each rank's clock_offset_ns).
	Clock string `json:"clock"`
	// MatchedCollectives counts the collective instances seen on two ranks
	// or more.
	MatchedCollectives int `json:"matched_collectives"`
	// Model is the job's step model: the pace of its slowest rank and the
	// job's fixes (nil where a rank has no faithful model).
	Model *Model `json:"model"`
}

// Model is the step model of a job: it runs at the pace of its slowest
// rank's simulated step.
type Model struct {
	// StepNS is the slowest rank's simulated step, the straggler's where
	// there is one (the profiler's cost taken out).
	StepNS int64 `json:"step_ns"`
	// Fixes are the job-level fixes the model simulates: straggler.
	Fixes []model.Fix `json:"fixes"`
}

// Straggler is the rank that arrives last at the collectives most often.
type Straggler struct {
	Rank   int    `json:"rank"`
	Device int64  `json:"device"`
	PID    int64  `json:"pid"`
	File   string `json:"file"`
	// Cause is the ID of its own loudest finding (not a symptom such as
	// gpu-idle or its own collectives), else its verdict's first word.
	Cause string `json:"cause"`
	// WaitNSPerStep is the time the other ranks wait for it per step
	// (their mean).
	WaitNSPerStep int64 `json:"wait_ns_per_step"`
}

// Rank is one rank's analyze object with its place in the job.
type Rank struct {
	*audit.Analysis
	// WaitNSPerStep is the time this rank waits for its peers in
	// collectives, per steady step (its comm-wait).
	WaitNSPerStep int64 `json:"wait_ns_per_step"`
	// ClockOffsetNS was added to this rank's times to put it on the job's
	// clock.
	ClockOffsetNS int64 `json:"clock_offset_ns"`
}

// Thresholds.
const (
	// MinStragglerShare: a rank is a straggler when the others wait for it
	// at least this share of a step (design.md: 5 %).
	MinStragglerShare = 0.05
	// AlignTolerance: clocks whose matched collectives end within this of
	// each other are one clock.
	AlignTolerance = 50_000
	// StragglerID is the job finding's ID.
	StragglerID = "straggler"
)

// StragglerBands are the straggler finding's severity bands.
var StragglerBands = analyze.Bands{Warning: 0.05, Error: 0.20}

// Options tune the reduce.
type Options struct {
	// Bands overrides severity bands per finding ID (--band).
	Bands map[string]analyze.Bands
	// InfoFloor is the smallest share listed as an info finding
	// (analyze.Config.InfoFloor).
	InfoFloor float64
}

// ErrNotJob is returned for inputs that cannot be one job.
var ErrNotJob = errors.New("not one job")

// Reduce builds the job document from the ranks' analyze objects, which it
// takes over (their collectives move to the job's clock, their comm-wait
// findings are replaced). Ranks without a recorded rank take their
// position in reports. Cost: O(c log c) in collectives over all ranks.
func Reduce(reports []*audit.Analysis, o Options) (*Analysis, error) {
	if len(reports) == 0 {
		return nil, fmt.Errorf("%w: no ranks", ErrNotJob)
	}
	ranks := make([]*Rank, len(reports))
	seen := map[int]string{}
	for i, r := range reports {
		if r.Rank == nil {
			n := i
			r.Rank = &n
		}
		if prev, dup := seen[*r.Rank]; dup {
			return nil, fmt.Errorf("%w: %s and %s are both rank %d", ErrNotJob, prev, r.File, *r.Rank)
		}
		seen[*r.Rank] = r.File
		if r.Device == nil {
			d := int64(-1)
			r.Device = &d
		}
		if r.PID == nil {
			p := int64(0)
			r.PID = &p
		}
		ranks[i] = &Rank{Analysis: r}
	}
	slices.SortFunc(ranks, func(a, b *Rank) int { return cmp.Compare(*a.Rank, *b.Rank) })
	j := &Analysis{Ranks: ranks}
	j.Job.Ranks = len(ranks)
	j.Job.Findings = []analyze.Finding{}
	for _, r := range ranks {
		j.Job.StepNSByRank = append(j.Job.StepNSByRank, r.Steps.MedianNS)
		if r.WorldSize != nil && j.Job.WorldSize == nil {
			ws := *r.WorldSize
			j.Job.WorldSize = &ws
		}
	}
	inst, bySeq := match(ranks)
	j.Job.Clock = align(ranks, inst)
	if !bySeq {
		inst = rematch(ranks, inst)
	}
	j.Job.MatchedCollectives = len(inst)
	w := waits(ranks, inst)
	j.straggler(w, o)
	for i, r := range ranks {
		rewriteCommWait(r, i, w, j.Job.Straggler, ranks, o)
	}
	j.Job.Verdict = j.verdict()
	j.Job.Model = j.stepModel()
	for i := range j.Job.Findings {
		// One number: the straggler's estimate is the job model's.
		if f := &j.Job.Findings[i]; f.ID == StragglerID && j.Job.Model != nil {
			for _, x := range j.Job.Model.Fixes {
				if x.Name == StragglerID {
					f.EstimatedSpeedup, f.EstimateSource = x.Speedup, "model"
				}
			}
		}
	}
	return j, nil
}

// stepModel is the job's model: the slowest rank's simulated step (the
// straggler's, where there is one), and with the straggler's cause fixed,
// the straggler's simulated fixed step:
// the others waited for it most of their step, and the model takes their
// own work to fit under its fixed step (their step less the wait measured
// in collectives misses their waits outside them; docs/step-model.md).
// Nil when a rank has no faithful model.
func (j *Analysis) stepModel() *Model {
	var slow int64
	for _, r := range j.Ranks {
		if !r.Model.Faithful() {
			return nil
		}
		slow = max(slow, r.Model.StepNS)
	}
	m := &Model{StepNS: slow, Fixes: []model.Fix{}}
	s := j.Job.Straggler
	if s == nil {
		return m
	}
	for _, r := range j.Ranks {
		if r.Rank == nil || *r.Rank != s.Rank {
			continue
		}
		_, cf := Cause(r.Analysis)
		if cf == nil || cf.EstimateSource != "model" {
			return m
		}
		// The others wait for the straggler: the job runs at its pace.
		m.StepNS = r.Model.StepNS
		step := max(int64(float64(r.Model.StepNS)/cf.EstimatedSpeedup), 1)
		m.Fixes = append(m.Fixes, model.Fix{Name: StragglerID, StepNS: step, Speedup: cf.EstimatedSpeedup, Finding: StragglerID})
	}
	return m
}

// verdict is the straggler's verdict, else the verdict (by its first
// word) most ranks share; ties go to the lower rank.
func (j *Analysis) verdict() string {
	if s := j.Job.Straggler; s != nil {
		for _, r := range j.Ranks {
			if *r.Rank == s.Rank {
				return r.Verdict
			}
		}
	}
	count := map[string]int{}
	best := ""
	for _, r := range j.Ranks {
		h := head(r.Verdict)
		count[h]++
		if best == "" || count[h] > count[head(best)] {
			best = r.Verdict
		}
	}
	return best
}

// head is a verdict's text before ':'.
func head(v string) string {
	h, _, _ := strings.Cut(v, ":")
	return h
}

// steadyStep reports whether step k of r is steady.
func steadyStep(r *audit.Analysis, k int) bool {
	if k < 0 || k >= len(r.Steps.PerStep) {
		return false
	}
	s := r.Steps.PerStep[k]
	return !s.Startup && !s.Teardown
}

// steadySteps counts r's steady steps (at least 1).
func steadySteps(r *audit.Analysis) int64 {
	n := int64(0)
	for k := range r.Steps.PerStep {
		if steadyStep(r, k) {
			n++
		}
	}
	return max(n, 1)
}
