package job

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/passes/commwait"
	"github.com/traceaudit/traceaudit/internal/units"
)

// effects are findings that show a rank waiting for others, or a fact
// rather than a cost: never a straggler's cause.
var effects = map[string]bool{"comm-exposed": true, commwait.ID: true, "copy-at-peak": true}

// IsEffect reports whether findings with this ID show a rank waiting for
// others, or a fact rather than a cost: never a rank's own cause.
func IsEffect(id string) bool { return effects[id] }

// Cause is a straggler's own cause: the ID of its loudest finding that is
// not an effect of waiting, and that finding: the one whose fix the step
// model simulates the largest gain for, else the one that wastes the most
// time. gpu-idle is the symptom the other findings explain: it is the
// cause only when none of them accounts for half of its time (host work the analyzers have no name for, which
// gpu-idle's evidence names by range). Without findings it is the
// verdict's first word ("compute-bound": it has more work than the others)
// and a nil finding.
func Cause(r *audit.Analysis) (string, *analyze.Finding) {
	var best, idle *analyze.Finding
	var most int64 // the most time any of them wastes
	for i := range r.Findings {
		f := &r.Findings[i]
		switch {
		case effects[f.ID]:
		case f.ID == "gpu-idle":
			idle = f
		default:
			most = max(most, f.WastedNS)
			if best == nil || louder(f, best) {
				best = f
			}
		}
	}
	if idle != nil && (best == nil || 2*most < idle.WastedNS) {
		best = idle
	}
	if best != nil {
		return best.ID, best
	}
	return head(r.Verdict), nil
}

// louder reports whether f is a larger cause than g: by the model's
// simulated gain where both estimates come from it, else by wasted time.
func louder(f, g *analyze.Finding) bool {
	if f.EstimateSource == "model" && g.EstimateSource == "model" && f.EstimatedSpeedup != g.EstimatedSpeedup {
		return f.EstimatedSpeedup > g.EstimatedSpeedup
	}
	return f.WastedNS > g.WastedNS
}

// straggler names the rank that holds the others back: the rank with the
// largest net wait, per steady step, of the others for it (their mean wait
// for it minus its own wait for them), when both the median and the mean of
// that net over the steps reach MinStragglerShare of their median step.
// Jitter that makes each rank wait in turn cancels out in the mean, and one
// slow step moves the mean but not the median: neither names anyone. It
// reports the job's straggler finding.
func (j *Analysis) straggler(t *totals, o Options) {
	ranks := j.Ranks
	if len(ranks) < 2 || len(t.steps) == 0 {
		return
	}
	keys := make([]int, 0, len(t.steps))
	for k := range t.steps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// stats are the median and the mean of the net wait for s per step.
	stats := func(s int) (medNet, meanNet int64) {
		nets := make([]int64, 0, len(keys))
		for _, k := range keys {
			n := t.steps[k].net(s)
			meanNet += n
			nets = append(nets, n)
		}
		return median(nets), meanNet / int64(len(keys))
	}
	best := -1
	var bestMed, bestMean int64
	for s := range ranks {
		md, mn := stats(s)
		if best < 0 || min(md, mn) > min(bestMed, bestMean) {
			best, bestMed, bestMean = s, md, mn
		}
	}
	var step float64
	for i, r := range ranks {
		if i != best {
			step += float64(r.Steps.MedianNS) / float64(len(ranks)-1)
		}
	}
	if step <= 0 || float64(min(bestMed, bestMean))/step < MinStragglerShare {
		return
	}
	// The time the others wait for it per step, on the same footing as
	// each rank's own wait: their total over their steady steps, averaged.
	var ns int64
	for i, q := range ranks {
		if i != best {
			ns += t.byLast[best][i] / steadySteps(q.Analysis)
		}
	}
	ns /= int64(len(ranks) - 1)
	// Its share of the others' step is on the footing of their comm-wait
	// findings too: of their mean steady step (window over steps).
	var others float64
	for i, q := range ranks {
		if i != best {
			w := float64(q.SteadyWindowNS) / float64(steadySteps(q.Analysis))
			if w <= 0 {
				w = float64(q.Steps.MedianNS)
			}
			others += w / float64(len(ranks)-1)
		}
	}
	share := float64(ns) / others
	r := ranks[best]
	cause, cf := Cause(r.Analysis)
	j.Job.Straggler = &Straggler{Rank: *r.Rank, Device: *r.Device, PID: *r.PID, File: r.File, Cause: cause, WaitNSPerStep: ns}
	f := analyze.Finding{
		ID: StragglerID,
		Title: fmt.Sprintf("rank %d (GPU %d) arrives last at the collectives: the other ranks wait %s per step for it (%s of a step); its own cause: %s",
			*r.Rank, *r.Device, units.Dur(ns), units.Pct(share), cause),
		WastedNS:         ns,
		Share:            min(share, 1),
		EstimatedSpeedup: analyze.Speedup(share),
		Evidence:         lagEvidence(r, t.lags[best]),
		Detail: map[string]float64{"rank": float64(*r.Rank), "last_arrivals": float64(t.last[best]), "matched_collectives": float64(j.Job.MatchedCollectives),
			"net_wait_ns_median": float64(bestMed), "net_wait_ns_mean": float64(bestMean), "steps": float64(len(keys))},
		VerifyWith: []string{},
		Bound:      "none: the others stop waiting for it",
	}
	f.Severity = severity(StragglerID, f.Share, StragglerBands, o)
	if cf != nil {
		f.Fix = fmt.Sprintf("Rank %d holds every other rank back: a collective completes only when the last rank arrives. Fix rank %d's own %s "+
			"(%s per step, %s of its step): %s", *r.Rank, *r.Rank, cf.ID, units.Dur(cf.WastedNS), units.Pct(cf.Share), cf.Fix)
		if len(cf.Evidence) > 0 && cf.ID == "gpu-idle" {
			f.Fix += fmt.Sprintf(" Its longest gap: %s.", cf.Evidence[0].What)
		}
		f.Code = cf.Code
		f.VerifyWith = append(f.VerifyWith, cf.VerifyWith...)
		// The job runs at the straggler's pace: where the step model
		// simulated its fix, the job gains what that fix gains it (one
		// number for one cause); else no more than the fix saves it.
		switch {
		case cf.EstimateSource == "model":
			f.EstimatedSpeedup, f.EstimateSource = cf.EstimatedSpeedup, "model"
			f.Bound = fmt.Sprintf("the job runs at rank %d's pace: what the step model gives its %s fix", *r.Rank, cf.ID)
		case cf.EstimatedSpeedup >= 1 && cf.EstimatedSpeedup < f.EstimatedSpeedup:
			f.EstimatedSpeedup = cf.EstimatedSpeedup
			f.Bound = fmt.Sprintf("the others gain at most what fixing rank %d's %s saves it (est. %.2fx)", *r.Rank, cf.ID, cf.EstimatedSpeedup)
		}
		if also := otherCauses(r.Analysis, cf); also != "" {
			f.Fix += " Rank " + fmt.Sprint(*r.Rank) + "'s other causes, each a fix of its own: " + also + "."
		}
	} else {
		f.Fix = fmt.Sprintf("Rank %d holds every other rank back and shows no cause of its own beyond its work (%s): it has more to do per step. "+
			"Balance the work: the same batch size and sequence lengths on every rank, even shards, no rank-specific work inside the loop.", *r.Rank, r.Verdict)
		f.Code = commwait.Code
	}
	j.Job.Findings = append(j.Job.Findings, f)
}

// otherCauses lists r's findings at warning or above, other than cause and
// the effects of waiting, with their time per step and estimate.
func otherCauses(r *audit.Analysis, cause *analyze.Finding) string {
	var parts []string
	for i := range r.Findings {
		f := &r.Findings[i]
		if f.ID == cause.ID || f.ID == "gpu-idle" || effects[f.ID] || f.Severity < analyze.SeverityWarning {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (%s per step, est. %.2fx)", f.ID, units.Dur(f.WastedNS), f.EstimatedSpeedup))
	}
	return strings.Join(parts, ", ")
}

// median of v (the lower middle); v is reordered.
func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[(len(v)-1)/2]
}

// lagEvidence lists the instances where rank r came last with the longest
// waits it caused, on r's own clock: from the first rank's arrival to r's.
// Where the first rank arrived before r's trace began, the interval starts
// with r's trace, and the text says so.
func lagEvidence(r *Rank, lags []lag) []analyze.Evidence {
	c := make([]analyze.Candidate, 0, len(lags))
	for _, l := range lags {
		start := l.first - r.ClockOffsetNS
		before := ""
		if start < r.WindowStartNS {
			start, before = r.WindowStartNS, ", before this rank's trace began"
		}
		c = append(c, analyze.Candidate{Weight: l.maxWait, Evidence: analyze.Evidence{
			StartNS: start, EndNS: l.c.ArrivalNS - r.ClockOffsetNS, Track: l.c.Track,
			What: fmt.Sprintf("%s in %s: rank %d arrived %s after rank %d%s; the others waited up to %s with no compute running", describe(l.c), stepLabel(r.Analysis, l.c.Step),
				*r.Rank, units.Dur(l.c.ArrivalNS-l.first), l.firstRank, before, units.Dur(l.maxWait))}})
	}
	return analyze.TopEvidence(c, analyze.MaxEvidence)
}

// rewriteCommWait replaces rank i's one-trace comm-wait finding (or its
// not-observable entry) with the wait measured across ranks, pointing at
// the straggler's cause, and says in comm-exposed's fix what the wait is.
func rewriteCommWait(r *Rank, i int, t *totals, s *Straggler, ranks []*Rank, o Options) {
	r.Findings = slices.DeleteFunc(r.Findings, func(f analyze.Finding) bool { return f.ID == commwait.ID })
	r.NotObservable = slices.DeleteFunc(r.NotObservable, func(n analyze.NotObservable) bool { return n.ID == commwait.ID })
	total := t.own[i]
	steps := steadySteps(r.Analysis)
	per := total / steps
	r.WaitNSPerStep = per
	if total == 0 || r.SteadyWindowNS == 0 {
		return
	}
	share := min(float64(total)/float64(r.SteadyWindowNS), 1)
	bands := analyze.Bands{Warning: 0.05, Error: 0.20}
	sev := severity(commwait.ID, share, bands, o)
	if sev == analyze.SeverityInfo && share < max(o.InfoFloor, bandsOf(commwait.ID, bands, o).Warning/2) {
		return
	}
	// The rank it waited for most.
	waitedFor, most := -1, int64(-1)
	for k, row := range t.byLast {
		if k != i && row[i] > most {
			waitedFor, most = k, row[i]
		}
	}
	f := analyze.Finding{
		ID:       commwait.ID,
		Severity: sev,
		Title: fmt.Sprintf("collectives wait for other ranks %s of each step (%s per step), measured across %d ranks",
			units.Pct(share), units.Dur(per), len(ranks)),
		WastedNS:         per,
		Share:            share,
		EstimatedSpeedup: analyze.Speedup(share),
		Evidence:         waitEvidence(r, t.waits[i]),
		VerifyWith:       []string{},
		Detail:           map[string]float64{"wait_ns_per_step": float64(per), "cross_rank": 1},
		Bound:            "none: with the slowest rank fixed, no rank waits",
	}
	if waitedFor >= 0 {
		f.Detail["waited_for_rank"] = float64(*ranks[waitedFor].Rank)
	}
	if s != nil && s.Rank != *r.Rank {
		var cf *analyze.Finding
		for _, q := range ranks {
			if *q.Rank == s.Rank {
				_, cf = Cause(q.Analysis)
			}
		}
		f.Fix = fmt.Sprintf("Rank %d reaches its collectives first and waits for rank %d (GPU %d), which arrives last: its own cause is %s. "+
			"Nothing on this rank fixes the wait; fix rank %d.", *r.Rank, s.Rank, s.Device, s.Cause, s.Rank)
		f.Code = commwait.Code
		if cf != nil {
			f.Fix += " " + cf.Fix
			f.Code = cf.Code
		}
	} else {
		f.Fix = "This rank waits for its peers, but no single rank holds the others back: the last rank to arrive changes from collective " +
			"to collective (uneven work per step, jitter in the input pipeline). Give every rank the same configuration and the same amount of work per step."
		f.Code = commwait.Code
	}
	r.Findings = append(r.Findings, f)
	slices.SortStableFunc(r.Findings, func(a, b analyze.Finding) int {
		if c := cmp.Compare(b.WastedNS, a.WastedNS); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for k := range r.Findings {
		if e := &r.Findings[k]; e.ID == "comm-exposed" && e.WastedNS > 0 && float64(per) >= 0.5*float64(e.WastedNS) {
			e.Fix = fmt.Sprintf("%s of it (%s per step) is waiting for other ranks to arrive (see comm-wait), not moving data: "+
				"the fix is on the rank that arrives last; overlapping communication with compute hides only the part that moves data.",
				units.Pct(min(float64(per)/float64(e.WastedNS), 1)), units.Dur(per))
			e.Code = f.Code
			moving := max(e.WastedNS-per, 0)
			e.EstimatedSpeedup = analyze.BoundedSpeedup(r.Steps.MeanNS, e.WastedNS, moving, e.Share)
			e.Bound = fmt.Sprintf("the data the collectives move stays (%s per step): only the wait goes", units.Dur(moving))
		}
	}
}

// waitEvidence lists rank r's longest waits, on its own clock.
func waitEvidence(r *Rank, ws []wait) []analyze.Evidence {
	c := make([]analyze.Candidate, 0, len(ws))
	for _, w := range ws {
		c = append(c, analyze.Candidate{Weight: w.ns, Evidence: analyze.Evidence{
			StartNS: w.from - r.ClockOffsetNS, EndNS: w.to - r.ClockOffsetNS, Track: w.c.Track,
			What: fmt.Sprintf("%s in %s: waited %s for rank %d to arrive (%s of it with no compute running)",
				describe(w.c), stepLabel(r.Analysis, w.c.Step), units.Dur(w.to-w.from), w.lastRank, units.Dur(w.ns))}})
	}
	return analyze.TopEvidence(c, analyze.MaxEvidence)
}

// describe names a collective record: "allreduce of 2.05 MB (Float)".
func describe(c *audit.Collective) string {
	s := c.Name
	if c.Bytes > 0 {
		s += " of " + units.Bytes(c.Bytes)
	}
	if c.DType != "" {
		s += " (" + c.DType + ")"
	}
	return s
}

// stepLabel names step k of r: its range name, else "step k".
func stepLabel(r *audit.Analysis, k int) string {
	if n := stepName(r, k); n != "" {
		return n
	}
	return fmt.Sprintf("step %d", k+1)
}

// bandsOf is the bands of id: the user's, else dflt.
func bandsOf(id string, dflt analyze.Bands, o Options) analyze.Bands {
	if b, ok := o.Bands[id]; ok {
		return b
	}
	return dflt
}

// severity grades a share with id's bands.
func severity(id string, share float64, dflt analyze.Bands, o Options) analyze.Severity {
	b := bandsOf(id, dflt, o)
	switch {
	case share >= b.Error:
		return analyze.SeverityError
	case share >= b.Warning:
		return analyze.SeverityWarning
	}
	return analyze.SeverityInfo
}
