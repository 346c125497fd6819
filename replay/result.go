package replay

import (
	"fmt"
	"math"
	"strings"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/internal/units"
)

// Result is the `traceaudit replay --format json` object (design.md).
// Fields may be added, never renamed.
type Result struct {
	File   string `json:"file"`
	DryRun bool   `json:"dry_run"`
	// Device names the GPU ("" in dry runs).
	Device string `json:"device"`
	// ObservedStepNS is the trace's median steady step; ObservedStepMeanNS
	// its mean steady step.
	ObservedStepNS     int64 `json:"observed_step_ns"`
	ObservedStepMeanNS int64 `json:"observed_step_ns_mean"`
	// ObservedGPUNS is the trace's GPU time per step (copies + kernels),
	// mean over steady steps.
	ObservedGPUNS int64 `json:"observed_gpu_ns"`
	// StepSpread, when set, says that the trace's steady steps are too
	// few for their spread to pin down their mean (Plan.Spread).
	StepSpread *audit.Spread `json:"step_spread,omitempty"`
	// StepStat names the statistic that speedups and fidelity compare:
	// "mean" (the mean step, the loop's throughput, on both sides).
	StepStat string `json:"step_stat"`
	// TraceGBps are the trace's copy bandwidths; Box the ones measured
	// here at the same sizes (null in dry runs).
	TraceGBps TraceGBps `json:"trace_gbps"`
	Box       *Box      `json:"box"`
	// HostEventsPerStep is the CPU operators and API calls the trace
	// recorded on the main thread per steady step (Plan.HostEventsPerStep).
	HostEventsPerStep int `json:"host_events_per_step,omitempty"`
	// Profiler, when set, is the profiler's own cost that the replay took
	// out of the trace's host phases (Plan.LessProfiler).
	Profiler *Profiler `json:"profiler,omitempty"`
	// Step is the replayed step's plan by phases.
	Step Phases `json:"step"`
	// Schedule, with the graph engine, describes the step model's
	// schedule that the variants run (null with the phases engine, or
	// where the model keeps none).
	Schedule *ScheduleSummary `json:"schedule,omitempty"`
	Variants []VariantResult  `json:"variants"`
	// Fidelity compares the replayed observed variant with the trace;
	// null in dry runs.
	Fidelity *Fidelity `json:"fidelity"`
	// Steps is the number of measured steps per variant (0 in dry runs).
	Steps int `json:"steps"`
	// Notes say in words what the reader must know to trust the figures:
	// where the box's copies differ from the trace's, where fidelity is out
	// of bounds and why, which fixes cost more than they save.
	Notes []string `json:"notes"`
}

// ScheduleSummary is the size of the step model's observed schedule, and
// the variants no schedule holds (run by phases).
type ScheduleSummary struct {
	Steps   int `json:"steps"`
	Threads int `json:"threads"`
	Streams int `json:"streams"`
	// CallsPerStep and WorkPerStep are the host calls and the kernels and
	// copies of one step.
	CallsPerStep int      `json:"calls_per_step"`
	WorkPerStep  int      `json:"work_per_step"`
	ByPhases     []string `json:"by_phases"`
}

// scheduleSummary describes the schedules plan p runs with the graph
// engine, nil where it runs by phases.
func scheduleSummary(p *Plan) *ScheduleSummary {
	if p.Engine != EngineGraph {
		return nil
	}
	s, ok := p.schedule(Observed)
	if !ok {
		return nil
	}
	out := &ScheduleSummary{Steps: s.Steps, Threads: len(s.Threads), Streams: s.Streams, ByPhases: []string{}}
	calls := 0
	for _, th := range s.Threads {
		calls += len(th.Calls)
	}
	out.CallsPerStep, out.WorkPerStep = calls/s.Steps, len(s.Work)/s.Steps
	for _, v := range p.Variants {
		if !p.hasSchedule(v.Name) {
			out.ByPhases = append(out.ByPhases, v.Name)
		}
	}
	return out
}

// VariantResult is one variant of a result: the variant as planned and
// what a run measured of it (zero in dry runs). Its JSON is one object,
// the variant's fields followed by the measurement's.
type VariantResult struct {
	Variant
	Measured
}

// Measured is what a run measures of a variant. Every step figure says
// which statistic it is: the median or the mean of the measured steps.
type Measured struct {
	// StepNSMedian is the median measured step (wall clock); StepNSMean
	// the mean, which is the loop's throughput (steps per second = 1e9 /
	// StepNSMean) and the figure speedups and fidelity use.
	StepNSMedian int64 `json:"step_ns_median,omitempty"`
	StepNSMean   int64 `json:"step_ns_mean,omitempty"`
	// GPUNSMedian and GPUNSMean are the GPU time per step: copies and
	// kernels, by CUDA events.
	GPUNSMedian int64 `json:"gpu_ns_median,omitempty"`
	GPUNSMean   int64 `json:"gpu_ns_mean,omitempty"`
	// Speedup is the observed variant's mean step over this one's.
	Speedup float64 `json:"speedup,omitempty"`
	// VsModel, when set, is the mean step over the step model's simulated
	// step with the variant's fix (Variant.ModelStepNS): 1 where the
	// replay measures what the model predicts.
	VsModel float64 `json:"vs_model,omitempty"`
	// StepSamplesNS are the measured steps' wall times in order (for a
	// variant that syncs every N steps, the step that syncs carries the
	// wait); GPUSamplesNS their GPU times.
	StepSamplesNS []int64 `json:"step_samples_ns,omitempty"`
	GPUSamplesNS  []int64 `json:"gpu_samples_ns,omitempty"`
	// Engine, with replay --engine graph, is how the variant ran:
	// EngineGraph (the step model's schedule; each sample is one pass of
	// its window, a mean over its steps) or EnginePhases.
	Engine string `json:"engine,omitempty"`
	// PhasesNS is where the main thread's measured steps went, mean ns per
	// step by phase (PhaseData and the others): the steps' wall time, split
	// so that a replayed step that differs from the trace's says where.
	PhasesNS map[string]int64 `json:"phases_ns,omitempty"`
	// Note says what the measurement means where that needs saying
	// ("this fix costs more than it saves here").
	Note string `json:"note,omitempty"`
}

// Fidelity is replayed over observed, like with like: Step is the
// replayed observed variant's mean step over the trace's mean steady step
// (the plan reproduces mean phases), StepMedian the same for medians, GPU
// the replayed GPU time per step (copies + kernels, mean) over the trace's
// (mean). Host phases replay at their observed length, so Step alone
// proves little; GPU says whether real copies and kernels took what they
// took in the trace.
//
// Where the replay took the profiler's cost out of the host phases,
// StepLessProfiler is the replayed observed mean step over the trace's
// mean step less that cost: the like-with-like figure then, since the
// replay stands for the loop without the profiler.
type Fidelity struct {
	Step             float64 `json:"step"`
	StepMedian       float64 `json:"step_median"`
	GPU              float64 `json:"gpu"`
	StepLessProfiler float64 `json:"step_less_profiler,omitempty"`
}

// FidelityLow and FidelityHigh bound a faithful replay (design.md).
const (
	FidelityLow  = 0.9
	FidelityHigh = 1.1
)

// Faithful says whether x is within FidelityLow..FidelityHigh.
func Faithful(x float64) bool { return x >= FidelityLow && x <= FidelityHigh }

// NewResult describes plan p and what Run measured of it: measured, one
// per variant of p in order, and box (both nil in dry runs). When measured
// is set the fidelity and the notes are computed.
func NewResult(p *Plan, device string, measured []Measured, steps int, box *Box) *Result {
	r := &Result{File: p.File, DryRun: measured == nil, Device: device, ObservedStepNS: p.ObservedStepNS,
		ObservedStepMeanNS: p.ObservedStepMeanNS, ObservedGPUNS: p.ObservedGPUNS, StepSpread: p.Spread, StepStat: "mean",
		TraceGBps: p.TraceGBps, Box: box, HostEventsPerStep: p.HostEventsPerStep, Profiler: p.Profiler, Step: p.Step, Notes: []string{},
		Schedule: scheduleSummary(p)}
	if p.Variants != nil {
		r.Variants = make([]VariantResult, len(p.Variants))
		for i, v := range p.Variants {
			r.Variants[i].Variant = v
			if i < len(measured) {
				m := &r.Variants[i].Measured
				*m = measured[i]
				if v.ModelStepNS > 0 && m.StepNSMean > 0 {
					m.VsModel = float64(m.StepNSMean) / float64(v.ModelStepNS)
				}
			}
		}
	}
	if n := givenStepNote(p); n != "" {
		r.Notes = append(r.Notes, n)
	}
	if n := spreadNote(p); n != "" {
		r.Notes = append(r.Notes, n)
	}
	if p.Engine == EngineGraph && r.Schedule == nil {
		r.Notes = append(r.Notes, "every variant runs by phases: the step model does not reproduce this trace (analyze's model.why)")
	}
	if measured != nil {
		r.Steps = steps
		obs := r.Variants[0]
		r.Fidelity = &Fidelity{
			Step:       ratio(obs.StepNSMean, p.ObservedStepMeanNS),
			StepMedian: ratio(obs.StepNSMedian, p.ObservedStepNS),
			GPU:        ratio(obs.GPUNSMean, p.ObservedGPUNS),
		}
		if pr := p.Profiler; pr != nil {
			r.Fidelity.StepLessProfiler = ratio(obs.StepNSMean, p.ObservedStepMeanNS-pr.RemovedNS)
		}
		r.Notes = append(r.Notes, bandwidthNotes(box, p.TraceGBps)...)
		if n := kernelNote(box, p.Step.Launches); n != "" {
			r.Notes = append(r.Notes, n)
		}
		if n := graphNote(box, p.Step.Launches, p.Variants); n != "" {
			r.Notes = append(r.Notes, n)
		}
		if n := reuseNote(box, p.Variants); n != "" {
			r.Notes = append(r.Notes, n)
		}
		if n := profilerNote(p); n != "" {
			r.Notes = append(r.Notes, n)
		}
		if n := profilerRangeNote(p); n != "" {
			r.Notes = append(r.Notes, n)
		}
		r.Notes = append(r.Notes, fidelityNotes(r)...)
		if n := engineNote(r); n != "" {
			r.Notes = append(r.Notes, n)
		}
		for _, v := range r.Variants {
			if v.Note != "" {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: %s", v.Name, v.Note))
			}
		}
	}
	if r.Step.Copies == nil {
		r.Step.Copies = []Copy{}
	}
	return r
}

// PredictedStepNS is the mean step time the analyzers predict for variant
// v, in nanoseconds: the replayed observed mean step (the trace's mean step
// in a dry run) divided by v's predicted speedup, which the analyzers
// compute from means; 0 when v has no prediction.
func (r *Result) PredictedStepNS(v VariantResult) int64 {
	if v.PredictedSpeedup <= 0 {
		return 0
	}
	base := r.ObservedStepMeanNS
	if !r.DryRun && len(r.Variants) > 0 {
		base = r.Variants[0].StepNSMean
	}
	return int64(float64(base) / v.PredictedSpeedup)
}

func ratio(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// fidelityNotes says what differs when the observed replay is not within
// 0.9–1.1 of the trace.
func fidelityNotes(r *Result) []string {
	f := r.Fidelity
	var out []string
	// The graph engine does not time the GPU apart from the step (GPU 0).
	gpuOff := f.GPU > 0 && !Faithful(f.GPU) && r.ObservedGPUNS > 0
	if gpuOff {
		out = append(out, fmt.Sprintf("GPU time per step replays at %.2f of the trace's (%s): copies or kernels run at another speed here than where the trace was taken, so the speedups of fixes that change them differ too",
			f.GPU, pct(f.GPU)))
	}
	why := "the host phases (data, other host work, munmap, pinning) took another time here than in the trace"
	if w := hostPhaseWhy(r); w != "" {
		why = w
	}
	if gpuOff {
		why = "the GPU time differs (above)"
	}
	switch pr := r.Profiler; {
	case pr != nil && !Faithful(f.StepLessProfiler):
		out = append(out, fmt.Sprintf("the observed step replays at %.2f of the trace's mean step less the profiler's cost taken out (%s): %s; compare speedups with care",
			f.StepLessProfiler, pct(f.StepLessProfiler), why))
	case pr == nil && !Faithful(f.Step) && r.ObservedStepMeanNS > 0:
		out = append(out, fmt.Sprintf("the observed step replays at %.2f of the trace's mean step (%s): %s; compare speedups with care",
			f.Step, pct(f.Step), why))
	}
	if r.ObservedStepNS > 0 && r.ObservedStepMeanNS > 0 {
		if d := float64(r.ObservedStepMeanNS)/float64(r.ObservedStepNS) - 1; math.Abs(d) > 0.2 {
			out = append(out, fmt.Sprintf("the trace's steps are uneven: the mean step is %s off the median; figures here compare means with means (throughput)", pct(1+d)))
		}
	}
	return out
}

// givenStepNote says when the unprofiled step the user gave is longer than
// the trace's mean step by more than FidelityHigh: the traced run ran
// faster than the loop that was timed, which a profiler cannot cause (it
// only adds time), and the replay reproduces the traced run.
func givenStepNote(p *Plan) string {
	given, trace := p.GivenStepNS, p.ObservedStepMeanNS
	if given <= 0 || trace <= 0 || float64(given) <= FidelityHigh*float64(trace) {
		return ""
	}
	return fmt.Sprintf("the unprofiled step given (%s) is %.2fx the trace's mean step (%s): the traced run ran faster than the loop that was timed, "+
		"which a profiler cannot cause (it only adds time); the replay reproduces the traced run, so the observed step and every variant stand for it, "+
		"not for the loop that was timed: give the step of the run that was traced, or trace the run whose step was given",
		units.Dur(given), float64(given)/float64(trace), units.Dur(trace))
}

// spreadNote says when the trace's steady steps are too few for their
// spread: the mean step the replay reproduces, and the replayed steps
// with it, are no better known than the trace's steps pin it down.
func spreadNote(p *Plan) string {
	s := p.Spread
	if s == nil {
		return ""
	}
	return fmt.Sprintf("the trace's %d steady steps run from %s to %s: their mean (%s), which the replay reproduces, is known to ±%s "+
		"(one standard error), and so are the observed mean step and each variant's mean step here; record about %d steps to judge a fix to ±%s",
		s.Steps, units.Dur(s.MinNS), units.Dur(s.MaxNS), units.Dur(p.ObservedStepMeanNS), units.Pct(s.Share), s.WantSteps, units.Pct(audit.LooseMean))
}

// hostPhaseWhy names the host phase whose replayed time differs most from
// the plan's in the direction the step moved (longer where the step
// replays long), where it differs by more than 5 % of the trace's step:
// the data phase (with pinning on the main thread), the other host work,
// or a launch-bound step's launches; "" otherwise. A data phase that took
// longer also says what building one batch takes here.
func hostPhaseWhy(r *Result) string {
	if len(r.Variants) == 0 || r.Variants[0].PhasesNS == nil || r.ObservedStepMeanNS <= 0 {
		return ""
	}
	obs, st := r.Variants[0].PhasesNS, r.Step
	type phase struct {
		name      string
		got, want int64
	}
	cands := []phase{{"data", obs[PhaseData], st.DataNS + st.PinNS}, {"other host work", obs[PhaseOther], st.OtherNS}}
	if l := st.Launches; l != nil {
		cands = append(cands, phase{"launch", obs[PhaseLaunch], int64(l.Kernels) * l.IntervalNS})
	}
	longer := r.Fidelity != nil && r.Fidelity.Step > 1
	if r.Profiler != nil && r.Fidelity != nil && r.Fidelity.StepLessProfiler > 0 {
		longer = r.Fidelity.StepLessProfiler > 1
	}
	best := phase{}
	for _, c := range cands {
		if (c.got > c.want) != longer {
			continue // a phase that moved against the step does not explain it
		}
		if absNS(c.got-c.want) > absNS(best.got-best.want) {
			best = c
		}
	}
	if 20*absNS(best.got-best.want) <= r.ObservedStepMeanNS {
		return ""
	}
	ref := "the trace's"
	if r.Profiler != nil {
		ref = "the trace's, less the profiler's cost,"
	}
	why := fmt.Sprintf("its %s phase took %s a step here against %s %s", best.name, units.Dur(best.got), ref, units.Dur(best.want))
	if best.name == "data" && best.got > best.want && r.Box != nil && r.Box.BuildNS > 0 {
		where := ""
		if buildMode(r.Variants[0].Plan, &st) != buildWarm {
			where = ", into fresh pages"
		}
		why += fmt.Sprintf(" (building one batch here as the traced loop does%s, memory traffic only, takes %s: this machine's memory and page faults run at another speed than the trace's)",
			where, units.Dur(r.Box.BuildNS))
	}
	return why
}

func absNS(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}

// ProfilerEventNS is the least a profiler adds to each CPU operator or
// CUDA API call it records, in ns: a microsecond, a floor (profiled loops
// pay more).
const ProfilerEventNS = 1_000

// profilerNote says when the trace recorded so many CPU operators and API
// calls per step on the main thread that the profiler's own cost for them
// is a tenth of the step or more: the replay reproduces the profiled host
// phases, and fixes that remove host time are measured against a longer
// step than the unprofiled loop's.
func profilerNote(p *Plan) string {
	if pr := p.Profiler; pr != nil && pr.HostShare > 0 {
		return fmt.Sprintf("the profiler's own cost is taken out of the replayed host phases: %s of each (data, other host work, launch intervals above their kernels), "+
			"%s of the trace's %s step (%s); the observed step and every variant stand for the loop without the profiler",
			units.Pct(pr.HostShare), units.Dur(pr.RemovedNS), units.Dur(p.ObservedStepMeanNS), pr.Source)
	}
	if pr := p.Profiler; pr != nil {
		return fmt.Sprintf("the profiler's own cost is taken out of the replayed host phases: %d events a step in the data phase and %d where the GPU idles, "+
			"at %s each (%s), %s of the trace's %s step; the observed step and every variant stand for the loop without the profiler",
			pr.DataEvents, pr.IdleEvents, units.Dur(pr.EventNS), pr.Source, units.Dur(pr.RemovedNS), units.Dur(p.ObservedStepMeanNS))
	}
	n := int64(p.HostEventsPerStep)
	if p.ObservedStepMeanNS <= 0 || 10*n*ProfilerEventNS < p.ObservedStepMeanNS {
		return ""
	}
	return fmt.Sprintf("the trace records %d CPU operators and API calls per step on the main thread; at %s or more of profiler overhead each, "+
		"at least %s of its %s step is the profiler's: the replay reproduces the profiled host phases, so the unprofiled loop's step "+
		"is likely shorter, and speedups of fixes that remove host time are overestimated by as much (--profiler-cost takes it out)",
		n, units.Dur(ProfilerEventNS), units.Dur(n*ProfilerEventNS), units.Dur(p.ObservedStepMeanNS))
}

// profilerRangeNote says how uncertain the unprofiled step is where the
// profiler's cost per event was measured over a range (it varies between
// processes, a traced one's own included): the trace's step less the
// profiler at either end of the range, when that spans more than a tenth
// of it at the median.
func profilerRangeNote(p *Plan) string {
	pr := p.Profiler
	if pr == nil || pr.EventNSMax <= pr.EventNSMin {
		return ""
	}
	base := p.ObservedStepMeanNS
	mid, lo, hi := base-pr.RemovedNS, base-pr.RemovedMaxNS, base-pr.RemovedMinNS
	if mid <= 0 || float64(hi-lo) <= 0.1*float64(mid) {
		return ""
	}
	return fmt.Sprintf("the profiler's cost per event ranged from %s to %s between the processes measured, and a traced process's own cost is as uncertain: "+
		"taken out at either end, the trace's step less the profiler lies between %s and %s (%s at the median: %s to %s), "+
		"and the replayed speedups of fixes that remove host time are uncertain by as much",
		units.Dur(pr.EventNSMin), units.Dur(pr.EventNSMax), units.Dur(max(lo, 0)), units.Dur(hi), units.Dur(mid), pct(float64(max(lo, 0))/float64(mid)), pct(float64(hi)/float64(mid)))
}

// pct writes x as a signed percentage difference from 1 ("+12 %").
func pct(x float64) string { return fmt.Sprintf("%+.0f %%", 100*(x-1)) }

// engineNote says, where variants ran from the step model's schedule, which
// ran by phases instead and why.
func engineNote(r *Result) string {
	var graph, phases []string
	for _, v := range r.Variants {
		switch v.Engine {
		case EngineGraph:
			graph = append(graph, v.Name)
		case EnginePhases:
			phases = append(phases, v.Name)
		}
	}
	switch {
	case len(graph) == 0:
		return "" // said before the run (NewResult), or the phases engine chosen
	case len(phases) > 0:
		return fmt.Sprintf("%s ran by phases, against the observed step run by phases: no schedule holds a captured CUDA graph or a step the model did not simulate", strings.Join(phases, ", "))
	}
	return ""
}
