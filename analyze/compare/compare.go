// Package compare diffs the analyses of two runs, as `traceaudit diff`
// reports them: the step speedup and which findings were resolved, are
// new, persist or regressed (design.md's diff contract).
package compare

import (
	"math"
	"slices"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
)

// Diff is the `traceaudit diff --format json` object. Fields may be added,
// never renamed.
type Diff struct {
	Before *audit.Analysis `json:"before"`
	After  *audit.Analysis `json:"after"`
	// StepSpeedup is before.steps.median_ns / after.steps.median_ns (0 when
	// either has no steady steps, or no step markers: see WindowSteps).
	StepSpeedup float64 `json:"step_speedup"`
	// The four lists hold finding IDs at warning or error, sorted.
	Resolved   []string `json:"resolved"`
	New        []string `json:"new"`
	Persisting []string `json:"persisting"`
	Regressed  []string `json:"regressed"`
	// Changes lists every finding of either run, before and after.
	Changes []Change `json:"changes"`
	// Similarity says how much the two runs share (kernel names, step
	// ranges, GPU models).
	Similarity Similarity `json:"similarity"`
	// Warnings say why the comparison may mislead: runs that share too
	// little to be two versions of one program.
	Warnings []string `json:"warnings"`
}

// Side is a finding's state in one run (Severity "none" when absent).
type Side struct {
	Severity analyze.Severity `json:"severity"`
	Share    float64          `json:"share"`
	WastedNS int64            `json:"wasted_ns"`
}

// Change is one finding in both runs.
type Change struct {
	ID     string `json:"id"`
	Before Side   `json:"before"`
	After  Side   `json:"after"`
	// Status is "resolved", "new" (absent before), "persisting",
	// "regressed" (its severity or share rose, info to warning included)
	// or "info" (below warning in both).
	Status string `json:"status"`
}

// Noise is the share change below which a persisting finding did not
// regress: max(MinNoise, NoiseFraction × the before share).
const (
	MinNoise      = 0.02
	NoiseFraction = 0.10
)

// Compare diffs two analyses.
func Compare(before, after *audit.Analysis) *Diff {
	d := &Diff{Before: before, After: after, Resolved: []string{}, New: []string{}, Persisting: []string{}, Regressed: []string{}, Changes: []Change{},
		Warnings: []string{}}
	var warn string
	if d.Similarity, warn = similarity(before, after); warn != "" {
		d.Warnings = append(d.Warnings, warn)
	}
	if w := windowWarning(before, after); w != "" {
		d.Warnings = append(d.Warnings, w)
	} else if before.Steps.MedianNS > 0 && after.Steps.MedianNS > 0 {
		d.StepSpeedup = float64(before.Steps.MedianNS) / float64(after.Steps.MedianNS)
		if w := precisionWarning(before, after, d.StepSpeedup); w != "" {
			d.Warnings = append(d.Warnings, w)
		}
	}
	fc := changesOf(before.Findings, after.Findings)
	d.Resolved, d.New, d.Persisting, d.Regressed, d.Changes = fc.Resolved, fc.New, fc.Persisting, fc.Regressed, fc.Changes
	return d
}

// FindingChanges sorts the findings of two runs: IDs at warning or error
// resolved, new, persisting or regressed, and every finding's change.
type FindingChanges struct {
	Resolved   []string `json:"resolved"`
	New        []string `json:"new"`
	Persisting []string `json:"persisting"`
	Regressed  []string `json:"regressed"`
	Changes    []Change `json:"changes"`
}

// changesOf compares two runs' findings.
func changesOf(before, after []analyze.Finding) FindingChanges {
	fc := FindingChanges{Resolved: []string{}, New: []string{}, Persisting: []string{}, Regressed: []string{}, Changes: []Change{}}
	b, a := sides(before), sides(after)
	ids := map[string]bool{}
	for id := range b {
		ids[id] = true
	}
	for id := range a {
		ids[id] = true
	}
	var sorted []string
	for id := range ids {
		sorted = append(sorted, id)
	}
	slices.Sort(sorted)
	for _, id := range sorted {
		c := Change{ID: id, Before: b[id], After: a[id]}
		c.Status = status(c.Before, c.After)
		switch c.Status {
		case "resolved":
			fc.Resolved = append(fc.Resolved, id)
		case "new":
			fc.New = append(fc.New, id)
		case "persisting":
			fc.Persisting = append(fc.Persisting, id)
		case "regressed":
			fc.Regressed = append(fc.Regressed, id)
		}
		fc.Changes = append(fc.Changes, c)
	}
	return fc
}

// worst is the highest after-severity among new and regressed findings.
func worst(cs []Change) analyze.Severity {
	w := analyze.SeverityNone
	for _, c := range cs {
		if c.Status == "new" || c.Status == "regressed" {
			w = max(w, c.After.Severity)
		}
	}
	return w
}

func sides(fs []analyze.Finding) map[string]Side {
	m := map[string]Side{}
	for _, f := range fs {
		m[f.ID] = Side{Severity: f.Severity, Share: f.Share, WastedNS: f.WastedNS}
	}
	return m
}

func status(b, a Side) string {
	bw, aw := b.Severity >= analyze.SeverityWarning, a.Severity >= analyze.SeverityWarning
	switch {
	case bw && !aw:
		return "resolved"
	case !bw && aw && b.Severity == analyze.SeverityInfo:
		return "regressed" // it was there, below warning: its severity rose
	case !bw && aw:
		return "new"
	case bw && aw:
		worse := a.Severity > b.Severity || a.Share-b.Share > math.Max(MinNoise, NoiseFraction*b.Share)
		// A larger share of a much shorter step can be less time: a cost
		// that fell by more than the noise per step did not regress (d0
		// to d1 of the h200-ddp job: rank 0's gpu-idle went from 68 ms to
		// 9.6 ms a step, 26 % to 31 % of it).
		if worse && a.WastedNS > 0 && float64(a.WastedNS) < (1-NoiseFraction)*float64(b.WastedNS) {
			worse = false
		}
		if worse {
			return "regressed"
		}
		return "persisting"
	}
	return "info"
}

// Worst is the highest severity, in the after run, among new and regressed
// findings (SeverityNone when there are none): what --fail-on tests.
func (d *Diff) Worst() analyze.Severity { return worst(d.Changes) }
