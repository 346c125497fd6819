package plot

import (
	"errors"
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/internal/units"
)

// NewStepsDiff draws the mean steady step of before and after as two
// stacked bars of the two-clock split, with the step speedup (before's
// median step over after's, as `traceaudit diff` computes it) in the title.
// It needs only the reports' JSON fields.
func NewStepsDiff(before, after *audit.Analysis) (*Figure, error) {
	if before == nil || after == nil {
		return nil, errors.New("plot steps-diff: need both reports")
	}
	speed := "n/a"
	if after.Steps.MedianNS > 0 && before.Steps.MedianNS > 0 {
		speed = units.Speedup(float64(before.Steps.MedianNS) / float64(after.Steps.MedianNS))
	}
	f := newFigure("steps-diff", fmt.Sprintf("Mean steady step before and after: step speedup %s", speed))
	f.Caption = fmt.Sprintf("Each bar is the mean steady step of one trace, split like the steps plot; the speedup compares median steps (%s before, %s after).",
		units.Dur(before.Steps.MedianNS), units.Dur(after.Steps.MedianNS))
	side := []struct {
		name string
		r    *audit.Analysis
	}{{"before", before}, {"after", after}}
	var tallest int64
	for _, s := range side {
		tallest = max(tallest, s.r.Steps.BreakdownNS.Total())
	}
	u := unitFor(float64(tallest))
	p := f.Plot
	p.Y.Label.Text = fmt.Sprintf("mean steady step (%s)", u.Name)
	p.X.Min, p.X.Max = -0.6, 1.6
	p.Y.Min, p.Y.Max = 0, max(u.of(tallest)*1.12, 1e-9)
	f.grid(true)
	bars := &boxes{}
	totals := &notes{Style: textStyle(11, colRule, draw.XCenter, draw.YBottom)}
	ticks := make([]plot.Tick, len(side))
	for i, s := range side {
		label := fmt.Sprintf("%s\n%s", s.name, filepath.Base(s.r.File))
		ticks[i] = plot.Tick{Value: float64(i), Label: label}
		top := stackBar(bars, s.r.Steps.BreakdownNS, float64(i), 0.3, u, s.name, false)
		totals.Notes = append(totals.Notes, note{X: float64(i), Y: top, DY: vg.Points(2),
			Text: fmt.Sprintf("%s (%s)", units.Dur(s.r.Steps.BreakdownNS.Total()), verdictHead(s.r.Verdict))})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Tick.Length = 0
	f.add(bars, totals)
	bucketLegend(f, []index.Breakdown{before.Steps.BreakdownNS, after.Steps.BreakdownNS})
	return f, nil
}

// ReplayBar is one replay variant: its measured step time (0 in a dry
// run) and the step time the analyzers predict for it, in nanoseconds.
type ReplayBar struct {
	Name                    string
	MeasuredNS, PredictedNS int64
}

// NewReplay draws measured vs predicted step time per replay variant as
// grouped bars; measured bars carry their speedup over the "observed"
// variant when there is one.
func NewReplay(variants []ReplayBar) (*Figure, error) {
	f := newFigure("replay", "Replay: measured vs predicted step time per variant")
	if len(variants) == 0 {
		f.Caption = "No replay variants were run."
		emptyNote(f, "no replay variants")
		return f, nil
	}
	f.Caption = "For each variant, the solid bar is the step time measured on the GPU and the hatched bar the analyzers' prediction; lower is faster."
	var tallest, observed int64
	for _, v := range variants {
		tallest = max(tallest, v.MeasuredNS, v.PredictedNS)
		if v.Name == "observed" {
			observed = v.MeasuredNS
		}
	}
	u := unitFor(float64(tallest))
	p := f.Plot
	p.Y.Label.Text = fmt.Sprintf("step time (%s)", u.Name)
	p.X.Label.Text = "replay variant"
	p.X.Min, p.X.Max = -0.6, float64(len(variants))-0.4
	p.Y.Min, p.Y.Max = 0, max(u.of(tallest)*1.14, 1e-9)
	f.grid(true)
	bars := &boxes{}
	texts := &notes{Style: textStyle(10, colRule, draw.XCenter, draw.YBottom)}
	ticks := make([]plot.Tick, len(variants))
	measured := rgb(0x3b, 0x6e, 0xa8)
	for i, v := range variants {
		x := float64(i)
		ticks[i] = plot.Tick{Value: x, Label: v.Name}
		if v.MeasuredNS > 0 {
			bars.Boxes = append(bars.Boxes, box{X0: x - 0.36, X1: x, Y0: 0, Y1: u.of(v.MeasuredNS), Fill: measured, Label: "measured", Group: v.Name})
			t := units.Dur(v.MeasuredNS)
			if observed > 0 && v.Name != "observed" {
				t += "\n" + units.Speedup(float64(observed)/float64(v.MeasuredNS))
			}
			texts.Notes = append(texts.Notes, note{X: x - 0.18, Y: u.of(v.MeasuredNS), DY: vg.Points(2), Text: t})
		}
		if v.PredictedNS > 0 {
			bars.Boxes = append(bars.Boxes, box{X0: x, X1: x + 0.36, Y0: 0, Y1: u.of(v.PredictedNS), Fill: fade(measured, 90), Hatch: true, Label: "predicted", Group: v.Name})
			texts.Notes = append(texts.Notes, note{X: x + 0.18, Y: u.of(v.PredictedNS), DY: vg.Points(2), Text: units.Dur(v.PredictedNS)})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Tick.Length = 0
	f.add(bars, texts)
	f.legend("measured", swatch{Fill: measured})
	f.legend("predicted", swatch{Fill: fade(measured, 90), Hatch: true})
	return f, nil
}
