package report

import (
	"bytes"
	"encoding/json"
	"html"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/mdcheck"
	"github.com/traceaudit/traceaudit/replay"
	"github.com/traceaudit/traceaudit/timeline"
)

// measuredReport is a replay report as a run on a GPU leaves it: a pinned
// fix that measured slower, a box whose pageable copies are faster than the
// trace's.
func measuredReport() *replay.Result {
	fix := "sync-memcpy"
	p := &replay.Plan{File: "run.json", ObservedStepNS: 20_000_000, ObservedStepMeanNS: 21_000_000, ObservedGPUNS: 19_000_000,
		TraceGBps: replay.TraceGBps{Pageable: 6},
		Step: replay.Phases{DataNS: 100_000, ComputeNS: 400_000, OtherNS: 500_000, Sync: true, Batches: replay.BatchesReused,
			Copies: []replay.Copy{{Dir: timeline.CopyHtoD, Bytes: 120_000_000, Pageable: true, ObservedNS: 20_000_000}}},
		Variants: []replay.Variant{
			{Name: replay.Observed, Plan: replay.Setup{SyncEvery: 1}, PredictedSpeedup: 1},
			{Name: replay.Pinned, FixFor: &fix, Plan: replay.Setup{Pinned: true, PinOn: replay.PinOnMain, SyncEvery: 1}, PredictedSpeedup: 5,
				ModelStepNS: 20_000_000},
		}}
	measured := []replay.Measured{
		{StepNSMean: 21_000_000, StepNSMedian: 20_900_000, GPUNSMean: 19_000_000, Speedup: 1,
			StepSamplesNS: []int64{21_000_000, 21_000_000}, GPUSamplesNS: []int64{19_000_000, 19_000_000}},
		{StepNSMean: 25_000_000, StepNSMedian: 24_000_000, GPUNSMean: 3_000_000, Speedup: 0.84,
			Note: "this fix costs more than it saves here: 0.84x, the step takes 19 % longer than observed"},
	}
	return replay.NewResult(p, "fake GPU", measured, 2, &replay.Box{PageableGBps: 9, PinnedGBps: 54, Bytes: 120_000_000})
}

func TestReplayTextAndMarkdownSayWhatMatters(t *testing.T) {
	r := measuredReport()
	var txt, md, page bytes.Buffer
	if err := ForReplay(r).Render(&txt, Text, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := ForReplay(r).Render(&md, Markdown, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := ForReplay(r).Render(&page, HTML, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{txt.String(), md.String(), page.String()} {
		for _, want := range []string{
			"this fix costs more than it saves here",
			"pageable copies run 50 % faster on this box",
			"pageable 9.0 GB/s, pinned 54.0 GB/s",
			"21.0 ms", // the trace's mean step
			"(mean)",
			"pinned (on the main thread)",
			"vs model", "20.0 ms", "1.25", // the model's step for pinned, and the measured 25 ms over it
		} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
	}
	var js bytes.Buffer
	if err := ForReplay(r).Render(&js, JSON, Options{}); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"box", "trace_gbps", "observed_step_ns", "observed_step_ns_mean", "step_stat", "notes", "fidelity"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("replay JSON lacks %q", k)
		}
	}
	if vm := doc["variants"].([]any)[1].(map[string]any)["vs_model"]; vm != 1.25 {
		t.Errorf("pinned's vs_model %v, want 1.25", vm)
	}
	v := doc["variants"].([]any)[0].(map[string]any)
	for _, k := range []string{"step_ns_median", "step_ns_mean", "gpu_ns_mean", "speedup", "step_samples_ns", "gpu_samples_ns"} {
		if _, ok := v[k]; !ok {
			t.Errorf("variant JSON lacks %q", k)
		}
	}
}

// TestReplayKernelFloorAndStatistics: a launch-bound replay's box line gives
// the replayed kernel, the empty kernel's floor and the trace's kernel; the
// GPU column says it is a mean.
func TestReplayKernelFloorAndStatistics(t *testing.T) {
	r := measuredReport()
	r.Step.Launches = &replay.Launches{Kernels: 800, KernelNS: 935, IntervalNS: 10_000}
	r.Box = &replay.Box{KernelNS: 1_100, KernelFloorNS: 690}
	var txt, md bytes.Buffer
	if err := ForReplay(r).Render(&txt, Text, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := ForReplay(r).Render(&md, Markdown, Options{}); err != nil {
		t.Fatal(err)
	}
	line := "ne launch-bound kernel here: 1.10 µs back to back in a CUDA graph (an empty kernel: 690 ns, taken out of each kernel's spin); in the trace: 935 ns"
	for name, out := range map[string]string{"text": txt.String(), "markdown": md.String()} {
		if !strings.Contains(out, line) { // "One" or "one"
			t.Errorf("%s report lacks %q:\n%s", name, line, out)
		}
	}
	if !strings.Contains(txt.String(), "GPU mean") || !strings.Contains(md.String(), "GPU per step (mean)") {
		t.Errorf("the GPU column does not say it is a mean:\n%s\n%s", txt.String(), md.String())
	}
}

// TestReplaySaysTheProfilerCostTakenOut: where the replay took the
// profiler's cost out of the host phases, every rendering says how much,
// from how many events at what cost, and how it was obtained.
func TestReplaySaysTheProfilerCostTakenOut(t *testing.T) {
	p := &replay.Plan{File: "run.json", ObservedStepNS: 9_000_000, ObservedStepMeanNS: 9_000_000, ObservedGPUNS: 700_000,
		Step:     replay.Phases{OtherNS: 500_000, ComputeNS: 700_000},
		Profiler: &replay.Profiler{EventNS: 1500, Source: "--profiler-cost 1.5us", DataEvents: 0, IdleEvents: 1600, RemovedNS: 2_400_000},
		Variants: []replay.Variant{{Name: replay.Observed, PredictedSpeedup: 1}}}
	r := replay.NewResult(p, "", nil, 0, nil)
	for _, f := range []Format{Text, Markdown, HTML} {
		var b bytes.Buffer
		if err := ForReplay(r).Render(&b, f, Options{}); err != nil {
			t.Fatal(err)
		}
		// Text wraps lines: compare with the line breaks taken out.
		out := strings.Join(strings.Fields(html.UnescapeString(b.String())), " ")
		if want := "the profiler's own cost taken out: 2.40 ms a step (1600 events at 1.50 µs, --profiler-cost 1.5us)"; !strings.Contains(out, want) {
			t.Errorf("%s lacks %q:\n%s", f, want, b.String())
		}
	}
	// Spread over the host phases by their length (--unprofiled-step
	// where the trace records too few events): the share, not a cost per
	// event.
	p.Profiler = &replay.Profiler{Source: "from --unprofiled-step 6.60 ms", RemovedNS: 2_400_000, HostShare: 0.3, UnprofiledStepNS: 6_600_000}
	r = replay.NewResult(p, "", nil, 0, nil)
	for _, f := range []Format{Text, Markdown, HTML} {
		var b bytes.Buffer
		if err := ForReplay(r).Render(&b, f, Options{}); err != nil {
			t.Fatal(err)
		}
		out := strings.Join(strings.Fields(html.UnescapeString(b.String())), " ")
		if want := "the profiler's own cost taken out: 2.40 ms a step (30 % of each host phase, from --unprofiled-step 6.60 ms)"; !strings.Contains(out, want) || strings.Contains(out, "events at") {
			t.Errorf("%s lacks %q:\n%s", f, want, b.String())
		}
	}
}

// TestReplayDryRunNotes: a dry run's notes (an unprofiled step given far
// longer than the trace's) appear in every renderer, and a dry run
// without notes shows no notes section.
func TestReplayDryRunNotes(t *testing.T) {
	p := &replay.Plan{File: "run.json", ObservedStepNS: 20_000_000, ObservedStepMeanNS: 21_000_000, ObservedGPUNS: 19_000_000,
		Step:     replay.Phases{ComputeNS: 400_000, OtherNS: 500_000, Sync: true},
		Variants: []replay.Variant{{Name: replay.Observed, Plan: replay.Setup{SyncEvery: 1}, PredictedSpeedup: 1}}}
	for _, given := range []int64{0, 30_000_000} {
		p.GivenStepNS = given
		r := replay.NewResult(p, "", nil, 0, nil)
		for _, f := range []Format{Text, Markdown, HTML} {
			var b bytes.Buffer
			if err := ForReplay(r).Render(&b, f, Options{}); err != nil {
				t.Fatal(err)
			}
			out := html.UnescapeString(b.String())
			got := strings.Contains(out, "the traced run ran") && strings.Contains(out, "1.43x the trace's mean step")
			if got != (given > 0) {
				t.Errorf("%v, given %d: note shown %v:\n%s", f, given, got, out)
			}
			if given == 0 && strings.Contains(out, "Notes") {
				t.Errorf("%v: a dry run without notes has a notes section:\n%s", f, out)
			}
		}
	}
}

// TestReplayMarkdownTables: every table of a replay's Markdown, dry run or
// measured, has as many cells in each row as in its header.
func TestReplayMarkdownTables(t *testing.T) {
	measured := measuredReport()
	p := &replay.Plan{File: "run.json", ObservedStepNS: 20_000_000, ObservedStepMeanNS: 21_000_000,
		Step:     replay.Phases{ComputeNS: 400_000, OtherNS: 500_000, Sync: true},
		Variants: []replay.Variant{{Name: replay.Observed, Plan: replay.Setup{SyncEvery: 1}, PredictedSpeedup: 1, ModelStepNS: 19_000_000}}}
	for _, r := range []*replay.Result{measured, replay.NewResult(p, "", nil, 0, nil)} {
		var b bytes.Buffer
		if err := ForReplay(r).Render(&b, Markdown, Options{}); err != nil {
			t.Fatal(err)
		}
		for _, err := range mdcheck.Structure(b.String()) {
			t.Errorf("dry run %v: %v", r.DryRun, err)
		}
	}
}
