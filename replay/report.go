package replay

// Report is the `traceaudit replay --format json` object (design.md).
// Fields may be added, never renamed.
type Report struct {
	File   string `json:"file"`
	DryRun bool   `json:"dry_run"`
	// Device names the GPU ("" in dry runs).
	Device string `json:"device"`
	// ObservedStepNS is the trace's median steady step.
	ObservedStepNS int64 `json:"observed_step_ns"`
	// ObservedGPUNS is the trace's GPU time per step (copies + kernels).
	ObservedGPUNS int64 `json:"observed_gpu_ns"`
	// Step is the replayed step's plan.
	Step     Step      `json:"step"`
	Variants []Variant `json:"variants"`
	// Fidelity compares the replayed observed variant with the trace;
	// null in dry runs.
	Fidelity *Fidelity `json:"fidelity"`
	// Steps is the number of measured steps per variant (0 in dry runs).
	Steps int `json:"steps"`
}

// Fidelity is replayed over observed: Step for the step time, GPU for the
// GPU time per step (copies + kernels). Host phases replay at their
// observed length, so Step alone proves little; GPU says whether real
// copies and kernels took what they took in the trace.
type Fidelity struct {
	Step float64 `json:"step"`
	GPU  float64 `json:"gpu"`
}

// NewReport describes plan p; after Run, measured is true and the
// fidelity is computed.
func NewReport(p *Plan, device string, measured bool, steps int) *Report {
	r := &Report{File: p.File, DryRun: !measured, Device: device, ObservedStepNS: p.ObservedStepNS,
		ObservedGPUNS: p.ObservedGPUNS, Step: p.Step, Variants: p.Variants}
	if measured {
		r.Steps = steps
		obs := p.Variants[0]
		r.Fidelity = &Fidelity{}
		if p.ObservedStepNS > 0 {
			r.Fidelity.Step = float64(obs.StepNSMedian) / float64(p.ObservedStepNS)
		}
		if p.ObservedGPUNS > 0 {
			r.Fidelity.GPU = float64(obs.GPUNSMedian) / float64(p.ObservedGPUNS)
		}
	}
	if r.Step.Copies == nil {
		r.Step.Copies = []Copy{}
	}
	return r
}

// PredictedStepNS is the step time the analyzers predict for variant v, in
// nanoseconds: the replayed observed step (the trace's step in a dry run)
// divided by v's predicted speedup; 0 when v has no prediction.
func (r *Report) PredictedStepNS(v Variant) int64 {
	if v.PredictedSpeedup <= 0 {
		return 0
	}
	base := r.ObservedStepNS
	if !r.DryRun && len(r.Variants) > 0 {
		base = r.Variants[0].StepNSMedian
	}
	return int64(float64(base) / v.PredictedSpeedup)
}
