package plot

import (
	"fmt"
	"image/color"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// bucketInfo is one bucket of the two-clock split as the plots show it,
// in stacking order (bottom first).
var bucketInfo = []struct {
	Label  string
	Color  color.NRGBA
	Bucket index.Bucket
}{
	{"compute", colCompute, index.Compute},
	{"exposed comm", colComm, index.Comm},
	{"exposed copy", colCopy, index.Copy},
	{"sync", colSync, index.Sync},
	{"munmap/OS", colOS, index.OS},
	{"data wait", colData, index.Data},
	{"other", colOther, index.Other},
}

// maxBarLabels is the most steps whose bars carry their total time.
const maxBarLabels = 24

// stackBar appends to bs the stacked segments of one bar of breakdown b
// centred at x, and returns its height in unit u.
func stackBar(bs *boxes, b index.Breakdown, x, half float64, u timeUnit, group string, startup bool) float64 {
	y := 0.0
	for _, k := range bucketInfo {
		v := u.of(b[k.Bucket])
		if v <= 0 {
			continue
		}
		fill := k.Color
		if startup {
			fill = fade(fill, 110)
		}
		bs.Boxes = append(bs.Boxes, box{X0: x - half, X1: x + half, Y0: y, Y1: y + v, Fill: fill, Hatch: startup, Label: k.Label, Group: group})
		y += v
	}
	return y
}

// bucketLegend adds, top of the stack first, the buckets that any of bs
// uses.
func bucketLegend(f *Figure, bs []index.Breakdown) {
	for i := len(bucketInfo) - 1; i >= 0; i-- {
		k := bucketInfo[i]
		for _, b := range bs {
			if b[k.Bucket] > 0 {
				f.legend(k.Label, swatch{Fill: k.Color})
				break
			}
		}
	}
}

// verdictHead is the verdict's first words ("input-bound").
func verdictHead(v string) string {
	head, _, _ := strings.Cut(v, ":")
	return head
}

// NewSteps draws one stacked bar per step of the two-clock split (compute,
// exposed copy, sync, munmap/OS, data wait, other), the start-up step
// and the loop's last step when excluded as tear-down hatched and labelled
// as excluded, with the median steady step marked.
func NewSteps(r *audit.Analysis) (*Figure, error) {
	steps := r.Steps.PerStep
	f := newFigure("steps", fmt.Sprintf("Where each step's time goes (%s)", verdictHead(r.Verdict)))
	if len(steps) == 0 {
		f.Caption = "The trace has no steps."
		emptyNote(f, "no steps in this trace")
		return f, nil
	}
	f.Caption = "Each bar is one step, split by what the GPU and the main thread do: green kernels, red copies with no kernel running, orange waiting for data; " + r.Verdict + "."
	var longest int64
	for _, s := range steps {
		longest = max(longest, s.EndNS-s.StartNS)
	}
	u := unitFor(float64(longest))
	p := f.Plot
	p.Y.Label.Text = fmt.Sprintf("step time (%s)", u.Name)
	p.X.Label.Text = "step (steps from " + r.Steps.Source + ")"
	p.X.Min, p.X.Max = -0.6, float64(len(steps))-0.4
	p.Y.Min, p.Y.Max = 0, u.of(longest)*1.2
	f.grid(true)

	bars := &boxes{}
	totals := &notes{Style: textStyle(10, colRule, draw.XCenter, draw.YBottom), Background: color.White}
	every := max(1, (len(steps)+29)/30)
	ticks := make([]plot.Tick, 0, len(steps))
	breakdowns := make([]index.Breakdown, 0, len(steps))
	excluded := false
	for i, s := range steps {
		label := stepLabel(s.Name, i)
		top := stackBar(bars, s.BreakdownNS, float64(i), 0.36, u, label, s.Startup || s.Teardown)
		breakdowns = append(breakdowns, s.BreakdownNS)
		if i%every == 0 {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: label})
		}
		if len(steps) <= maxBarLabels {
			totals.Notes = append(totals.Notes, note{X: float64(i), Y: top, DY: vg.Points(2), Text: units.Dur(s.EndNS - s.StartNS)})
		}
		if s.Startup || s.Teardown {
			excluded = true
			why := "start-up\n(excluded)"
			if s.Teardown {
				why = "loop end\n(excluded)"
			}
			totals.Notes = append(totals.Notes, note{X: float64(i), Y: top, DY: vg.Points(16), Text: why})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Tick.Length = 0
	// The median line goes behind the bars, so it never crosses a label.
	median := &rules{At: []float64{u.of(r.Steps.MedianNS)}, Horizontal: true,
		Line: draw.LineStyle{Color: colRule, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}}
	f.add(median, bars, totals)
	bucketLegend(f, breakdowns)
	if excluded {
		f.legend("excluded step (hatched)", swatch{Fill: fade(colOther, 110), Hatch: true})
	}
	f.legend("median steady step ("+units.Dur(r.Steps.MedianNS)+")", swatch{AsLine: true, Line: median.Line})
	return f, nil
}

// stepLabel is a step's X label: "#12" for ProfilerStep#12, else its
// 1-based position.
func stepLabel(name string, i int) string {
	if n, ok := timeline.StepNumber(name); ok {
		return n
	}
	return strconv.Itoa(i + 1)
}
