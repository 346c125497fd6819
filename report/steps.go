package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// stepsSummary says how many steady steps there are, their median and
// mean, where they come from and what was left out: "3 steady steps,
// median 511 ms, mean 512 ms (steps from ProfilerStep); ...". esc escapes
// the source for the output format.
func stepsSummary(s audit.StepSummary, esc func(string) string) string {
	steady := s.Steady()
	noun := "steady steps"
	if steady == 1 {
		noun = "steady step"
	}
	out := fmt.Sprintf("%d %s, median %s, mean %s (steps from %s)", steady, noun, units.Dur(s.MedianNS), units.Dur(s.MeanNS), esc(s.Source))
	if s.Source == "window" {
		out += "; the trace marks no steps, so the window is judged as one step and figures \"per step\" are per window " +
			"(to judge steps, mark them: torch.profiler with prof.step() each iteration, or an NVTX range around each iteration)"
	}
	if p := s.Precision(); p.Loose() {
		out += fmt.Sprintf("; the steps run from %s to %s, so their mean is known to ±%s (one standard error) and so is every figure "+
			"per step: record about %d steps for ±%s", units.Dur(p.MinNS), units.Dur(p.MaxNS), units.Pct(p.Share), p.WantSteps, units.Pct(audit.LooseMean))
	}
	if s.GPULag > 0 {
		out += fmt.Sprintf("; the GPU runs %s of a step behind the host, so steps follow the GPU work each host step launched", units.Pct(s.GPULag))
	}
	if s.PreWindowNS > 0 {
		out += fmt.Sprintf("; the first %s waited for GPU work queued before the profiler window and is not judged", units.Dur(s.PreWindowNS))
	}
	if s.StartupExcluded > 0 {
		out += fmt.Sprintf("; the start-up step (%s) is excluded", units.Dur(s.StartupNS))
	}
	if s.TeardownExcluded > 0 {
		out += fmt.Sprintf("; the last step (%s, the loop's end) is excluded", units.Dur(s.TeardownNS))
	}
	if s.PausedExcluded > 0 {
		out += fmt.Sprintf("; %d step(s) with a pause of a second or more (waiting for input, sleeping) excluded", s.PausedExcluded)
	}
	return out
}

func writeStepsText(p *printer, r *audit.Analysis) {
	p.line("steps: %s", stepsSummary(r.Steps, func(s string) string { return s }))
	b := r.Steps.BreakdownNS
	total := b.Total()
	comm := HasComm(r)
	if total > 0 {
		part := func(name string, v int64) string {
			if v == 0 && unrecorded(r, name) {
				return name + " n/a"
			}
			return fmt.Sprintf("%s %s (%s)", name, units.Dur(v), units.Pct(float64(v)/float64(total)))
		}
		var parts []string
		for _, k := range shownBuckets(comm) {
			parts = append(parts, part(k.String(), b[k]))
		}
		p.line("each step: %s", strings.Join(parts, " | "))
	}
	if comm {
		p.line("GPU busy: kernels %s, collectives %s, copies %s, any work %s of the steady window",
			units.Pct(r.GPU.ComputeBusyShare), units.Pct(r.GPU.CommBusyShare), units.Pct(r.GPU.CopyBusyShare), units.Pct(r.GPU.BusyShare))
	} else {
		p.line("GPU busy: kernels %s, copies %s, any work %s of the steady window",
			units.Pct(r.GPU.ComputeBusyShare), units.Pct(r.GPU.CopyBusyShare), units.Pct(r.GPU.BusyShare))
	}
	if m := modelNote(r); m != "" {
		for _, l := range wrap(m, p.cols()) {
			p.line("%s", l)
		}
	}
}

// modelNote says where the estimates come from: the step model's
// simulation when it reproduces the trace (and what it took out for the
// profiler's own cost, or for an Nsight Systems export that nothing was),
// else the bounds and why; "" without a model.
func modelNote(r *audit.Analysis) string {
	m := r.Model
	if m == nil {
		return ""
	}
	if !m.Faithful() {
		return fmt.Sprintf("step model: %s; the estimates are bounds", m.Why)
	}
	out := fmt.Sprintf("step model: the simulated steady step matches the trace's (fidelity %.2f): each estimate is the step simulated with its fix, or a bound (\"at most\") where the model has no such fix", m.Fidelity)
	switch {
	case m.ProfilerNS > 0:
		out += fmt.Sprintf("; the profiler's own cost (%s a step) is taken out first", units.Dur(m.ProfilerNS))
	case r.Format == timeline.FormatNsys:
		out += "; Nsight Systems' own cost is not taken out: give --unprofiled-step (the step timed without nsys) for estimates of the loop without it"
	}
	return out
}

func writeStepTable(p *printer, r *audit.Analysis) {
	if len(r.Steps.PerStep) == 0 {
		return
	}
	comm := HasComm(r)
	cells := func(b index.Breakdown) string {
		var v []string
		for _, k := range shownBuckets(comm) {
			v = append(v, bucketDur(r, k, b[k]))
		}
		return strings.Join(v, " | ")
	}
	if comm {
		p.line("| step | length | compute | comm | copy | sync | os | data | other |")
		p.line("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	} else {
		p.line("| step | length | compute | copy | sync | os | data | other |")
		p.line("|---|---:|---:|---:|---:|---:|---:|---:|")
	}
	for i, s := range r.Steps.PerStep {
		p.line("| %s | %s | %s |", mdEscape(stepLabel(s, i)), units.Dur(s.EndNS-s.StartNS), cells(s.BreakdownNS))
	}
	b := r.Steps.BreakdownNS
	p.line("| **mean steady step** | **%s** | %s |", units.Dur(b.Total()), cells(b))
}

// HasComm reports whether the run shows collective communication: reports
// show the comm bucket only then.
func HasComm(r *audit.Analysis) bool {
	return r.GPU.CommBusyShare > 0 || r.Steps.BreakdownNS[index.Comm] > 0
}

// stepName is step i's range name, or "step N" (counted from 1) for a
// step with none.
func stepName(s audit.StepEntry, i int) string {
	if s.Name == "" {
		return fmt.Sprintf("step %d", i+1)
	}
	return s.Name
}

// stepLabel is stepName with why the step is excluded from the steady
// state, if it is: start-up, the loop's end, or a pause.
func stepLabel(s audit.StepEntry, i int) string {
	name := stepName(s, i)
	if s.Startup {
		name += " (start-up, excluded)"
	}
	if s.Teardown {
		name += " (loop end, excluded)"
	}
	if s.Paused {
		name += " (paused, excluded)"
	}
	return name
}

// unrecorded reports whether the trace cannot record bucket name: its 0
// is not a measurement.
func unrecorded(r *audit.Analysis, name string) bool { return slices.Contains(r.Unrecorded, name) }

// bucketDur is a bucket's time, or n/a where the trace cannot record it.
func bucketDur(r *audit.Analysis, k index.Bucket, v int64) string {
	if v == 0 && unrecorded(r, k.String()) {
		return "n/a"
	}
	return units.Dur(v)
}

// shownBuckets are the buckets of the two-clock split that the step
// tables show, in order: all of them, comm only where the run communicates.
func shownBuckets(comm bool) []index.Bucket {
	out := make([]index.Bucket, 0, index.NumBuckets)
	for k := range index.NumBuckets {
		if k != index.Comm || comm {
			out = append(out, k)
		}
	}
	return out
}
