package plot

import (
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/internal/units"
)

// utilBins is how many bins the utilization plot splits the steady window
// into (0.5 % of the window each).
const utilBins = 200

// busySeries is one utilization curve: the busy percentage of each bin.
type busySeries struct {
	// Edges are the bins' boundaries in nanoseconds (len(Pct)+1).
	Edges []int64
	// Pct is the share of each bin the set covers, in percent.
	Pct []float64
}

// binBusy measures the share of each of n equal bins of [lo, hi) that s
// covers. Cost: O(n log len(s) + len(s)).
func binBusy(s ivl.Set, lo, hi int64, n int) busySeries {
	b := busySeries{Edges: make([]int64, n+1), Pct: make([]float64, n)}
	for i := range b.Edges {
		b.Edges[i] = lo + (hi-lo)*int64(i)/int64(n)
	}
	for i := range b.Pct {
		if w := b.Edges[i+1] - b.Edges[i]; w > 0 {
			b.Pct[i] = 100 * float64(s.Covered(b.Edges[i], b.Edges[i+1])) / float64(w)
		}
	}
	return b
}

// NewUtilization draws the GPU's kernel and copy busy shares over the
// steady window, in utilBins bins, with step boundaries and the means.
func NewUtilization(r *audit.Analysis) (*Figure, error) {
	if r.Index == nil || r.Timeline == nil {
		return nil, ErrNoTimeline
	}
	ix := r.Index
	lo, hi := ix.SteadySet.Bounds()
	origin, end := r.Timeline.Span()
	if hi <= lo {
		lo, hi = origin, end
	}
	if hi <= lo {
		f := newFigure("utilization", "GPU utilization: empty trace")
		f.Caption = "The trace holds no events."
		emptyNote(f, "no events in this trace")
		return f, nil
	}
	bins := int(min(utilBins, hi-lo))
	u := unitFor(float64(hi - origin))
	x := func(ns int64) float64 { return u.of(ns - origin) }
	binNS := (hi - lo) / int64(bins)

	f := newFigure("utilization", fmt.Sprintf("GPU utilization over the steady state: kernels %s, copies %s of the time",
		units.Pct(r.GPU.ComputeBusyShare), units.Pct(r.GPU.CopyBusyShare)))
	f.Caption = fmt.Sprintf("Share of each %s bin with a kernel (green) or a copy (red) running on the GPU, over %d steady steps; dashed lines are the means.",
		units.Dur(binNS), len(ix.Steady))
	p := f.Plot
	p.X.Min, p.X.Max = x(lo), x(hi)
	p.Y.Min, p.Y.Max = 0, 105
	p.X.Label.Text = fmt.Sprintf("time since trace start (%s)", u.Name)
	p.Y.Label.Text = fmt.Sprintf("GPU busy (%% of each %s bin)", units.Dur(binNS))
	p.Y.Tick.Marker = percentTicks{}
	f.grid(true)

	series := []struct {
		set   ivl.Set
		col   color.NRGBA
		label string
		mean  float64
	}{
		{ix.Kernels, colCompute, "kernels", r.GPU.ComputeBusyShare},
		{ix.Copies, colCopy, "copies", r.GPU.CopyBusyShare},
	}
	if len(ix.Comm) > 0 {
		series = append(series[:1:1], append([]struct {
			set   ivl.Set
			col   color.NRGBA
			label string
			mean  float64
		}{{ix.Comm, colComm, "collectives", r.GPU.CommBusyShare}}, series[1:]...)...)
		f.Caption = strings.Replace(f.Caption, "a kernel (green)", "a compute kernel (green), a collective (blue)", 1)
	}
	means := make([]*rules, 0, len(series))
	for _, s := range series {
		b := binBusy(s.set, lo, hi, bins)
		xys := make(plotter.XYs, 0, bins+1)
		for i, v := range b.Pct {
			xys = append(xys, plotter.XY{X: x(b.Edges[i]), Y: v})
		}
		xys = append(xys, plotter.XY{X: x(hi), Y: b.Pct[bins-1]})
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("plot utilization: %w", err)
		}
		l.StepStyle = plotter.PostStep
		l.LineStyle = draw.LineStyle{Color: s.col, Width: vg.Points(1.2)}
		l.FillColor = fade(s.col, 80)
		f.add(l)
		means = append(means, &rules{At: []float64{100 * s.mean}, Horizontal: true,
			Line: draw.LineStyle{Color: s.col, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}})
		f.legend(fmt.Sprintf("%s busy (mean %s)", s.label, units.Pct(s.mean)), swatch{Fill: fade(s.col, 80), Line: draw.LineStyle{Color: s.col, Width: vg.Points(1)}})
	}
	for _, m := range means {
		f.add(m)
	}
	bounds := &rules{Line: draw.LineStyle{Color: colRule, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}}
	for _, s := range ix.Steady {
		bounds.At = append(bounds.At, x(s.Start))
	}
	bounds.At = append(bounds.At, x(hi))
	f.add(bounds)
	f.legend("mean over the steady window", swatch{AsLine: true, Line: draw.LineStyle{Color: colRule, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}})
	f.legend("step boundary", swatch{AsLine: true, Line: bounds.Line})
	return f, nil
}
