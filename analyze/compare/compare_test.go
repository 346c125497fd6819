package compare

import (
	"slices"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
)

func rep(median int64, fs ...analyze.Finding) *audit.Analysis {
	r := &audit.Analysis{Findings: fs}
	r.Steps.MedianNS = median
	return r
}

func f(id string, sev analyze.Severity, share float64) analyze.Finding {
	return analyze.Finding{ID: id, Severity: sev, Share: share}
}

func TestCompare(t *testing.T) {
	const W, E, I = analyze.SeverityWarning, analyze.SeverityError, analyze.SeverityInfo
	before := rep(100, f("a", E, 0.6), f("b", W, 0.10), f("c", W, 0.10), f("d", W, 0.30), f("e", W, 0.08), f("g", I, 0.01))
	after := rep(40, f("b", W, 0.11), f("c", W, 0.13), f("d", E, 0.31), f("e", I, 0.02), f("g", W, 0.06), f("h", E, 0.4))
	d := Compare(before, after)
	if d.StepSpeedup != 2.5 {
		t.Errorf("speedup %v", d.StepSpeedup)
	}
	check := func(name string, got, want []string) {
		if !slices.Equal(got, want) {
			t.Errorf("%s %v, want %v", name, got, want)
		}
	}
	check("resolved", d.Resolved, []string{"a", "e"})
	check("new", d.New, []string{"g", "h"})
	// b: +0.01 is noise; c: +0.03 beats max(0.02, 0.01); d: warning -> error.
	check("persisting", d.Persisting, []string{"b"})
	check("regressed", d.Regressed, []string{"c", "d"})
	if d.Worst() != E {
		t.Errorf("worst %v", d.Worst())
	}
	if got := Compare(after, after).Worst(); got != analyze.SeverityNone {
		t.Errorf("a run against itself: worst %v", got)
	}
}

func TestNoSteps(t *testing.T) {
	if d := Compare(rep(0), rep(10)); d.StepSpeedup != 0 {
		t.Errorf("speedup %v", d.StepSpeedup)
	}
}

// A run whose steps are its window (no step markers) gives no step
// speedup: its "step" is the capture's length. The warning names it.
func TestWindowStepsGiveNoSpeedup(t *testing.T) {
	marked := func(median int64, source string) *audit.Analysis {
		r := rep(median)
		r.File, r.Steps.Source = "/x/"+source+".sqlite", source
		return r
	}
	for _, c := range []struct {
		before, after string
		speedup       float64
		warn          string
	}{
		{"ProfilerStep", "ProfilerStep", 3, ""},
		{"ProfilerStep (GPU-paced)", "ProfilerStep", 3, ""},
		{"window", "ProfilerStep", 0, "no step markers in window.sqlite (300 ns): "},
		{"ProfilerStep", "window", 0, "no step markers in window.sqlite (100 ns): "},
		{"window", "window", 0, "no step markers in window.sqlite (300 ns) and window.sqlite (100 ns): "},
	} {
		d := Compare(marked(300, c.before), marked(100, c.after))
		got := ""
		for _, w := range d.Warnings {
			if strings.HasPrefix(w, "no step markers") {
				got = w
			}
		}
		if d.StepSpeedup != c.speedup || !strings.HasPrefix(got, c.warn) || (c.warn == "") != (got == "") {
			t.Errorf("%s -> %s: speedup %v, warning %q", c.before, c.after, d.StepSpeedup, got)
		}
	}
}

// A finding whose share rose but whose time per step fell by more than the
// noise persists; the same time in a larger share still regressed.
func TestLessTimeIsNotARegression(t *testing.T) {
	side := func(sev analyze.Severity, share float64, wasted int64) analyze.Finding {
		return analyze.Finding{ID: "gpu-idle", Severity: sev, Share: share, WastedNS: wasted}
	}
	const W, E = analyze.SeverityWarning, analyze.SeverityError
	for _, c := range []struct {
		name          string
		before, after analyze.Finding
		want          string
	}{
		{"68 ms -> 9.6 ms a step, 26 % -> 31 %", side(W, 0.26, 68_000_000), side(W, 0.31, 9_600_000), "persisting"},
		{"less time, but an error now", side(W, 0.45, 68_000_000), side(E, 0.55, 30_000_000), "persisting"},
		{"the same time, a larger share", side(W, 0.26, 10_000_000), side(W, 0.40, 10_000_000), "regressed"},
		{"more time", side(W, 0.26, 10_000_000), side(W, 0.31, 12_000_000), "regressed"},
		{"a tenth less is noise", side(W, 0.26, 10_000_000), side(W, 0.31, 9_500_000), "regressed"},
	} {
		d := Compare(rep(100, c.before), rep(30, c.after))
		if got := d.Changes[0].Status; got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
