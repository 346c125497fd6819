package replay

import "testing"

func TestPredictedStepNS(t *testing.T) {
	vs := []Variant{{Name: Observed, PredictedSpeedup: 1, StepNSMedian: 90e6}, {Name: "pinned", PredictedSpeedup: 3}, {Name: "x"}}
	measured := &Report{ObservedStepNS: 120e6, Variants: vs}
	if got := measured.PredictedStepNS(vs[1]); got != 30e6 {
		t.Errorf("measured: %d, want the replayed observed step / 3 = 30 ms", got)
	}
	dry := &Report{ObservedStepNS: 120e6, DryRun: true, Variants: vs}
	if got := dry.PredictedStepNS(vs[1]); got != 40e6 {
		t.Errorf("dry run: %d, want the trace's step / 3 = 40 ms", got)
	}
	if got := measured.PredictedStepNS(vs[2]); got != 0 {
		t.Errorf("no prediction: %d", got)
	}
}
