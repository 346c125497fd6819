package plot

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// windowSteps is how many consecutive steady steps the timeline shows.
const windowSteps = 3

// pxPerWindow approximates the data area's width in pixels; events closer
// than one such pixel merge into one rectangle.
const pxPerWindow = 1400

// Lane geometry in Y units (one lane is 1): ranges and GPU work fill
// laneHalf either side of the lane's centre, host calls callHalf.
const (
	laneHalf = 0.4
	callHalf = 0.22
)

// timelineWindow picks up to windowSteps consecutive steady steps around
// the one of median length (never the start-up step); with no steady step
// it returns false.
func timelineWindow(ix *index.Index) ([]index.Step, bool) {
	st := ix.Steady
	if len(st) == 0 {
		return nil, false
	}
	k := min(windowSteps, len(st))
	order := make([]int, len(st))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(st[a].Dur(), st[b].Dur()) })
	m := order[(len(order)-1)/2]
	first := min(max(m-k/2, 0), len(st)-k)
	return st[first : first+k], true
}

// NewTimeline draws a few representative steady steps: one lane per host
// thread that matters (the main thread, the threads launching GPU work)
// and one per GPU stream, events coloured by what they do, GPU idle time
// (no kernel on the analysed devices) shaded behind all lanes, step
// boundaries, and the worst finding's evidence outlined.
func NewTimeline(r *audit.Analysis) (*Figure, error) {
	if r.Index == nil || r.Timeline == nil {
		return nil, ErrNoTimeline
	}
	ix := r.Index
	steps, ok := timelineWindow(ix)
	if !ok {
		f := newFigure("timeline", "Timeline: no steady steps to show")
		f.Caption = "The trace has no steady-state step, so there is no timeline to show."
		emptyNote(f, "no steady steps in this trace")
		return f, nil
	}
	lo, hi := steps[0].Start, steps[len(steps)-1].End
	pad := max((hi-lo)/100, 1)
	vlo, vhi := lo-pad, hi+pad
	tol := max((vhi-vlo)/pxPerWindow, 1)
	origin, _ := r.Timeline.Span()
	u := unitFor(float64(vhi - origin))
	x := func(ns int64) float64 { return u.of(ns - origin) }

	var worst *analyze.Finding
	if len(r.Findings) > 0 {
		worst = &r.Findings[0]
	}
	lanes, hidden := pickLanes(ix, worst, vlo, vhi)
	n := len(lanes)
	y := func(i int) float64 { return float64(n - 1 - i) }

	f := newFigure("timeline", timelineTitle(r, steps))
	f.Height = max(Height, min(9*vg.Inch, vg.Inch*(1.6+0.5*vg.Length(n))))
	p := f.Plot
	p.X.Min, p.X.Max = x(vlo), x(vhi)
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5+0.45
	p.X.Label.Text = fmt.Sprintf("time since trace start (%s)", u.Name)
	bareAxis(&p.Y)
	ticks := make([]plot.Tick, n)
	for i, l := range lanes {
		ticks[i] = plot.Tick{Value: y(i), Label: l.Label}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)

	// GPU idle: gaps between kernels, over all lanes, behind everything.
	idle := &boxes{}
	for _, g := range ix.AnyKernel.Gaps(vlo, vhi) {
		if g.Len() >= tol {
			idle.Boxes = append(idle.Boxes, box{X0: x(g.Start), X1: x(g.End), Y0: -0.5, Y1: float64(n) - 0.5, Fill: colIdle, Label: "gpu idle"})
		}
	}
	f.add(idle)
	if len(idle.Boxes) > 0 {
		f.legend("GPU idle (no kernel running)", swatch{Fill: colIdle})
	}
	nGPU := 0
	for _, l := range lanes {
		if l.GPU {
			nGPU++
		}
	}
	if nGPU > 0 && nGPU < n {
		f.add(&rules{At: []float64{float64(nGPU) - 0.5}, Horizontal: true, Line: draw.LineStyle{Color: colOther, Width: vg.Points(0.8)}})
	}

	// Events, one layer per category so that calls lie over ranges.
	var layers [numCats]*boxes
	for c := range layers {
		layers[c] = &boxes{MinWidth: vg.Points(0.7)}
	}
	for i, l := range lanes {
		for c, ivs := range laneEvents(ix, l.Track, vlo, vhi, tol) {
			h := laneHalf
			if catInfo[c].Call {
				h = callHalf
			}
			for _, iv := range ivs {
				layers[c].Boxes = append(layers[c].Boxes, box{X0: x(iv.Start), X1: x(iv.End), Y0: y(i) - h, Y1: y(i) + h,
					Fill: catInfo[c].Color, Label: catInfo[c].Label, Group: l.Label})
			}
		}
	}
	for _, l := range layers {
		f.add(l)
	}
	for _, c := range legendOrder {
		if len(layers[c].Boxes) > 0 {
			f.legend(catInfo[c].Label, swatch{Fill: catInfo[c].Color})
		}
	}

	// Step boundaries and names.
	bounds := &rules{Line: draw.LineStyle{Color: colRule, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}}
	names := &notes{Style: textStyle(10, colRule, draw.XCenter, draw.YBottom)}
	for _, s := range ix.Steps {
		if s.End <= vlo || s.Start >= vhi {
			continue
		}
		for _, t := range []int64{s.Start, s.End} {
			if t >= vlo && t <= vhi {
				bounds.At = append(bounds.At, x(t))
			}
		}
		if s.Start >= lo && s.End <= hi {
			names.Notes = append(names.Notes, note{X: x((s.Start + s.End) / 2), Y: float64(n) - 0.5, DY: vg.Points(2),
				Text: strings.TrimSpace(stepName(s.Name) + "  " + units.Dur(s.Dur())), Room: x(s.End) - x(s.Start), Short: units.Dur(s.Dur())})
		}
	}
	slices.Sort(bounds.At)
	bounds.At = slices.Compact(bounds.At)
	f.add(bounds, names)
	f.legend("step boundary", swatch{AsLine: true, Line: bounds.Line})

	// The worst finding's evidence, outlined on its lane (all lanes when
	// its track has none).
	if worst != nil {
		ev := &boxes{Line: draw.LineStyle{Color: rgb(0, 0, 0), Width: vg.Points(2), Dashes: []vg.Length{vg.Points(5), vg.Points(2.5)}}}
		for _, e := range worst.Evidence {
			if e.EndNS <= vlo || e.StartNS >= vhi {
				continue
			}
			b := box{X0: x(max(e.StartNS, vlo)), X1: x(min(e.EndNS, vhi)), Y0: -0.5, Y1: float64(n) - 0.5, Label: worst.ID, Group: e.Track}
			for i, l := range lanes {
				if ix.Label(l.Track) == e.Track {
					b.Y0, b.Y1 = y(i)-laneHalf-0.07, y(i)+laneHalf+0.07
				}
			}
			ev.Boxes = append(ev.Boxes, b)
		}
		if len(ev.Boxes) > 0 {
			f.add(ev)
			f.legend("evidence: "+worst.ID+" (worst finding)", swatch{Line: ev.Line})
		}
	}
	f.Caption = timelineCaption(f, steps, worst, hidden)
	return f, nil
}

// stepName shortens "ProfilerStep#12" to "step #12".
func stepName(s string) string {
	if n, ok := timeline.StepNumber(s); ok {
		return "step " + n
	}
	return s
}

// timelineTitle names the steps shown.
func timelineTitle(r *audit.Analysis, steps []index.Step) string {
	ix := r.Index
	pos := slices.IndexFunc(ix.Steps, func(s index.Step) bool { return s.Start == steps[0].Start })
	what := fmt.Sprintf("steps %d-%d of %d", pos+1, pos+len(steps), len(ix.Steps))
	if len(steps) == 1 {
		what = fmt.Sprintf("step %d of %d", pos+1, len(ix.Steps))
	}
	n := "1 steady step"
	if len(steps) > 1 {
		n = fmt.Sprintf("%d steady steps", len(steps))
	}
	return fmt.Sprintf("Timeline of %s around the median (%s, median %s)", n, what, units.Dur(r.Steps.MedianNS))
}

// timelineCaption says what to look for, naming only what is drawn.
func timelineCaption(f *Figure, steps []index.Step, worst *analyze.Finding, hidden int) string {
	has := map[string]bool{}
	for _, e := range f.Legend {
		has[e.Label] = true
	}
	var parts []string
	if has["GPU idle (no kernel running)"] {
		parts = append(parts, "pink background is time with no kernel on the GPU")
	}
	if has[catInfo[catData].Label] {
		parts = append(parts, "orange is the host loading data")
	}
	if has[catInfo[catPageable].Label] || has[catInfo[catCopyCall].Label] {
		parts = append(parts, "red is pageable copies and the host's copy calls")
	}
	if worst != nil && len(worst.Evidence) > 0 && has["evidence: "+worst.ID+" (worst finding)"] {
		parts = append(parts, "the dashed box is the evidence of "+worst.ID)
	}
	s := fmt.Sprintf("%d consecutive steady steps, host threads above GPU streams", len(steps))
	if len(parts) > 0 {
		s += "; " + strings.Join(parts, ", ")
	}
	if hidden > 0 {
		s += fmt.Sprintf(" (%d quieter streams not shown)", hidden)
	}
	return s + "."
}
