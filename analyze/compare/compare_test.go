package compare

import (
	"slices"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/internal/testing/testaudit"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// auditOf reads and analyzes a real trace.
var auditOf = testaudit.File

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
	check("new", d.New, []string{"h"})
	// b: +0.01 is noise; c: +0.03 beats max(0.02, 0.01); d: warning -> error;
	// g: info -> warning, its severity rose (not new: it was there).
	check("persisting", d.Persisting, []string{"b"})
	check("regressed", d.Regressed, []string{"c", "d", "g"})
	for _, c := range d.Changes {
		if c.Status == "" {
			t.Errorf("%s has no status", c.ID)
		}
	}
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

// TestLooseStepsWarn: a step speedup within twice the runs' mean-step
// precision, where a run's steps spread too far for their count, is
// flagged with each such run; a change beyond it, or runs of even steps,
// are not (synthetic runs, then the two ranks of the balanced two-GPU run,
// 2 and 3 steps known to ±17 % and ±60 %).
func TestLooseStepsWarn(t *testing.T) {
	run := func(file string, median, mean, stderr int64, steps ...int64) *audit.Analysis {
		r := rep(median)
		r.File = file
		r.Steps.MeanNS, r.Steps.MeanStderrNS, r.Steps.Count = mean, stderr, len(steps)
		for i, d := range steps {
			r.Steps.PerStep = append(r.Steps.PerStep, audit.StepEntry{StartNS: int64(i) * 1000, EndNS: int64(i)*1000 + d})
		}
		return r
	}
	loose := func(d *Diff) string {
		for _, w := range d.Warnings {
			if strings.Contains(w, "is within what these steps can tell") {
				return w
			}
		}
		return ""
	}
	bursty := run("/a/bursty.json", 150, 300, 120, 100, 150, 650) // ±40 %
	even := run("/a/even.json", 130, 130, 2, 128, 130, 132)       // ±1.5 %
	for _, c := range []struct {
		before, after *audit.Analysis
		want          string
	}{
		{bursty, even, "the step speedup (1.15x) is within what these steps can tell, judged by their means' standard errors: they spread too far for their count in bursty.json (3 steady steps of 100 ns to 650 ns: their mean known to ±40 %, about 48 steps for ±10 %); record more steps"},
		{even, even, ""},
		{bursty, run("/a/fast.json", 50, 50, 1, 49, 50, 51), ""}, // 3x: beyond twice ±40 %
	} {
		if got := loose(Compare(c.before, c.after)); !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("%s -> %s: warning %q", c.before.File, c.after.File, got)
		}
	}

	r0 := auditOf(t, testfix.Shared(t, "h200-ddp", "d1_balanced.rank0.pt.trace.json.gz"))
	r1 := auditOf(t, testfix.Shared(t, "h200-ddp", "d1_balanced.rank1.pt.trace.json.gz"))
	w := loose(Compare(r0, r1))
	for _, s := range []string{"(1.23x)", "d1_balanced.rank0.pt.trace.json.gz (2 steady steps", "known to ±17 %", "d1_balanced.rank1.pt.trace.json.gz (3 steady steps", "known to ±60 %, about 108 steps"} {
		if !strings.Contains(w, s) {
			t.Errorf("rank 0 -> rank 1: no %q in %q", s, w)
		}
	}
	straggler := auditOf(t, testfix.Shared(t, "h200-ddp", "d0_straggler.rank1.pt.trace.json.gz"))
	if w := loose(Compare(straggler, r1)); w != "" {
		t.Errorf("the straggler's rank 1 -> the balanced one (9.47x): %q", w)
	}
}
