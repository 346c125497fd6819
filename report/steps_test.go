package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/internal/testing/testaudit"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// TestStepTablesMarkExcludedSteps: the Markdown and HTML step tables name
// each step alike, unnamed ones by number, with why it is left out of the
// steady state.
func TestStepTablesMarkExcludedSteps(t *testing.T) {
	r := &audit.Analysis{File: "run.json", Steps: audit.StepSummary{Count: 4, PerStep: []audit.StepEntry{
		{Name: "ProfilerStep#1", EndNS: 5e6, Startup: true},
		{StartNS: 5e6, EndNS: 8e6},
		{Name: "ProfilerStep#3", StartNS: 8e6, EndNS: 2e9, Paused: true},
		{Name: "ProfilerStep#4", StartNS: 2e9, EndNS: 2.001e9, Teardown: true},
	}}}
	want := []string{"ProfilerStep#1 (start-up, excluded)", "step 2", "ProfilerStep#3 (paused, excluded)", "ProfilerStep#4 (loop end, excluded)"}
	for _, f := range []Format{Markdown, HTML} {
		var b bytes.Buffer
		if err := ForAnalysis(r).Render(&b, f, Options{}); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%v: no %q in the step table", f, w)
			}
		}
	}
}

// TestLooseMeanStep: where the steady steps spread too far for their
// count, the steps line says how well their mean is known and how many
// steps would pin it to ±10 %: on rank 1 of the balanced two-GPU run
// (steps of 26.1, 139 and 24.7 ms: ±60 %), not on the baseline run (three
// even steps).
func TestLooseMeanStep(t *testing.T) {
	loose := testaudit.File(t, testfix.Shared(t, "h200-ddp", "d1_balanced.rank1.pt.trace.json.gz"))
	p := loose.Steps.Precision()
	share, lo, hi, want := p.Share, p.MinNS, p.MaxNS, p.WantSteps
	if share < 0.55 || share > 0.65 || lo < 24e6 || lo > 25e6 || hi < 130e6 || hi > 140e6 || want < 100 || want > 120 {
		t.Errorf("rank 1: ±%.2f, steps %d to %d ns, want %d steps", share, lo, hi, want)
	}
	s := stepsSummary(loose.Steps, func(s string) string { return s })
	for _, w := range []string{"the steps run from 24.7 ms to 139 ms", "mean is known to ±60 % (one standard error)", "record about 108 steps for ±10 %"} {
		if !strings.Contains(s, w) {
			t.Errorf("rank 1's steps line has no %q:\n%s", w, s)
		}
	}
	even := testaudit.File(t, testfix.Project("r0_baseline.pt.trace.json.gz"))
	if p := even.Steps.Precision(); p.Share <= 0 || p.Share > audit.LooseMean {
		t.Errorf("the baseline run's mean step known to ±%.3f", p.Share)
	}
	if s := stepsSummary(even.Steps, func(s string) string { return s }); strings.Contains(s, "known to ±") {
		t.Errorf("the baseline run's steps line speaks of precision:\n%s", s)
	}
}
