package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/replay"
)

// ForReplay is the document of a replay or of its plan (a dry run): text,
// Markdown, JSON and HTML; the report folder of a replay that ran shows
// the measured and predicted step of each variant.
func ForReplay(r *replay.Result) *Document {
	return &Document{value: r, formats: map[Format]renderer{
		Text:     asText(func(p *printer) { replayText(p, r) }),
		Markdown: asMarkdown(func(p *printer, o Options) { replayMarkdown(p, r, o) }),
		JSON:     asJSON(r),
		HTML:     asHTML(func() htmlPage { return replayHTML(r) }),
	}, plots: func(p Plotter) error {
		if r.DryRun {
			return nil
		}
		return p.Replay(r)
	}}
}

// planLine describes the replayed step in one line: the step model's
// schedule, and the phases of the variants no schedule holds.
func planLine(r *replay.Result) string {
	s := r.Schedule
	if s == nil {
		return phasesLine(r)
	}
	line := fmt.Sprintf("the step model's window, %d steps of %d host calls and %d kernels and copies each, on %s and %s",
		s.Steps, s.CallsPerStep, s.WorkPerStep, plural(s.Threads, "thread"), plural(s.Streams, "stream"))
	if len(s.ByPhases) > 0 {
		line += fmt.Sprintf("; by phases (%s): %s", strings.Join(s.ByPhases, ", "), phasesLine(r))
	}
	return line
}

// phasesLine describes the step the phases engine replays in one line.
func phasesLine(r *replay.Result) string {
	st := r.Step
	var copies []string
	for _, c := range st.Copies {
		kind := "pinned"
		if c.Pageable {
			kind = "pageable"
		}
		copies = append(copies, fmt.Sprintf("%s %s %s", c.Dir, units.Bytes(c.Bytes), kind))
	}
	who := "host work"
	switch st.Batches {
	case replay.BatchesMain:
		who = "the main thread builds the batch"
	case replay.BatchesWorkers:
		who = "waiting for DataLoader workers' batches"
	case replay.BatchesReused:
		who = "host work; the batch buffer is reused"
	}
	parts := []string{fmt.Sprintf("data %s (%s)", units.Dur(st.DataNS), who)}
	if st.PinNS > 0 {
		parts = append(parts, fmt.Sprintf("pinning on the main thread %s", units.Dur(st.PinNS)))
	}
	if len(copies) > 0 {
		parts = append(parts, "copies "+strings.Join(copies, ", "))
	}
	if l := st.Launches; l != nil {
		parts = append(parts, fmt.Sprintf("%d launches of %s kernels, one every %s", l.Kernels, units.Dur(l.KernelNS), units.Dur(l.IntervalNS)))
	}
	parts = append(parts, fmt.Sprintf("compute %s", units.Dur(st.ComputeNS)), fmt.Sprintf("other host work %s", units.Dur(st.OtherNS)))
	if st.Munmaps > 0 {
		parts = append(parts, fmt.Sprintf("munmap of %d × %s", st.Munmaps, units.Bytes(st.MunmapBytes)))
	}
	if sc := st.SmallCopies; sc != nil {
		parts = append(parts, fmt.Sprintf("%d small pageable copies of %s, each waited for after %s of host time", sc.Count,
			units.Bytes(sc.Bytes), units.Dur(sc.GapNS)))
	}
	if rs := st.Restart; rs != nil {
		parts = append(parts, fmt.Sprintf("the loader's restart every %d steps, %s", rs.EverySteps, units.Dur(rs.StallNS)))
	}
	if c := st.Churn; c != nil {
		parts = append(parts, fmt.Sprintf("%d device allocations and frees a step, %s at least", c.Allocs, units.Dur(c.IdleNS)))
	}
	if st.Sync {
		parts = append(parts, "a sync each step")
	}
	switch pr := r.Profiler; {
	case pr != nil && pr.HostShare > 0:
		parts = append(parts, fmt.Sprintf("the profiler's own cost taken out: %s a step (%s of each host phase, %s)",
			units.Dur(pr.RemovedNS), units.Pct(pr.HostShare), pr.Source))
	case pr != nil:
		parts = append(parts, fmt.Sprintf("the profiler's own cost taken out: %s a step (%d events at %s, %s)",
			units.Dur(pr.RemovedNS), pr.DataEvents+pr.IdleEvents, units.Dur(pr.EventNS), pr.Source))
	}
	return strings.Join(parts, "; ")
}

func setupText(s replay.Setup) string {
	var p []string
	if s.Pinned {
		switch s.PinOn {
		case replay.PinOnMain:
			p = append(p, "pinned (on the main thread)")
		case replay.PinOnThread:
			p = append(p, "pinned (pin thread)")
		default:
			p = append(p, "pinned buffers")
		}
	}
	if s.CopyStream {
		p = append(p, "copy stream, double-buffered")
	}
	if s.Workers > 0 {
		p = append(p, fmt.Sprintf("%d workers", s.Workers))
	}
	if s.Feeders > 0 {
		p = append(p, fmt.Sprintf("batches from %d workers", s.Feeders))
	}
	if s.ReuseBuffers {
		p = append(p, "buffers reused")
	}
	if s.PackCopies {
		p = append(p, "small copies packed into one")
	}
	if s.PersistentWorkers {
		p = append(p, "workers kept across epochs")
	}
	if s.KeepCache {
		p = append(p, "allocator cache kept")
	}
	if s.CacheData {
		p = append(p, "reads from memory")
	}
	if s.FewerCollectives {
		p = append(p, "fewer, larger collectives")
	}
	if s.CUDAGraph {
		p = append(p, "CUDA graph")
	}
	if s.SyncEvery > 1 {
		p = append(p, fmt.Sprintf("sync every %d steps", s.SyncEvery))
	}
	if len(p) == 0 {
		return "as observed"
	}
	return strings.Join(p, ", ")
}

func fixFor(v replay.VariantResult) string {
	if v.FixFor == nil {
		return "-"
	}
	return *v.FixFor
}

// boxLine sets the box's copy bandwidths beside the trace's, and one
// short kernel's time here beside the trace's.
func boxLine(r *replay.Result) string {
	if r.Box == nil {
		return ""
	}
	var parts []string
	if r.Box.Bytes > 0 {
		var tr []string
		if g := r.TraceGBps.Pageable; g > 0 {
			tr = append(tr, fmt.Sprintf("pageable %.1f GB/s", g))
		}
		if g := r.TraceGBps.Pinned; g > 0 {
			tr = append(tr, fmt.Sprintf("pinned %.1f GB/s", g))
		}
		trace := "no host-to-device copies"
		if len(tr) > 0 {
			trace = strings.Join(tr, ", ")
		}
		parts = append(parts, fmt.Sprintf("copy bandwidth here at %s: pageable %.1f GB/s, pinned %.1f GB/s; in the trace: %s",
			units.Bytes(r.Box.Bytes), r.Box.PageableGBps, r.Box.PinnedGBps, trace))
	}
	if l := r.Step.Launches; r.Box.KernelNS > 0 && l != nil {
		floor := ""
		if r.Box.KernelFloorNS > 0 {
			floor = fmt.Sprintf(" (an empty kernel: %s, taken out of each kernel's spin)", units.Dur(r.Box.KernelFloorNS))
		}
		parts = append(parts, fmt.Sprintf("one launch-bound kernel here: %s back to back in a CUDA graph%s; in the trace: %s",
			units.Dur(r.Box.KernelNS), floor, units.Dur(l.KernelNS)))
	}
	return strings.Join(parts, "; ")
}

// replayText writes the terminal report: per variant the measured mean and
// median step, speedup, predicted speedup and GPU time, then the box's
// bandwidths, the fidelity of the observed replay and the notes.
func replayText(p *printer, r *replay.Result) {
	if r.DryRun {
		p.line("replay plan for %s (dry run: nothing was run)", filepath.Base(r.File))
	} else {
		p.line("replay of %s on %s, %d steps per variant", filepath.Base(r.File), r.Device, r.Steps)
	}
	p.line("observed in the trace: step %s (mean), %s (median); GPU %s per step (copies + kernels, mean)",
		units.Dur(r.ObservedStepMeanNS), units.Dur(r.ObservedStepNS), units.Dur(r.ObservedGPUNS))
	for _, l := range wrap("replayed step: "+planLine(r), p.cols()) {
		p.line("%s", l)
	}
	p.line("")
	if r.DryRun {
		p.line("%-19s %-20s %9s %11s   %s", "variant", "fixes", "predicted", "model step", "setup")
		for _, v := range r.Variants {
			p.line("%-19s %-20s %9s %11s   %s", v.Name, fixFor(v), units.Speedup(v.PredictedSpeedup), modelStep(v.Variant), setupOf(r, v))
		}
		if len(r.Notes) > 0 {
			p.line("")
			textNotes(p, r.Notes)
		}
		return
	}
	p.line("%-19s %-20s %11s %8s %10s %11s %8s %11s %11s   %s", "variant", "fixes", "step mean", "speedup", "predicted", "model step",
		"vs model", "median", "GPU mean", "setup")
	for _, v := range r.Variants {
		p.line("%-19s %-20s %11s %8s %10s %11s %8s %11s %11s   %s", v.Name, fixFor(v), units.Dur(v.StepNSMean), units.Speedup(v.Speedup),
			units.Speedup(v.PredictedSpeedup), modelStep(v.Variant), vsModel(v.Measured), units.Dur(v.StepNSMedian), gpuMean(v.Measured), setupOf(r, v))
	}
	p.line("")
	if l := boxLine(r); l != "" {
		p.line("%s", l)
	}
	if f := r.Fidelity; f != nil {
		gpu := fmt.Sprintf(", GPU %.2f (%s / %s)", f.GPU, units.Dur(r.Variants[0].GPUNSMean), units.Dur(r.ObservedGPUNS))
		if r.Variants[0].GPUNSMean == 0 {
			gpu = "" // the step model's schedule: GPU time not measured
		}
		p.line("fidelity of the observed replay: step %.2f (%s replayed / %s in the trace, means), median %.2f%s",
			f.Step, units.Dur(r.Variants[0].StepNSMean), units.Dur(r.ObservedStepMeanNS), f.StepMedian, gpu)
		textNotes(p, notes(r))
	}
}

// gpuMean is a variant's measured GPU time per step, "-" where it was
// not measured (a variant run from the step model's schedule).
func gpuMean(m replay.Measured) string {
	if m.GPUNSMean <= 0 {
		return "-"
	}
	return units.Dur(m.GPUNSMean)
}

// setupOf is what variant v runs: the step model's schedule with the fix
// applied, or the phases' setup.
func setupOf(r *replay.Result, v replay.VariantResult) string {
	graph := v.Engine == replay.EngineGraph
	if r.DryRun && r.Schedule != nil {
		graph = !slices.Contains(r.Schedule.ByPhases, v.Name)
	}
	if graph {
		if v.Name == replay.Observed {
			return "the model's schedule"
		}
		return "the model's schedule with " + v.Name
	}
	return setupText(v.Plan)
}

// modelStep is the step model's predicted step for variant v ("-" where
// the model made none).
func modelStep(v replay.Variant) string {
	if v.ModelStepNS <= 0 {
		return "-"
	}
	return units.Dur(v.ModelStepNS)
}

// vsModel is the measured step over the model's ("-" where there is none).
func vsModel(m replay.Measured) string {
	if m.VsModel <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", m.VsModel)
}

// textNotes writes notes as an indented list, wrapped.
func textNotes(p *printer, ns []string) {
	for _, n := range ns {
		hanging(p, "  - ", "    ", n, p.cols()-4)
	}
}

// notes are the report's notes, or the one line saying that the replay is
// faithful when there is nothing to note.
func notes(r *replay.Result) []string {
	if len(r.Notes) > 0 {
		return r.Notes
	}
	return []string{fmt.Sprintf("The replay reproduces the trace within %.0f %% (step and GPU time): its speedups are measured on the same pattern.",
		100*(replay.FidelityHigh-1))}
}

// replayMarkdown writes the replay report for a pull request.
func replayMarkdown(p *printer, r *replay.Result, o Options) {
	p.line("## traceaudit replay: %s", mdEscape(filepath.Base(r.File)))
	p.line("")
	if r.DryRun {
		p.line("Dry run: the plan only, nothing was run.")
	} else {
		p.line("On %s, %d measured steps per variant.", mdEscape(r.Device), r.Steps)
	}
	p.line("")
	p.line("Observed in the trace: step %s (mean), %s (median), GPU %s per step. Replayed step: %s.",
		units.Dur(r.ObservedStepMeanNS), units.Dur(r.ObservedStepNS), units.Dur(r.ObservedGPUNS), mdEscape(planLine(r)))
	p.line("")
	if r.DryRun {
		p.line("| variant | fixes | setup | predicted speedup | model step |")
		p.line("|---|---|---|---:|---:|")
		for _, v := range r.Variants {
			p.line("| `%s` | %s | %s | %s | %s |", v.Name, fixFor(v), setupOf(r, v), units.Speedup(v.PredictedSpeedup), modelStep(v.Variant))
		}
		if len(r.Notes) > 0 {
			p.line("")
			for _, n := range r.Notes {
				p.line("- %s", mdEscape(n))
			}
		}
	} else {
		p.line("| variant | fixes | step (mean) | measured speedup (means) | predicted | model step | vs model | step (median) | GPU per step (mean) | setup |")
		p.line("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
		for _, v := range r.Variants {
			p.line("| `%s` | %s | %s | **%s** | %s | %s | %s | %s | %s | %s |", v.Name, fixFor(v), units.Dur(v.StepNSMean), units.Speedup(v.Speedup),
				units.Speedup(v.PredictedSpeedup), modelStep(v.Variant), vsModel(v.Measured), units.Dur(v.StepNSMedian), gpuMean(v.Measured), setupOf(r, v))
		}
		p.line("")
		if l := boxLine(r); l != "" {
			p.line("%s.", mdEscape(strings.ToUpper(l[:1])+l[1:]))
			p.line("")
		}
		if f := r.Fidelity; f != nil {
			p.line("Fidelity of the observed replay (means): step %.2f, median step %.2f, GPU %.2f.", f.Step, f.StepMedian, f.GPU)
			p.line("")
			for _, n := range notes(r) {
				p.line("- %s", mdEscape(n))
			}
		}
		for _, c := range replayCharts(r) {
			mermaidBlock(p, c)
		}
	}
	mdPlots(p, o.Plots, false)
	mdCommand(p, o.Command)
}

func replayHTML(r *replay.Result) htmlPage {
	pg := htmlPage{Title: "traceaudit replay: " + filepath.Base(r.File)}
	if r.DryRun {
		pg.Sub = []string{"Dry run: the plan only, nothing was run."}
	} else {
		pg.Sub = []string{fmt.Sprintf("On %s, %d measured steps per variant.", r.Device, r.Steps)}
	}
	pg.Lead = []string{fmt.Sprintf("Observed in the trace: step %s (mean), %s (median), GPU %s per step. Replayed step: %s.",
		units.Dur(r.ObservedStepMeanNS), units.Dur(r.ObservedStepNS), units.Dur(r.ObservedGPUNS), planLine(r))}
	t := htmlTable{ID: "variants", Caption: "Variants"}
	if r.DryRun {
		t.Head = []htmlHead{txt("variant"), txt("fixes"), txt("setup"), hnum("predicted speedup"), hnum("model step")}
		for _, v := range r.Variants {
			t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{ct(v.Name), ct(fixFor(v)), ct(setupOf(r, v)), cn(units.Speedup(v.PredictedSpeedup)), cn(modelStep(v.Variant))}})
		}
		if len(r.Notes) > 0 {
			pg.NotesTitle = "Notes"
			for _, n := range r.Notes {
				pg.Notes = append(pg.Notes, htmlNote{Text: n})
			}
		}
	} else {
		t.Head = []htmlHead{txt("variant"), txt("fixes"), hnum("step (mean)"), hnum("measured speedup"), hnum("predicted"), hnum("model step"),
			hnum("vs model"), hnum("step (median)"), hnum("GPU per step"), txt("setup")}
		for _, v := range r.Variants {
			t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{ct(v.Name), ct(fixFor(v)), cn(units.Dur(v.StepNSMean)), cn(units.Speedup(v.Speedup)),
				cn(units.Speedup(v.PredictedSpeedup)), cn(modelStep(v.Variant)), cn(vsModel(v.Measured)), cn(units.Dur(v.StepNSMedian)), cn(gpuMean(v.Measured)), ct(setupOf(r, v))}})
		}
		if l := boxLine(r); l != "" {
			pg.Lead = append(pg.Lead, strings.ToUpper(l[:1])+l[1:]+".")
		}
		if f := r.Fidelity; f != nil {
			pg.Lead = append(pg.Lead, fmt.Sprintf("Fidelity of the observed replay (means): step %.2f, median step %.2f, GPU %.2f.", f.Step, f.StepMedian, f.GPU))
			pg.NotesTitle = "Notes"
			for _, n := range notes(r) {
				pg.Notes = append(pg.Notes, htmlNote{Text: n})
			}
		}
	}
	pg.Tables = append(pg.Tables, t)
	return pg
}

// replayCharts show the measured mean step of each variant, the figure
// the replay's speedups compare (none in a dry run).
func replayCharts(r *replay.Result) [][]string {
	if r.DryRun || len(r.Variants) == 0 {
		return nil
	}
	var top int64
	for _, v := range r.Variants {
		top = max(top, v.StepNSMean)
	}
	unit, div := timeUnit(top)
	labels := make([]string, len(r.Variants))
	values := make([]float64, len(r.Variants))
	for i, v := range r.Variants {
		labels[i], values[i] = v.Name, float64(v.StepNSMean)/div
	}
	return [][]string{mermaidBars("Measured mean step per variant ("+unit+")", unit, labels, values, true)}
}
