// Package audit runs the analyzers it is given on a timeline and assembles
// the analyze JSON contract of design.md: the window, the steps and their
// two-clock split, GPU busy shares, a verdict, the findings and what the
// input could not show.
package audit

import (
	"fmt"
	"math"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/comm"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// Analysis is the `traceaudit analyze --format json` object: the result of
// analysing one timeline. Fields may be added, never renamed.
type Analysis struct {
	File   string `json:"file"`
	Format string `json:"format"`
	// WindowNS spans all events of the input, from WindowStartNS (on the
	// trace's clock; reports show evidence times from it).
	WindowNS      int64 `json:"window_ns"`
	WindowStartNS int64 `json:"window_start_ns"`
	// SteadyWindowNS is the summed length of the steady steps.
	SteadyWindowNS int64 `json:"steady_window_ns"`
	// Verdict is the one-line diagnosis ("input-bound: 78 % of each step
	// waits for data").
	Verdict       string                  `json:"verdict"`
	Steps         StepSummary             `json:"steps"`
	GPU           GPU                     `json:"gpu"`
	Findings      []analyze.Finding       `json:"findings"`
	NotObservable []analyze.NotObservable `json:"not_observable"`
	// Model is the step model's simulation of the steady step and of each
	// fix (null for a window that is not a steady loop).
	Model *model.Model `json:"model"`
	// Unrecorded names the buckets of the split the input cannot record
	// ("os" without OS runtime calls, "data" without data-loading
	// ranges): their 0 means unknown, and reports write n/a.
	Unrecorded []string `json:"unrecorded_buckets,omitempty"`
	// Collectives are the collective instances the steps launched, for
	// the job reduce (empty for a single-GPU trace).
	Collectives []Collective `json:"collectives"`
	// Identity places the run in a job, where the input says (omitted for
	// single-GPU traces).
	Identity

	// Index and Timeline feed plots and the replay; not serialised.
	Index    *index.Index       `json:"-"`
	Timeline *timeline.Timeline `json:"-"`
}

// StepSummary is what the analysis found of the steps: their count, their
// lengths, what was left out, their split and every step.
type StepSummary struct {
	// Count is the number of steps found, start-up and tear-down included.
	Count int `json:"count"`
	// StartupExcluded is 1 when the first step was excluded as start-up.
	StartupExcluded int `json:"startup_excluded"`
	// StartupNS is the excluded start-up step's length (0: none).
	StartupNS int64 `json:"startup_ns"`
	// TeardownExcluded is 1 when the last step was excluded as the loop's
	// end (an incomplete last cycle of repeated ranges); TeardownNS is its
	// length.
	TeardownExcluded int   `json:"teardown_excluded"`
	TeardownNS       int64 `json:"teardown_ns"`
	// MedianNS is the median steady step length (the mean of the two
	// middle steps for an even count).
	MedianNS int64 `json:"median_ns"`
	// MeanNS is the mean steady step length.
	MeanNS int64 `json:"mean_ns"`
	// MeanStderrNS is the standard error of MeanNS (the steady steps'
	// standard deviation over the square root of their count; 0 with
	// fewer than two): how well the steps pin the mean down.
	MeanStderrNS int64 `json:"mean_stderr_ns"`
	// PausedExcluded counts steps left out because the main thread paused
	// in them for a second or more (getc, sleep).
	PausedExcluded int `json:"paused_excluded"`
	// PreWindowNS is the time cut from the first step where the host
	// waited for GPU work queued before the profiler window.
	PreWindowNS int64 `json:"pre_window_ns"`
	// GPULag is, for GPU-paced steps, how far the GPU ran behind the host
	// (the median lag as a share of a step; 0: steps not GPU-paced).
	GPULag float64 `json:"gpu_lag"`
	// Source says how steps were found.
	Source string `json:"source"`
	// BreakdownNS is the mean two-clock split of a steady step.
	BreakdownNS index.Breakdown `json:"breakdown_ns"`
	// PerStep lists every step with its split, start-up first if any.
	PerStep []StepEntry `json:"per_step"`
}

// StepEntry is one step of StepSummary.PerStep, as the JSON lists it.
type StepEntry struct {
	Name     string `json:"name"`
	StartNS  int64  `json:"start_ns"`
	EndNS    int64  `json:"end_ns"`
	Startup  bool   `json:"startup"`
	Teardown bool   `json:"teardown"`
	// Paused says the step was left out for a pause of a second or more.
	Paused      bool            `json:"paused"`
	BreakdownNS index.Breakdown `json:"breakdown_ns"`
}

// GPU holds busy shares of the steady window on the analysed devices.
type GPU struct {
	// ComputeBusyShare counts compute kernels only (never collectives).
	ComputeBusyShare float64 `json:"compute_busy_share"`
	// CommBusyShare is the share with a communication kernel running.
	CommBusyShare float64 `json:"comm_busy_share"`
	CopyBusyShare float64 `json:"copy_busy_share"`
	BusyShare     float64 `json:"busy_share"`
}

// RunWith analyzes tl with the given analyzers (the application layer
// hands it the suite, analyze/suite.Default).
func RunWith(tl *timeline.Timeline, cfg *analyze.Config, analyzers []*analyze.Analyzer) (*Analysis, error) {
	if cfg == nil {
		cfg = analyze.DefaultConfig()
	}
	all := append([]*analyze.Analyzer{index.Analyzer, comm.Analyzer}, analyzers...)
	res, err := analyze.Run(tl, all, cfg)
	if err != nil {
		return nil, fmt.Errorf("analyze %s: %w", tl.Source.Path, err)
	}
	ix := res.ResultOf[index.Analyzer].(*index.Index)
	lo, hi := tl.Span()
	r := &Analysis{
		File: tl.Source.Path, Format: tl.Source.Format,
		WindowNS: hi - lo, WindowStartNS: lo, SteadyWindowNS: ix.SteadyNS,
		Findings: res.Findings, NotObservable: res.NotObservable,
		Index: ix, Timeline: tl,
	}
	if r.Findings == nil {
		r.Findings = []analyze.Finding{}
	}
	if r.NotObservable == nil {
		r.NotObservable = []analyze.NotObservable{}
	}
	r.Steps = StepSummary{Count: len(ix.Steps), MedianNS: ix.MedianStepNS(), MeanNS: ix.MeanStepNS(), MeanStderrNS: ix.StepStderrNS(), Source: ix.Source,
		BreakdownNS: ix.MeanBreakdown(), PerStep: []StepEntry{},
		PausedExcluded: ix.PausedSteps, PreWindowNS: ix.PreWindowNS, GPULag: ix.GPULag}
	if ix.Startup != nil {
		r.Steps.StartupExcluded, r.Steps.StartupNS = 1, ix.Startup.Dur()
	}
	if ix.Teardown != nil {
		r.Steps.TeardownExcluded, r.Steps.TeardownNS = 1, ix.Teardown.Dur()
	}
	for _, s := range ix.Steps {
		r.Steps.PerStep = append(r.Steps.PerStep, StepEntry{Name: s.Name, StartNS: s.Start, EndNS: s.End,
			Startup: s.Startup, Teardown: s.Teardown, Paused: s.Paused, BreakdownNS: s.Breakdown})
	}
	if ix.SteadyNS > 0 {
		d := float64(ix.SteadyNS)
		r.GPU = GPU{
			ComputeBusyShare: float64(ix.SteadyCovered(ix.Kernels)) / d,
			CommBusyShare:    float64(ix.SteadyCovered(ix.Comm)) / d,
			CopyBusyShare:    float64(ix.SteadyCovered(ix.Copies)) / d,
			BusyShare:        float64(ix.SteadyCovered(ix.Work)) / d,
		}
	}
	r.Verdict = Verdict(r.Steps.BreakdownNS, len(ix.AnyKernel) > 0) + oneOffVerdict(ix, r.Steps.BreakdownNS)
	if ix.NotSteady != "" && len(ix.Work) > 0 {
		r.Verdict = NotSteady + ": " + ix.NotSteady
		for i := range r.Findings {
			// Nothing measured in a window that is not a steady loop is a
			// per-step cost: report it, but neither warn nor promise.
			r.Findings[i].Severity = min(r.Findings[i].Severity, analyze.SeverityInfo)
			r.Findings[i].EstimatedSpeedup = 1
		}
	}
	if !tl.Observed.OSCalls {
		r.Unrecorded = append(r.Unrecorded, index.OS.String())
	}
	if len(ix.MainData) == 0 {
		r.Unrecorded = append(r.Unrecorded, index.Data.String())
	}
	cx := res.ResultOf[comm.Analyzer].(*comm.Index)
	r.Collectives = collectives(cx)
	identity(r, ix)
	if ix.NotSteady == "" && !cfg.SkipModel {
		r.Model = stepModel(ix, cx, r.Findings, cfg, resizer(tl, cfg, res.ResultOf, all))
	}
	return r, nil
}

// verdictBucket is the bucket a verdict names: compute when kernels run
// ComputeBound of the step or more, else the largest other bucket.
func verdictBucket(b index.Breakdown) index.Bucket {
	if step := b.Total(); step > 0 && float64(b[index.Compute])/float64(step) >= ComputeBound {
		return index.Compute
	}
	worst := index.Comm
	for k := index.Comm; k <= index.Other; k++ {
		if b[k] > b[worst] {
			worst = k
		}
	}
	return worst
}

// oneOffVerdict is the caveat a verdict takes when one steady step holds
// most of the time of the bucket it names in b, the mean step's split
// (index.OneStep), else "".
func oneOffVerdict(ix *index.Index, b index.Breakdown) string {
	k := verdictBucket(b)
	if k == index.Compute {
		return ""
	}
	per := make([]int64, len(ix.Steady))
	for i, s := range ix.Steady {
		per[i] = s.Breakdown[k]
	}
	if _, share, ok := ix.OneStep(per); ok {
		return fmt.Sprintf(" (%s of it in one of the %d steady steps: see the findings)", units.Pct(share), len(ix.Steady))
	}
	return ""
}

// NotSteady is the verdict prefix of a window that is not a steady loop.
const NotSteady = "not-steady"

// ComputeBound is the kernel share of a step above which a run is called
// compute-bound whatever else it does.
const ComputeBound = 0.80

// Verdict names what each steady step mostly does besides computing.
func Verdict(b index.Breakdown, hasKernels bool) string {
	step := b.Total()
	if step == 0 {
		return "no steady steps: nothing to judge"
	}
	if !hasKernels {
		return "no GPU kernels in the trace: nothing ran on the GPU to starve"
	}
	share := func(k index.Bucket) float64 { return float64(b[k]) / float64(step) }
	worst := verdictBucket(b)
	if worst == index.Compute {
		return fmt.Sprintf("compute-bound: kernels run %s of each step", units.Pct(share(worst)))
	}
	w := units.Pct(share(worst))
	switch worst {
	case index.Comm:
		return fmt.Sprintf("communication-bound: %s of each step in collectives with no compute running", w)
	case index.Data:
		return fmt.Sprintf("input-bound: %s of each step waits for data", w)
	case index.Copy:
		return fmt.Sprintf("copy-bound: %s of each step is spent in copies with no kernel running", w)
	case index.Sync:
		return fmt.Sprintf("sync-bound: %s of each step the host waits in synchronisation with no kernel running", w)
	case index.OS:
		return fmt.Sprintf("host-memory-bound: %s of each step in munmap and other OS memory calls", w)
	}
	return fmt.Sprintf("host-bound: %s of each step the GPU idles while the host does other work", w)
}

// LooseMean is the standard error of the mean step, as a share of it,
// beyond which the steps are too few for their spread: every figure per
// step (a mean over the steady steps) is then as uncertain, and reports
// say so (Spread.Loose).
const LooseMean = 0.10

// Steady is the number of steady steps: those judged, start-up, tear-down
// and paused steps left out.
func (s StepSummary) Steady() int {
	return s.Count - s.StartupExcluded - s.TeardownExcluded - s.PausedExcluded
}

// Spread is how well a run's steady steps pin down its mean step.
type Spread struct {
	// Share is the mean step's standard error as a share of it (0 where
	// it cannot be told: fewer than two steady steps).
	Share float64 `json:"mean_stderr_share"`
	// MinNS and MaxNS are the shortest and the longest steady step.
	MinNS int64 `json:"min_ns"`
	MaxNS int64 `json:"max_ns"`
	// Steps is the steady steps; WantSteps about how many would bring
	// Share to LooseMean (the share falls with the square root of the
	// count; at least Steps).
	Steps     int `json:"steps"`
	WantSteps int `json:"want_steps"`
}

// Loose says whether the steps are too few for their spread: the mean
// step's standard error over LooseMean of it.
func (p Spread) Loose() bool { return p.Share > LooseMean }

// Precision is how well the steady steps pin down their mean step.
func (s StepSummary) Precision() Spread {
	n := s.Steady()
	p := Spread{Steps: n, WantSteps: n}
	if n < 2 || s.MeanNS <= 0 || s.MeanStderrNS <= 0 {
		return p
	}
	p.Share = float64(s.MeanStderrNS) / float64(s.MeanNS)
	for _, ps := range s.PerStep {
		if ps.Startup || ps.Teardown || ps.Paused {
			continue
		}
		d := ps.EndNS - ps.StartNS
		if p.MinNS == 0 || d < p.MinNS {
			p.MinNS = d
		}
		p.MaxNS = max(p.MaxNS, d)
	}
	x := p.Share / LooseMean
	p.WantSteps = max(n, int(math.Ceil(float64(n)*x*x)))
	return p
}
