package plot

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/internal/units"
)

// NewRanks draws one stacked bar per rank of a job: its mean steady step
// split into compute, exposed communication (the part spent waiting for
// the other ranks hatched), copy, sync, OS, data wait and other, with the
// straggler outlined in red.
func NewRanks(j *job.Analysis) (*Figure, error) {
	title := fmt.Sprintf("Where each rank's step goes (job: %s)", verdictHead(j.Job.Verdict))
	if s := j.Job.Straggler; s != nil {
		title = fmt.Sprintf("Where each rank's step goes (straggler: rank %d)", s.Rank)
	}
	f := newFigure("ranks", title)
	if len(j.Ranks) == 0 {
		f.Caption = "The job has no ranks."
		emptyNote(f, "no ranks")
		return f, nil
	}
	f.Caption = "Each bar is one rank's mean steady step, split by what its GPU and main thread do: green kernels, blue collectives with no kernel beside them (hatched: waiting for the other ranks), red copies, orange waiting for data. "
	if s := j.Job.Straggler; s != nil {
		f.Caption += fmt.Sprintf("Outlined in red: rank %d, the straggler; the others wait %s per step for it (its own cause: %s).",
			s.Rank, units.Dur(s.WaitNSPerStep), s.Cause)
	} else {
		f.Caption += "No rank holds the others back."
	}
	var tallest int64
	for _, r := range j.Ranks {
		tallest = max(tallest, r.Steps.BreakdownNS.Total())
	}
	u := unitFor(float64(max(tallest, 1)))
	p := f.Plot
	p.Y.Label.Text = fmt.Sprintf("mean steady step (%s)", u.Name)
	p.X.Label.Text = "rank (GPU)"
	p.X.Min, p.X.Max = -0.6, float64(len(j.Ranks))-0.4
	p.Y.Min, p.Y.Max = 0, u.of(max(tallest, 1))*1.25
	f.grid(true)

	bars := &boxes{}
	outline := &boxes{Line: draw.LineStyle{Color: colError, Width: vg.Points(2.5)}}
	labels := &notes{Style: textStyle(10, colRule, draw.XCenter, draw.YBottom), Background: color.White}
	ticks := make([]plot.Tick, 0, len(j.Ranks))
	var breakdowns []index.Breakdown
	waited := false
	for i, r := range j.Ranks {
		b := r.Steps.BreakdownNS
		breakdowns = append(breakdowns, b)
		wait := min(r.WaitNSPerStep, b[index.Comm])
		waited = waited || wait > 0
		x := float64(i)
		top := rankBar(bars, b, wait, x, 0.3, u, fmt.Sprintf("rank %d", *r.Rank))
		text := units.Dur(b.Total())
		strag := j.Job.Straggler != nil && j.Job.Straggler.Rank == *r.Rank
		if strag {
			outline.Boxes = append(outline.Boxes, box{X0: x - 0.34, X1: x + 0.34, Y0: 0, Y1: top + u.of(max(tallest, 1))*0.015, Label: "straggler"})
			text = "straggler\n" + text
		}
		if len(j.Ranks) <= maxBarLabels || strag {
			dy := vg.Points(4)
			if strag {
				dy = vg.Points(9)
			}
			labels.Notes = append(labels.Notes, note{X: x, Y: top, DY: dy, Text: text})
		}
		ticks = append(ticks, plot.Tick{Value: x, Label: fmt.Sprintf("%d (%s)", *r.Rank, gpuLabel(*r.Device))})
	}
	every := max(1, (len(ticks)+23)/24)
	for i := range ticks {
		if i%every != 0 {
			ticks[i].Label = ""
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Tick.Length = 0
	f.add(bars, outline, labels)
	bucketLegend(f, breakdowns)
	if waited {
		f.legend("waiting for other ranks (hatched)", swatch{Fill: colComm, Hatch: true})
	}
	if len(outline.Boxes) > 0 {
		f.legend("the straggler", swatch{Line: outline.Line})
	}
	return f, nil
}

// rankBar stacks one rank's split at x, with the wait for other ranks
// drawn hatched at the bottom of its comm segment, and returns its height.
func rankBar(bs *boxes, b index.Breakdown, wait int64, x, half float64, u timeUnit, group string) float64 {
	y := 0.0
	for _, k := range bucketInfo {
		v := b[k.Bucket]
		if v <= 0 {
			continue
		}
		if k.Label == "exposed comm" && wait > 0 {
			w := u.of(wait)
			bs.Boxes = append(bs.Boxes, box{X0: x - half, X1: x + half, Y0: y, Y1: y + w, Fill: k.Color, Hatch: true, Label: "waiting for other ranks", Group: group})
			y += w
			v -= wait
			if v <= 0 {
				continue
			}
		}
		h := u.of(v)
		bs.Boxes = append(bs.Boxes, box{X0: x - half, X1: x + half, Y0: y, Y1: y + h, Fill: k.Color, Label: k.Label, Group: group})
		y += h
	}
	return y
}

func gpuLabel(d int64) string {
	if d < 0 {
		return "GPU ?"
	}
	return fmt.Sprintf("GPU %d", d)
}
