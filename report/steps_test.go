package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/audit"
)

// TestStepTablesMarkExcludedSteps: the Markdown and HTML step tables name
// each step alike, unnamed ones by number, with why it is left out of the
// steady state.
func TestStepTablesMarkExcludedSteps(t *testing.T) {
	r := &audit.Analysis{File: "run.json", Steps: audit.Steps{Count: 4, PerStep: []audit.StepInfo{
		{Name: "ProfilerStep#1", EndNS: 5e6, Startup: true},
		{StartNS: 5e6, EndNS: 8e6},
		{Name: "ProfilerStep#3", StartNS: 8e6, EndNS: 2e9, Paused: true},
		{Name: "ProfilerStep#4", StartNS: 2e9, EndNS: 2.001e9, Teardown: true},
	}}}
	want := []string{"ProfilerStep#1 (start-up, excluded)", "step 2", "ProfilerStep#3 (paused, excluded)", "ProfilerStep#4 (loop end, excluded)"}
	for _, f := range []Format{Markdown, HTML} {
		var b bytes.Buffer
		if err := Render(&b, f, r, Options{}); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%v: no %q in the step table", f, w)
			}
		}
	}
}
