package plot

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/internal/units"
)

// severityColor is a finding's bar colour.
func severityColor(s analyze.Severity) color.NRGBA {
	switch s {
	case analyze.SeverityError:
		return colError
	case analyze.SeverityWarning:
		return colWarning
	}
	return colInfo
}

// NewFindings draws one horizontal bar per finding: its wasted time per
// steady step, coloured by severity, labelled with its ID on the axis and
// its share and estimated speedup at the bar's end, against the median
// steady step. Without findings the plot says so.
func NewFindings(r *audit.Analysis) (*Figure, error) {
	f := newFigure("findings", "Wasted time per steady step, by finding")
	fs := r.Findings
	if len(fs) == 0 {
		f.Caption = "No findings: nothing starves the GPU beyond the info threshold."
		emptyNote(f, "No findings: nothing starves the GPU beyond the info threshold")
		return f, nil
	}
	f.Caption = "Each bar is the time a finding wastes per steady step, coloured by severity; gpu-idle is the symptom and the others are its causes, so their bars overlap it rather than add up."
	var longest int64
	for _, x := range fs {
		longest = max(longest, x.WastedNS)
	}
	u := unitFor(float64(max(longest, r.Steps.MedianNS)))
	n := len(fs)
	p := f.Plot
	p.X.Label.Text = fmt.Sprintf("wasted time per steady step (%s)", u.Name)
	p.X.Min = 0
	p.X.Max = max(u.of(longest)*1.08, u.of(r.Steps.MedianNS)*1.05)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	bareAxis(&p.Y)
	f.grid(false)

	bars := &boxes{MinWidth: vg.Points(1.5)}
	texts := &notes{Style: textStyle(11, colRule, draw.XLeft, draw.YCenter)}
	inside := &notes{Style: textStyle(11, rgb(0xff, 0xff, 0xff), draw.XRight, draw.YCenter)}
	ticks := make([]plot.Tick, n)
	seen := map[analyze.Severity]bool{}
	for i, x := range fs {
		y := float64(n - 1 - i)
		ticks[i] = plot.Tick{Value: y, Label: x.ID}
		bars.Boxes = append(bars.Boxes, box{X0: 0, X1: u.of(x.WastedNS), Y0: y - 0.32, Y1: y + 0.32,
			Fill: severityColor(x.Severity), Label: x.Severity.String(), Group: x.ID})
		// The figures go inside a bar longer than half the axis, else
		// after it.
		t := note{X: u.of(x.WastedNS), Y: y, DX: vg.Points(5),
			Text: fmt.Sprintf("%s per step, %s of the time, est. %s", units.Dur(x.WastedNS), units.Pct(x.Share), units.Speedup(x.EstimatedSpeedup))}
		if t.X > p.X.Max/2 {
			t.DX = -vg.Points(5)
			if x.Severity == analyze.SeverityWarning {
				t.Color = colRule // white is unreadable on amber
			}
			inside.Notes = append(inside.Notes, t)
		} else {
			texts.Notes = append(texts.Notes, t)
		}
		seen[x.Severity] = true
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	f.add(bars)
	median := &rules{At: []float64{u.of(r.Steps.MedianNS)},
		Line: draw.LineStyle{Color: colRule, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}}
	if r.Steps.MedianNS > 0 {
		f.add(median)
	}
	f.add(texts, inside)
	for _, s := range []analyze.Severity{analyze.SeverityError, analyze.SeverityWarning, analyze.SeverityInfo} {
		if seen[s] {
			f.legend(s.String(), swatch{Fill: severityColor(s)})
		}
	}
	if r.Steps.MedianNS > 0 {
		f.legend("median steady step ("+units.Dur(r.Steps.MedianNS)+")", swatch{AsLine: true, Line: median.Line})
	}
	return f, nil
}
