package replay

import (
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	tt "github.com/traceaudit/traceaudit/timeline/timelinetest"
)

// TestLessProfilerShortensTheLaunches: a launch-bound step's recorded
// launch calls start where the GPU idles; the profiler's cost for them
// comes out of each launch interval, never below the kernel's own time,
// and what the launches cannot absorb out of the other phase, never below
// zero.
func TestLessProfilerShortensTheLaunches(t *testing.T) {
	p, _ := buildPlan(t, launchBoundTimeline(t, false))
	// 200 launch calls (each starts as the last kernel runs) and one
	// cudaDeviceSynchronize a step; no data phase.
	if p.events.data != 0 || p.events.idle+p.events.busy != 201 || p.HostPhaseEvents() != 201 {
		t.Fatalf("events %+v", p.events)
	}
	other := p.Step.OtherNS
	p.LessProfiler(2000, "test")
	l := p.Step.Launches
	if l.IntervalNS != 20*tt.Us-201*2000/200 || p.Step.OtherNS != other {
		t.Errorf("interval %d, other %d (was %d)", l.IntervalNS, p.Step.OtherNS, other)
	}
	if pr := p.Profiler; pr == nil || pr.RemovedNS != 200*(201*2000/200) || pr.IdleEvents != 201 || pr.EventNS != 2000 || pr.Source != "test" {
		t.Errorf("profiler %+v", p.Profiler)
	}

	q, _ := buildPlan(t, launchBoundTimeline(t, false))
	other = q.Step.OtherNS
	q.LessProfiler(tt.Ms, "test")
	if l := q.Step.Launches; l.IntervalNS != l.KernelNS || q.Step.OtherNS != 0 || q.Step.DataNS != 0 {
		t.Errorf("a cost above the phases: launches %+v, other %d, data %d", l, q.Step.OtherNS, q.Step.DataNS)
	}
	if got, want := q.Profiler.RemovedNS, 200*(20-5)*tt.Us+other; got != want {
		t.Errorf("removed %d, want %d", got, want)
	}
}

// TestLessProfilerShortensTheDataPhase: on a real PyTorch profiler trace
// whose main thread builds its batches, the data phase loses the cost of
// the events recorded there, exactly.
func TestLessProfilerShortensTheDataPhase(t *testing.T) {
	p := planOf(t, testfix.Project("r0_baseline.pt.trace.json.gz"))
	if p.events.data <= 0 || p.events.total < p.events.data+p.events.idle {
		t.Fatalf("events %+v", p.events)
	}
	data, other := p.Step.DataNS, p.Step.OtherNS
	p.LessProfiler(1000, "test")
	if p.Step.DataNS != data-int64(p.events.data)*1000 || p.Step.OtherNS != max(other-int64(p.events.idle)*1000, 0) {
		t.Errorf("data %d → %d, other %d → %d, events %+v", data, p.Step.DataNS, other, p.Step.OtherNS, p.events)
	}
	q := planOf(t, testfix.Project("r0_baseline.pt.trace.json.gz"))
	q.LessProfiler(0, "test")
	if q.Profiler != nil || q.Step.DataNS != data {
		t.Error("a zero cost changed the plan")
	}
}

// TestFidelityLessProfiler: with the profiler's cost taken out, fidelity
// also compares the replay with the trace less that cost, and the notes
// say what was taken out instead of warning about the profiler.
func TestFidelityLessProfiler(t *testing.T) {
	p := tiny(BatchesMain)
	p.HostEventsPerStep = 600
	p.events = phaseEvents{total: 600, data: 500, idle: 20}
	p.LessProfiler(1000, "measured here with torch 2.11.0")
	m := ranIf(p, true)
	m[0].StepNSMean, m[0].StepNSMedian, m[0].GPUNSMean = 1_500_000, 1_500_000, 500_000
	r := NewResult(p, "fake GPU", m, 10, nil)
	if r.Profiler == nil || r.Profiler.RemovedNS != 520_000 {
		t.Fatalf("profiler %+v", r.Profiler)
	}
	if got := r.Fidelity.StepLessProfiler; got < 1.013 || got > 1.014 {
		t.Errorf("fidelity less the profiler %.4f, want 1.5/1.48", got)
	}
	text := strings.Join(r.Notes, "\n")
	if !strings.Contains(text, "taken out of the replayed host phases: 500 events a step in the data phase and 20") ||
		strings.Contains(text, "observed step replays at") {
		t.Errorf("notes %q", text)
	}
	// Without the cost taken out the same replay is 0.75 of the trace and
	// the profiler note warns instead.
	q := tiny(BatchesMain)
	q.HostEventsPerStep = 600
	m = ranIf(q, true)
	m[0].StepNSMean, m[0].StepNSMedian, m[0].GPUNSMean = 1_500_000, 1_500_000, 500_000
	text = strings.Join(NewResult(q, "fake GPU", m, 10, nil).Notes, "\n")
	if !strings.Contains(text, "--profiler-cost takes it out") || !strings.Contains(text, "observed step replays at 0.75") {
		t.Errorf("notes %q", text)
	}
}

// TestLessProfilerRange: a cost measured over a range takes out the
// median's time, as LessProfiler does, and records what either end would
// have taken out; the notes give the step less the profiler at both ends
// when they span more than a tenth of it, and say nothing of a range for a
// single cost.
func TestLessProfilerRange(t *testing.T) {
	p := tiny(BatchesMain)
	p.events = phaseEvents{total: 600, data: 500, idle: 20}
	p.LessProfilerRange(1000, 600, 1500, "measured here")
	pr := p.Profiler
	if pr.RemovedNS != 520_000 || pr.RemovedMinNS != 312_000 || pr.RemovedMaxNS != 750_000+30_000 || pr.EventNSMin != 600 || pr.EventNSMax != 1500 {
		t.Fatalf("profiler %+v", pr)
	}
	// The data phase keeps the median's cut; the other phase (50 µs)
	// cannot lose more than it has.
	if p.Step.DataNS != 500_000 || p.Step.OtherNS != 30_000 {
		t.Errorf("data %d, other %d", p.Step.DataNS, p.Step.OtherNS)
	}
	m := ranIf(p, true)
	m[0].StepNSMean, m[0].StepNSMedian, m[0].GPUNSMean = 1_500_000, 1_500_000, 500_000
	wantNote(t, NewResult(p, "fake GPU", m, 10, nil), "ranged from 600 ns to 1.50 µs between the processes measured, and a traced process's own cost is as uncertain: "+
		"taken out at either end, the trace's step less the profiler lies between 1.22 ms and 1.69 ms (1.48 ms at the median: -18 % to +14 %)")

	// A process that measured less than nothing: the range starts at
	// nothing taken out.
	n := tiny(BatchesMain)
	n.events = phaseEvents{total: 600, data: 500, idle: 20}
	n.LessProfilerRange(1000, -97, 2100, "measured here")
	if pr := n.Profiler; pr.EventNSMin != 0 || pr.RemovedMinNS != 0 || pr.EventNSMax != 2100 || pr.RemovedMaxNS != 1_000_000+42_000 || pr.RemovedNS != 520_000 {
		t.Errorf("a negative process: %+v", pr)
	}

	// A narrow range (±2 %) and a single cost say nothing of it.
	for _, c := range [][2]int64{{980, 1020}, {1000, 1000}} {
		q := tiny(BatchesMain)
		q.events = phaseEvents{total: 600, data: 500, idle: 20}
		q.LessProfilerRange(1000, c[0], c[1], "measured here")
		m := ranIf(q, true)
		m[0].StepNSMean, m[0].StepNSMedian, m[0].GPUNSMean = 1_500_000, 1_500_000, 500_000
		if text := strings.Join(NewResult(q, "fake GPU", m, 10, nil).Notes, "\n"); strings.Contains(text, "between the processes measured") {
			t.Errorf("range %v: notes\n%s", c, text)
		}
		if c[0] == c[1] && (q.Profiler.RemovedMinNS != 0 || q.Profiler.EventNSMax != 0) {
			t.Errorf("a single cost recorded a range: %+v", q.Profiler)
		}
	}
}

// TestLessHostTime: a difference spread over the host phases by their
// length: the data and other phases and a launch-bound step's intervals
// above their kernels lose the same share; one larger than the phases
// takes them all and no more.
func TestLessHostTime(t *testing.T) {
	p := tiny(BatchesMain) // data 1 ms, other 50 µs
	p.LessHostTime(525_000, "test")
	if p.Step.DataNS != 500_000 || p.Step.OtherNS != 25_000 || p.Profiler.HostShare != 0.5 || p.Profiler.RemovedNS != 525_000 || p.Profiler.EventNS != 0 {
		t.Errorf("data %d, other %d, profiler %+v", p.Step.DataNS, p.Step.OtherNS, p.Profiler)
	}
	m := ranIf(p, true)
	m[0].StepNSMean, m[0].StepNSMedian, m[0].GPUNSMean = 1_500_000, 1_500_000, 500_000
	text := strings.Join(NewResult(p, "fake GPU", m, 10, nil).Notes, "\n")
	if !strings.Contains(text, "the profiler's own cost is taken out of the replayed host phases: 50 % of each") {
		t.Errorf("notes %q", text)
	}

	l, _ := buildPlan(t, launchBoundTimeline(t, false))
	lb := *l.Step.Launches
	other := l.Step.OtherNS
	host := int64(lb.Kernels)*(lb.IntervalNS-lb.KernelNS) + other + l.Step.DataNS
	l.LessHostTime(host/4, "test")
	got := l.Step.Launches
	if want := lb.IntervalNS - (lb.IntervalNS-lb.KernelNS)/4; got.IntervalNS < want-1 || got.IntervalNS > want+1 || l.Step.OtherNS < other*3/4-1 || l.Step.OtherNS > other*3/4+1 {
		t.Errorf("a quarter: interval %d → %d, other %d → %d", lb.IntervalNS, got.IntervalNS, other, l.Step.OtherNS)
	}

	all := tiny(BatchesMain)
	all.LessHostTime(10_000_000, "test")
	if all.Step.DataNS != 0 || all.Step.OtherNS != 0 || all.Profiler.RemovedNS != 1_050_000 || all.Profiler.HostShare != 1 {
		t.Errorf("more than the phases: data %d, other %d, profiler %+v", all.Step.DataNS, all.Step.OtherNS, all.Profiler)
	}
}
