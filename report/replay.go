package report

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/replay"
)

// planLine describes the replayed step in one line.
func planLine(r *replay.Report) string {
	st := r.Step
	var copies []string
	for _, c := range st.Copies {
		kind := "pinned"
		if c.Pageable {
			kind = "pageable"
		}
		copies = append(copies, fmt.Sprintf("%s %s %s", c.Dir, units.Bytes(c.Bytes), kind))
	}
	parts := []string{fmt.Sprintf("data %s (host work)", units.Dur(st.DataNS))}
	if len(copies) > 0 {
		parts = append(parts, "copies "+strings.Join(copies, ", "))
	}
	parts = append(parts, fmt.Sprintf("compute %s", units.Dur(st.ComputeNS)), fmt.Sprintf("other host work %s", units.Dur(st.OtherNS)))
	if st.Munmaps > 0 {
		parts = append(parts, fmt.Sprintf("munmap of %d × %s", st.Munmaps, units.Bytes(st.MunmapBytes)))
	}
	if st.Sync {
		parts = append(parts, "a sync each step")
	}
	return strings.Join(parts, "; ")
}

func setupText(s replay.Setup) string {
	var p []string
	if s.Pinned {
		p = append(p, "pinned buffers")
	}
	if s.CopyStream {
		p = append(p, "copy stream, double-buffered")
	}
	if s.Workers > 0 {
		p = append(p, fmt.Sprintf("%d producer workers", s.Workers))
	}
	if s.ReuseBuffers {
		p = append(p, "buffers reused")
	}
	if len(p) == 0 {
		return "as observed"
	}
	return strings.Join(p, ", ")
}

func fixFor(v replay.Variant) string {
	if v.FixFor == nil {
		return "-"
	}
	return *v.FixFor
}

// replayText writes the terminal report: per variant the measured step
// time, speedup, predicted speedup and GPU time, then the fidelity of the
// observed replay.
func replayText(p *printer, r *replay.Report) {
	if r.DryRun {
		p.line("replay plan for %s (dry run: nothing was run)", filepath.Base(r.File))
	} else {
		p.line("replay of %s on %s, %d steps per variant", filepath.Base(r.File), r.Device, r.Steps)
	}
	p.line("observed in the trace: step %s (median), GPU %s per step (copies + kernels)", units.Dur(r.ObservedStepNS), units.Dur(r.ObservedGPUNS))
	p.line("replayed step: %s", planLine(r))
	p.line("")
	if r.DryRun {
		p.line("%-19s %-20s %-44s %9s", "variant", "fixes", "setup", "predicted")
		for _, v := range r.Variants {
			p.line("%-19s %-20s %-44s %9s", v.Name, fixFor(v), setupText(v.Plan), units.Speedup(v.PredictedSpeedup))
		}
		return
	}
	p.line("%-19s %-20s %11s %8s %10s %11s   %s", "variant", "fixes", "step", "speedup", "predicted", "GPU/step", "setup")
	for _, v := range r.Variants {
		p.line("%-19s %-20s %11s %8s %10s %11s   %s", v.Name, fixFor(v), units.Dur(v.StepNSMedian), units.Speedup(v.Speedup),
			units.Speedup(v.PredictedSpeedup), units.Dur(v.GPUNSMedian), setupText(v.Plan))
	}
	if f := r.Fidelity; f != nil {
		p.line("")
		p.line("fidelity of the observed replay: step %.2f (%s replayed / %s in the trace), GPU %.2f (%s / %s)",
			f.Step, units.Dur(r.Variants[0].StepNSMedian), units.Dur(r.ObservedStepNS),
			f.GPU, units.Dur(r.Variants[0].GPUNSMedian), units.Dur(r.ObservedGPUNS))
		for _, l := range wrap(fidelityNote(f), textWidth-2) {
			p.line("  %s", l)
		}
	}
}

// fidelityNote says how far to trust the measured speedups.
func fidelityNote(f *replay.Fidelity) string {
	within := func(x float64) bool { return x >= 0.75 && x <= 1.25 }
	switch {
	case within(f.Step) && within(f.GPU):
		return "The replay reproduces the trace within 25 %: its speedups are measured on the same pattern."
	case !within(f.GPU):
		return "The replayed GPU time differs from the trace by more than 25 %: copies or kernels on this machine run at another speed than where the trace was taken, so speedups may differ there."
	}
	return "The replayed step differs from the trace by more than 25 %: compare speedups with care."
}

// replayMarkdown writes the replay report for a pull request.
func replayMarkdown(p *printer, r *replay.Report, o Options) {
	p.line("## traceaudit replay: %s", mdEscape(filepath.Base(r.File)))
	p.line("")
	if r.DryRun {
		p.line("Dry run: the plan only, nothing was run.")
	} else {
		p.line("On %s, %d measured steps per variant.", mdEscape(r.Device), r.Steps)
	}
	p.line("")
	p.line("Observed in the trace: step %s, GPU %s per step. Replayed step: %s.", units.Dur(r.ObservedStepNS), units.Dur(r.ObservedGPUNS), mdEscape(planLine(r)))
	p.line("")
	if r.DryRun {
		p.line("| variant | fixes | setup | predicted speedup |")
		p.line("|---|---|---|---:|")
		for _, v := range r.Variants {
			p.line("| `%s` | %s | %s | %s |", v.Name, fixFor(v), setupText(v.Plan), units.Speedup(v.PredictedSpeedup))
		}
	} else {
		p.line("| variant | fixes | step (median) | measured speedup | predicted | GPU per step | setup |")
		p.line("|---|---|---:|---:|---:|---:|---|")
		for _, v := range r.Variants {
			p.line("| `%s` | %s | %s | **%s** | %s | %s | %s |", v.Name, fixFor(v), units.Dur(v.StepNSMedian), units.Speedup(v.Speedup),
				units.Speedup(v.PredictedSpeedup), units.Dur(v.GPUNSMedian), setupText(v.Plan))
		}
		if f := r.Fidelity; f != nil {
			p.line("")
			p.line("Fidelity of the observed replay: step %.2f, GPU %.2f. %s", f.Step, f.GPU, fidelityNote(f))
		}
	}
	mdPlots(p, o.Plots, false)
	mdCommand(p, o.Command)
}
