package replay

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/internal/units"
)

// measured is what a run would measure of p's variants, from mean and
// median steps.
func measured(p *Plan, steps map[string][2]int64) []Measured {
	out := make([]Measured, len(p.Variants))
	for i, v := range p.Variants {
		s := steps[v.Name]
		out[i].StepNSMean, out[i].StepNSMedian = s[0], s[1]
		out[i].GPUNSMean, out[i].GPUNSMedian = p.ObservedGPUNS, p.ObservedGPUNS
	}
	base := out[0].StepNSMean
	for i, v := range p.Variants {
		m := &out[i]
		m.Speedup = float64(base) / float64(m.StepNSMean)
		m.Note = costNote(v.Name, m)
	}
	return out
}

// TestFidelityComparesMeans: a bursty trace (median step 1 ms, mean 1.8
// ms) whose replay reproduces the mean step is faithful; the median-based
// ratio alone would have called it 1.8.
func TestFidelityComparesMeans(t *testing.T) {
	p := tiny(BatchesMain)
	p.ObservedStepNS, p.ObservedStepMeanNS = 1_000_000, 1_800_000
	m := measured(p, map[string][2]int64{Observed: {1_800_000, 1_750_000}})
	r := NewResult(p, "fake GPU", m, 10, nil)
	if f := r.Fidelity; f.Step != 1 || f.StepMedian != 1.75 || f.GPU != 1 {
		t.Errorf("fidelity %+v", f)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "uneven") || !strings.Contains(r.Notes[0], "means with means") {
		t.Errorf("notes %q", r.Notes)
	}
}

func TestNotesSayWhatDiffers(t *testing.T) {
	p := tiny(BatchesMain)
	p.TraceGBps = TraceGBps{Pageable: 6}
	if err := p.Select("pinned"); err != nil {
		t.Fatal(err)
	}
	m := measured(p, map[string][2]int64{Observed: {2_600_000, 2_600_000}, Pinned: {2_900_000, 2_900_000}})
	m[0].GPUNSMean = 700_000
	r := NewResult(p, "fake GPU", m, 10, &Box{PageableGBps: 9, PinnedGBps: 50, Bytes: 1 << 20})
	all := strings.Join(r.Notes, "\n")
	for _, want := range []string{
		"pageable copies run 50 % faster on this box (9.0 GB/s) than in the trace (6.0 GB/s)",
		"GPU time per step replays at 1.40 of the trace's",
		"the observed step replays at 1.30 of the trace's mean step",
		"pinned: this fix costs more than it saves here: 0.90x",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("notes lack %q:\n%s", want, all)
		}
	}
	if v := r.Variants[1]; v.Note == "" || r.Variants[0].Note != "" {
		t.Errorf("notes: observed %q, pinned %q", r.Variants[0].Note, v.Note)
	}
	// A step run without the GPU timed apart (the graph engine) says
	// nothing of the GPU's time, and blames the host phases.
	m[0].GPUNSMean = 0
	all = strings.Join(NewResult(p, "fake GPU", m, 10, &Box{PageableGBps: 9, PinnedGBps: 50, Bytes: 1 << 20}).Notes, "\n")
	if strings.Contains(all, "GPU time") || !strings.Contains(all, "1.30 of the trace's mean step (+30 %): the host phases") {
		t.Errorf("notes without the GPU timed:\n%s", all)
	}
	// Within bounds, nothing to say.
	q := tiny(BatchesMain)
	q.TraceGBps = TraceGBps{Pageable: 6}
	mq := measured(q, map[string][2]int64{Observed: {2_100_000, 2_000_000}})
	if r := NewResult(q, "fake GPU", mq, 10, &Box{PageableGBps: 6.5, PinnedGBps: 50}); len(r.Notes) != 0 {
		t.Errorf("notes %q for a faithful replay", r.Notes)
	}
}

func TestCostNote(t *testing.T) {
	for _, c := range []struct {
		name    string
		speedup float64
		slower  bool
	}{{Pinned, 0.97, true}, {Pinned, 0.985, false}, {Pinned, 1.5, false}, {Observed, 0.5, false}, {Pinned, 0, false}} {
		if got := costNote(c.name, &Measured{Speedup: c.speedup}); (got != "") != c.slower || (c.slower && !strings.HasPrefix(got, "this fix costs more than it saves here")) {
			t.Errorf("%s at %.3fx: %q", c.name, c.speedup, got)
		}
	}
}

func TestPredictedStepNS(t *testing.T) {
	vs := []VariantResult{{Variant{Name: Observed, PredictedSpeedup: 1}, Measured{StepNSMean: 90e6, StepNSMedian: 80e6}},
		{Variant: Variant{Name: "pinned", PredictedSpeedup: 3}}, {Variant: Variant{Name: "x"}}}
	measured := &Result{ObservedStepNS: 110e6, ObservedStepMeanNS: 120e6, Variants: vs}
	if got := measured.PredictedStepNS(vs[1]); got != 30e6 {
		t.Errorf("measured: %d, want the replayed observed mean step / 3 = 30 ms", got)
	}
	dry := &Result{ObservedStepNS: 110e6, ObservedStepMeanNS: 120e6, DryRun: true, Variants: vs}
	if got := dry.PredictedStepNS(vs[1]); got != 40e6 {
		t.Errorf("dry run: %d, want the trace's mean step / 3 = 40 ms", got)
	}
	if got := measured.PredictedStepNS(vs[2]); got != 0 {
		t.Errorf("no prediction: %d", got)
	}
}

// TestNotesNameTheHostPhase: a replay whose step runs long while its GPU
// time matches says which host phase took the time, and, for the data
// phase, what building one batch takes here; a replay whose phases match
// the plan keeps the general words, and one whose GPU time differs blames
// the GPU.
func TestNotesNameTheHostPhase(t *testing.T) {
	p := tiny(BatchesWorkers)
	p.Step.Munmaps, p.Step.DataNS = 1, 1_000_000
	m := measured(p, map[string][2]int64{Observed: {2_600_000, 2_600_000}})
	m[0].PhasesNS = map[string]int64{PhaseData: 1_550_000, PhaseOther: 60_000, PhaseCopy: 150_000}
	wantNote(t, NewResult(p, "fake GPU", m, 10, &Box{PageableGBps: 9, PinnedGBps: 50, Bytes: 1 << 20, BuildNS: 1_400_000}),
		"the observed step replays at 1.30 of the trace's mean step (+30 %): its data phase took 1.55 ms a step here against the trace's 1.00 ms "+
			"(building one batch here as the traced loop does, into fresh pages, memory traffic only, takes 1.40 ms")

	// With the profiler's cost taken out, the phase it is compared with
	// is the trace's less that cost, and the note says so.
	lp := tiny(BatchesMain)
	lp.events = phaseEvents{total: 600, data: 500, idle: 20}
	lp.LessProfiler(1000, "test")
	ml := measured(lp, map[string][2]int64{Observed: {2_000_000, 2_000_000}})
	ml[0].PhasesNS = map[string]int64{PhaseData: 1_100_000, PhaseOther: 30_000}
	wantNote(t, NewResult(lp, "fake GPU", ml, 10, &Box{}), "its data phase took 1.10 ms a step here against the trace's, less the profiler's cost, 500 µs")

	// The other host work ran long; within 5 % of the step, nothing named.
	for _, c := range []struct {
		other int64
		want  string
	}{
		{650_000, "its other host work phase took 650 µs a step here against the trace's 50.0 µs"},
		{140_000, "the host phases (data, other host work, munmap, pinning) took another time here than in the trace"},
	} {
		q := tiny(BatchesMain)
		mq := measured(q, map[string][2]int64{Observed: {2_600_000, 2_600_000}})
		mq[0].PhasesNS = map[string]int64{PhaseData: 1_000_000, PhaseOther: c.other}
		all := strings.Join(NewResult(q, "fake GPU", mq, 10, &Box{PageableGBps: 6, PinnedGBps: 50}).Notes, "\n")
		if !strings.Contains(all, c.want) || strings.Contains(all, "building one batch") {
			t.Errorf("other %d: notes lack %q:\n%s", c.other, c.want, all)
		}
	}

	// A step that replays long is not blamed on a phase that took less
	// time than the trace's (a data phase of 3 µs against the trace's
	// 1 ms, the step long from its copies).
	sh := tiny(BatchesMain)
	sh.Step.DataNS = 1_000_000
	ms := measured(sh, map[string][2]int64{Observed: {2_600_000, 2_600_000}})
	ms[0].PhasesNS = map[string]int64{PhaseData: 3_000, PhaseOther: 60_000}
	if all := strings.Join(NewResult(sh, "fake GPU", ms, 10, &Box{}).Notes, "\n"); !strings.Contains(all, "the host phases (data, other host work, munmap, pinning) took another time") ||
		strings.Contains(all, "its data phase") {
		t.Errorf("a shorter data phase named for a longer step: notes\n%s", all)
	}

	// A GPU that differs is the reason given, whatever the phases.
	g := tiny(BatchesMain)
	mg := measured(g, map[string][2]int64{Observed: {2_600_000, 2_600_000}})
	mg[0].GPUNSMean = 700_000
	mg[0].PhasesNS = map[string]int64{PhaseData: 1_600_000}
	if all := strings.Join(NewResult(g, "fake GPU", mg, 10, &Box{}).Notes, "\n"); !strings.Contains(all, "the GPU time differs (above)") || strings.Contains(all, "its data phase") {
		t.Errorf("GPU differs: notes\n%s", all)
	}
}

// TestGivenStepNote: an unprofiled step given longer than the trace's mean
// step by more than the fidelity band says that the traced run ran faster
// than the timed loop, in a dry run as after a replay; a step within the
// band, a shorter one, or none, says nothing.
func TestGivenStepNote(t *testing.T) {
	const want = "the unprofiled step given (%s) is %.2fx the trace's mean step (%s): the traced run ran faster than the loop that was timed"
	for _, c := range []struct {
		given int64
		note  bool
	}{{1_310_000, true}, {1_100_000, false}, {1_050_000, false}, {700_000, false}, {0, false}} {
		p := tiny(BatchesMain)
		p.ObservedStepMeanNS = 1_000_000
		p.GivenStepNS = c.given
		for _, measured := range []bool{false, true} {
			all := strings.Join(NewResult(p, "fake GPU", ranIf(p, measured), 10, &Box{}).Notes, "\n")
			w := fmt.Sprintf(want, units.Dur(c.given), float64(c.given)/1e6, units.Dur(1_000_000))
			if strings.Contains(all, w) != c.note || strings.Contains(all, "ran faster than the loop") != c.note {
				t.Errorf("given %d, measured %v: notes\n%s", c.given, measured, all)
			}
		}
	}
}

// TestSpreadNote: a trace whose steady steps spread too far for their
// count (rank 1 of the balanced two-GPU run: 26.1, 139 and 24.7 ms) plans
// with its spread, and every replay of it, dry or measured, says how well
// the mean it reproduces is known; a trace of even steps says nothing.
func TestSpreadNote(t *testing.T) {
	p, err := Build(auditOf(t, testfix.Shared(t, "h200-ddp", "d1_balanced.rank1.pt.trace.json.gz")), suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Spread
	if s == nil || s.Steps != 3 || s.Share < 0.55 || s.Share > 0.65 || s.MinNS > 25e6 || s.MaxNS < 130e6 || s.WantSteps != 108 {
		t.Fatalf("spread %+v", s)
	}
	want := fmt.Sprintf("the trace's 3 steady steps run from %s to %s: their mean (%s), which the replay reproduces, is known to ±60 %% "+
		"(one standard error), and so are the observed mean step and each variant's mean step here; record about 108 steps to judge a fix to ±10 %%",
		units.Dur(s.MinNS), units.Dur(s.MaxNS), units.Dur(p.ObservedStepMeanNS))
	for _, measured := range []bool{false, true} {
		r := NewResult(p, "fake GPU", ranIf(p, measured), 10, &Box{})
		if !slices.Contains(r.Notes, want) {
			t.Errorf("measured %v: no spread note in\n%s", measured, strings.Join(r.Notes, "\n"))
		}
		if r.StepSpread != s {
			t.Errorf("measured %v: step_spread %+v", measured, r.StepSpread)
		}
	}
	even := planOf(t, testfix.Project("r0_baseline.pt.trace.json.gz"))
	if even.Spread != nil {
		t.Errorf("the baseline run's even steps: spread %+v", even.Spread)
	}
	for _, n := range NewResult(even, "fake GPU", nil, 10, &Box{}).Notes {
		if strings.Contains(n, "steady steps run from") {
			t.Errorf("the baseline run: %s", n)
		}
	}
}

// TestVariantResultJSON: a result's variant is one JSON object, the
// plan's fields and then the measurement's, so that replay --format json
// keeps its layout now that the plan holds no measurements.
func TestVariantResultJSON(t *testing.T) {
	id := "sync-memcpy"
	v := Variant{Name: Pinned, FixFor: &id, Plan: Setup{Pinned: true, PinOn: PinOnMain, SyncEvery: 1}, PredictedSpeedup: 2}
	m := Measured{StepNSMedian: 1, StepNSMean: 2, GPUNSMedian: 3, GPUNSMean: 4, Speedup: 1.5, StepSamplesNS: []int64{5},
		GPUSamplesNS: []int64{6}, PhasesNS: map[string]int64{PhaseData: 7}, Note: "n"}
	const plan = `"name":"pinned","fix_for":"sync-memcpy","plan":{"pinned":true,"copy_stream":false,"workers":0,"reuse_buffers":false,` +
		`"pin_on":"main","cuda_graph":false,"sync_every":1},"predicted_speedup":2`
	for _, c := range []struct {
		v    VariantResult
		want string
	}{
		{VariantResult{Variant: v}, `{` + plan + `}`},
		{VariantResult{v, m}, `{` + plan + `,"step_ns_median":1,"step_ns_mean":2,"gpu_ns_median":3,"gpu_ns_mean":4,"speedup":1.5,` +
			`"step_samples_ns":[5],"gpu_samples_ns":[6],"phases_ns":{"data":7},"note":"n"}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("JSON %s (%v), want %s", b, err, c.want)
		}
	}
}
