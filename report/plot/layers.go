package plot

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Colours shared by all figures. The two-clock buckets keep one colour
// everywhere: compute green, exposed communication blue, exposed copy red,
// sync purple, munmap/OS brown, data wait orange, other grey.
var (
	colCompute  = rgb(0x2c, 0xa0, 0x2c)
	colComm     = rgb(0x1f, 0x77, 0xb4)
	colCopy     = rgb(0xd6, 0x27, 0x28)
	colSync     = rgb(0x94, 0x67, 0xbd)
	colOS       = rgb(0x8c, 0x56, 0x4b)
	colData     = rgb(0xff, 0x7f, 0x0e)
	colOther    = rgb(0xa0, 0xa0, 0xa0)
	colPinned   = rgb(0x17, 0xb3, 0xa3) // teal: green-ish, apart from kernels
	colCopyMisc = rgb(0xe3, 0x77, 0xc2) // device-to-device and unknown copies
	colMemset   = rgb(0x8f, 0xb3, 0xd9)
	colLaunch   = rgb(0x1f, 0x5f, 0xb4)
	colAPIMisc  = rgb(0x5b, 0x67, 0x70)
	colHostMisc = rgb(0xd2, 0xd2, 0xd2) // other host ranges and ops
	colIdle     = rgb(0xfb, 0xdc, 0xdc) // GPU idle shading
	colRule     = rgb(0x40, 0x40, 0x40)
	colGrid     = rgb(0xe0, 0xe0, 0xe0)
	colError    = rgb(0xc0, 0x39, 0x2b)
	colWarning  = rgb(0xf0, 0xa5, 0x00)
	colInfo     = rgb(0x5b, 0x8d, 0xb8)
)

func rgb(r, g, b uint8) color.NRGBA { return color.NRGBA{R: r, G: g, B: b, A: 255} }

// fade returns c at alpha a (0..255), for start-up bars and predictions.
func fade(c color.NRGBA, a uint8) color.NRGBA { c.A = a; return c }

// box is one filled and/or outlined rectangle in data coordinates.
type box struct {
	X0, X1, Y0, Y1 float64
	// Fill is the fill colour; nil draws only the outline.
	Fill color.Color
	// Hatch draws diagonal lines over the fill (start-up, predictions).
	Hatch bool
	// Label is what the box shows (a bucket, an event category).
	Label string
	// Group is what the box belongs to (a step, a lane, a finding).
	Group string
}

// boxes draws rectangles: timeline events, bars, shading.
type boxes struct {
	Boxes []box
	// Line outlines every box when its Width is set.
	Line draw.LineStyle
	// MinWidth widens boxes narrower than this on the canvas, so that a
	// 200 ns kernel in a 1.5 s window still shows as a line.
	MinWidth vg.Length
}

// Plot implements plot.Plotter.
func (b *boxes) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	hatch := draw.LineStyle{Color: color.NRGBA{A: 110}, Width: vg.Points(0.8)}
	for _, bx := range b.Boxes {
		x0, x1 := trX(bx.X0), trX(bx.X1)
		y0, y1 := trY(bx.Y0), trY(bx.Y1)
		if x1-x0 < b.MinWidth {
			m := (x0 + x1) / 2
			x0, x1 = m-b.MinWidth/2, m+b.MinWidth/2
		}
		x0, x1 = max(x0, c.Min.X), min(x1, c.Max.X)
		y0, y1 = max(y0, c.Min.Y), min(y1, c.Max.Y)
		if x1 <= x0 || y1 <= y0 {
			continue
		}
		r := vg.Rectangle{Min: vg.Point{X: x0, Y: y0}, Max: vg.Point{X: x1, Y: y1}}
		if bx.Fill != nil {
			c.SetColor(bx.Fill)
			c.Fill(r.Path())
		}
		if bx.Hatch {
			hatchRect(&c, r, hatch, vg.Points(6))
		}
		if b.Line.Width > 0 {
			c.SetLineStyle(b.Line)
			c.Stroke(r.Path())
		}
	}
}

// hatchRect draws 45° lines every step inside r.
func hatchRect(c *draw.Canvas, r vg.Rectangle, sty draw.LineStyle, step vg.Length) {
	w, h := r.Max.X-r.Min.X, r.Max.Y-r.Min.Y
	for d := -h + step/2; d < w; d += step {
		// The line x = Min.X + d + t, y = Min.Y + t for t in [0, h],
		// clipped to [Min.X, Max.X].
		t0, t1 := max(0, -d), min(h, w-d)
		if t1 <= t0 {
			continue
		}
		c.StrokeLine2(sty, r.Min.X+d+t0, r.Min.Y+t0, r.Min.X+d+t1, r.Min.Y+t1)
	}
}

// rules draws vertical (or horizontal) lines across the data area: step
// boundaries, medians, means.
type rules struct {
	// At are the positions on the X axis (Y when Horizontal).
	At         []float64
	Horizontal bool
	Line       draw.LineStyle
	// Y0, Y1 limit vertical rules to that data range (both 0: full height).
	Y0, Y1 float64
}

// Plot implements plot.Plotter.
func (r *rules) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, v := range r.At {
		if r.Horizontal {
			y := trY(v)
			if c.ContainsY(y) {
				c.StrokeLine2(r.Line, c.Min.X, y, c.Max.X, y)
			}
			continue
		}
		x := trX(v)
		if !c.ContainsX(x) {
			continue
		}
		y0, y1 := c.Min.Y, c.Max.Y
		if r.Y0 != 0 || r.Y1 != 0 {
			y0, y1 = trY(r.Y0), trY(r.Y1)
		}
		c.StrokeLine2(r.Line, x, y0, x, y1)
	}
}

// note is one text at a data position, offset by DX, DY on the canvas.
type note struct {
	X, Y   float64
	DX, DY vg.Length
	Text   string
	// Color overrides the style's colour when set.
	Color color.Color
	// Room, when set, is the width in X data units the text must fit in
	// (a step's length); a text too wide is replaced by Short, and
	// dropped when that does not fit either.
	Room  float64
	Short string
}

// notes draws texts: step names, bar totals, "start-up (excluded)".
type notes struct {
	Notes []note
	Style text.Style
	// Background, when set, fills the box behind each text, so that a rule
	// crossing it does not strike it through.
	Background color.Color
}

// Plot implements plot.Plotter.
func (n *notes) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, t := range n.Notes {
		sty := n.Style
		if t.Color != nil {
			sty.Color = t.Color
		}
		txt := t.Text
		if t.Room > 0 {
			room := trX(t.X+t.Room/2) - trX(t.X-t.Room/2)
			if sty.Width(txt) > room {
				txt = t.Short
			}
			if txt == "" || sty.Width(txt) > room {
				continue
			}
		}
		pt := vg.Point{X: trX(t.X) + t.DX, Y: trY(t.Y) + t.DY}
		if n.Background != nil {
			r := sty.Rectangle(txt)
			pad := vg.Points(1.5)
			r.Min = r.Min.Add(pt).Add(vg.Point{X: -pad, Y: pad})
			r.Max = r.Max.Add(pt).Add(vg.Point{X: pad, Y: 0})
			c.SetColor(n.Background)
			c.Fill(r.Path())
		}
		c.FillText(sty, pt, txt)
	}
}

// swatch is a legend thumbnail: a filled box, optionally hatched or only
// outlined, or a line.
type swatch struct {
	Fill  color.Color
	Hatch bool
	Line  draw.LineStyle
	// AsLine draws Line across the middle instead of a box.
	AsLine bool
}

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	if s.AsLine {
		y := (r.Min.Y + r.Max.Y) / 2
		c.StrokeLine2(s.Line, r.Min.X, y, r.Max.X, y)
		return
	}
	r.Min.Y += vg.Points(1)
	if s.Fill != nil {
		c.SetColor(s.Fill)
		c.Fill(r.Path())
	}
	if s.Hatch {
		hatchRect(c, r, draw.LineStyle{Color: color.NRGBA{A: 110}, Width: vg.Points(0.8)}, vg.Points(5))
	}
	if s.Line.Width > 0 {
		c.SetLineStyle(s.Line)
		c.Stroke(r.Path())
	}
}

// timeUnit is the unit of a time axis.
type timeUnit struct {
	NS   float64
	Name string
}

// unitFor picks s, ms or µs so that a value of span nanoseconds reads
// with few digits: s from 2 s, µs under 1 ms.
func unitFor(span float64) timeUnit {
	switch a := math.Abs(span); {
	case a >= 2e9:
		return timeUnit{1e9, "s"}
	case a >= 1e6 || a == 0:
		return timeUnit{1e6, "ms"}
	}
	return timeUnit{1e3, "µs"}
}

// of converts nanoseconds to the unit.
func (u timeUnit) of(ns int64) float64 { return float64(ns) / u.NS }

// bareAxis hides an axis line and its tick marks but keeps its labels.
func bareAxis(a *plot.Axis) {
	a.Width = 0
	a.Tick.Length = 0
	a.Tick.Width = 0
}

// emptyNote turns f into a plot that only says why it is empty.
func emptyNote(f *Figure, msg string) {
	p := f.Plot
	p.HideAxes()
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	f.add(&notes{Style: textStyle(16, colRule, draw.XCenter, draw.YCenter), Notes: []note{{X: 0.5, Y: 0.5, Text: msg}}})
}

// percentTicks marks 0 to 100 % every 20 (minor ticks every 10).
type percentTicks struct{}

// Ticks implements plot.Ticker.
func (percentTicks) Ticks(lo, hi float64) []plot.Tick {
	var t []plot.Tick
	for v := 0; v <= 100; v += 10 {
		if float64(v) < lo || float64(v) > hi {
			continue
		}
		l := ""
		if v%20 == 0 {
			l = fmt.Sprintf("%d %%", v)
		}
		t = append(t, plot.Tick{Value: float64(v), Label: l})
	}
	return t
}

// niceTicks labels about N round values (1, 2, 2.5 or 5 times a power of
// ten) with a minor tick between labels; gonum's default gives only three.
type niceTicks struct{ N int }

// Ticks implements plot.Ticker.
func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || t.N < 1 {
		return nil
	}
	raw := (hi - lo) / float64(t.N)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	// As many decimals as the step needs: 25 -> 0, 2.5 -> 1, 0.25 -> 2.
	prec := 0
	for p := 1.0; prec < 9 && math.Abs(step*p-math.Round(step*p)) > 1e-6*step*p; p *= 10 {
		prec++
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo/step*2 - 1e-9); i/2*step <= hi+step*1e-9; i++ {
		v := i / 2 * step
		if v == 0 {
			v = 0 // not -0
		}
		l := ""
		if math.Mod(i, 2) == 0 {
			l = strconv.FormatFloat(v, 'f', prec, 64)
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: l})
	}
	return ticks
}
