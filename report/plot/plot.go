// Package plot draws traceaudit's figures with gonum/plot, as PNG and SVG:
// the timeline of a few steady steps, GPU utilization over the steady state,
// the two-clock split of every step, the wasted time of every finding, and,
// for diffs and replays, before/after steps and measured vs predicted step
// times (design.md, "Output folders").
//
// Every figure is built by a New* function that returns a *Figure, so tests
// can inspect what is drawn, and rendered by Figure.PNG and Figure.SVG
// (report/folder writes them into report folders).
//
// Figures use only the Liberation fonts that gonum/plot ships, and the same
// input gives the same bytes. Colours are shared by all figures: compute is
// green, exposed copy red, sync purple, munmap/OS brown, data wait orange,
// other grey. gonum is imported here and nowhere else in traceaudit.
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/traceaudit/traceaudit/analyze/audit"
)

// Canvas size of a figure: 10 x 5 inches, which DPI turns into a 1600 x
// 800 pixel PNG. The SVG has the same size in points (720 x 360 pt).
const (
	Width  = 10 * vg.Inch
	Height = 5 * vg.Inch
	// DPI is the PNG resolution in dots per inch.
	DPI = 160
)

// svgFonts names fonts with Liberation Sans's metrics as fallbacks.
const svgFonts = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"

// Figure is one plot ready to write: a gonum plot, the legend drawn in a
// strip to its right, and the names its files and report entry get.
type Figure struct {
	// Name is the file stem: "timeline" gives timeline.png and timeline.svg.
	Name string
	// Title is the plot's title, also used as the report heading.
	Title string
	// Caption is one line saying what to look at.
	Caption string
	// Plot is the gonum plot (title, axes, data layers).
	Plot *plot.Plot
	// Legend lists the entries drawn to the right of the plot, top down.
	Legend []LegendEntry
	// Width and Height are the canvas size (Width x Height by default).
	Width, Height vg.Length

	// layers are the plotters added to Plot, in drawing order, kept so
	// tests can check what is drawn.
	layers []plot.Plotter
}

// LegendEntry is one line of a figure's legend.
type LegendEntry struct {
	// Label is the legend text.
	Label string
	// Thumb draws the sample beside it.
	Thumb plot.Thumbnailer
}

// Written describes one figure written to a folder.
type Written struct {
	// Name is the file stem ("timeline").
	Name string
	// Title and Caption say what the figure shows and what to look for.
	Title, Caption string
	// PNG and SVG are the file names, relative to the folder written to
	// (so they stay valid when the folder is renamed).
	PNG, SVG string
}

// newFigure returns an empty figure with traceaudit's fonts and sizes.
func newFigure(name, title string) *Figure {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(14)
	p.Title.Padding = vg.Points(8)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(12)
		a.Tick.Label.Font = sans(11)
		a.Tick.Marker = niceTicks{N: 8}
	}
	return &Figure{Name: name, Title: title, Plot: p, Width: Width, Height: Height}
}

// sans is Liberation Sans, shipped with gonum/plot, at size points.
func sans(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// textStyle is a plain sans text style.
func textStyle(size vg.Length, clr color.Color, x draw.XAlignment, y draw.YAlignment) text.Style {
	return text.Style{Color: clr, Font: sans(size), XAlign: x, YAlign: y, Handler: plot.DefaultTextHandler}
}

// grid adds light grid lines across the value axis: horizontal lines when
// values go up the Y axis, vertical ones when they go along X.
func (f *Figure) grid(horizontal bool) {
	g := plotter.NewGrid()
	line := draw.LineStyle{Color: colGrid, Width: vg.Points(0.6)}
	if horizontal {
		g.Vertical.Color, g.Horizontal = nil, line
	} else {
		g.Horizontal.Color, g.Vertical = nil, line
	}
	f.add(g)
}

// add adds plotters to the plot and records them.
func (f *Figure) add(ps ...plot.Plotter) {
	f.Plot.Add(ps...)
	f.layers = append(f.layers, ps...)
}

// legend adds a legend entry.
func (f *Figure) legend(label string, thumb plot.Thumbnailer) {
	f.Legend = append(f.Legend, LegendEntry{Label: label, Thumb: thumb})
}

// Draw draws the figure: the plot, and the legend in a strip on the right.
func (f *Figure) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	c = draw.Crop(c, vg.Points(6), -vg.Points(10), vg.Points(6), -vg.Points(8))
	if len(f.Legend) == 0 {
		f.Plot.Draw(c)
		return
	}
	l := plot.NewLegend()
	l.TextStyle.Font = sans(11)
	l.Top, l.Left = true, true
	l.Padding = vg.Points(3)
	l.ThumbnailWidth = vg.Points(18)
	var w vg.Length
	for _, e := range f.Legend {
		l.Add(e.Label, e.Thumb)
		w = max(w, l.TextStyle.Width(e.Label))
	}
	w += l.ThumbnailWidth + l.TextStyle.Width("  ")
	f.Plot.Draw(draw.Crop(c, 0, -(w + vg.Points(12)), 0, 0))
	strip := draw.Crop(c, c.Size().X-w, 0, 0, 0)
	if f.Plot.Title.Text != "" {
		strip.Max.Y -= f.Plot.Title.TextStyle.Height(f.Plot.Title.Text) + f.Plot.Title.Padding + vg.Points(6)
	}
	l.Draw(strip)
}

// PNG renders the figure as a PNG of Width x Height at DPI.
func (f *Figure) PNG() ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(f.Width, f.Height), vgimg.UseDPI(DPI))
	f.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&b); err != nil {
		return nil, fmt.Errorf("plot %s: png: %w", f.Name, err)
	}
	return b.Bytes(), nil
}

// SVG renders the figure as an SVG of Width x Height points.
func (f *Figure) SVG() ([]byte, error) {
	c := vgsvg.New(f.Width, f.Height)
	f.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("plot %s: svg: %w", f.Name, err)
	}
	// Liberation Sans has Arial's metrics: where a viewer lacks it, Arial
	// keeps the layout.
	return xmlChars(bytes.ReplaceAll(b.Bytes(), []byte("font-family:Liberation Sans;"), []byte(svgFonts))), nil
}

// xmlChars drops the control characters XML forbids (a name from a trace
// may hold terminal escapes), so the SVG stays well-formed.
func xmlChars(b []byte) []byte {
	return bytes.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' {
			return -1
		}
		return r
	}, b)
}

// Write writes <Name>.png and <Name>.svg into dir, which must exist (for
// tests and tools; report folders are written by report/folder).
func (f *Figure) Write(dir string) (Written, error) {
	w := Written{Name: f.Name, Title: f.Title, Caption: f.Caption, PNG: f.Name + ".png", SVG: f.Name + ".svg"}
	png, err := f.PNG()
	if err != nil {
		return w, err
	}
	svg, err := f.SVG()
	if err != nil {
		return w, err
	}
	if err := os.WriteFile(filepath.Join(dir, w.PNG), png, 0o644); err != nil {
		return w, fmt.Errorf("plot: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, w.SVG), svg, 0o644); err != nil {
		return w, fmt.Errorf("plot: %w", err)
	}
	return w, nil
}

// ErrNoTimeline is returned for figures that need the timeline and index
// of a report read back from JSON, which has neither.
var ErrNoTimeline = errors.New("plot: the report has no timeline (read from JSON?): timeline and utilization plots need the trace")

// Analyze builds the four figures of an analyze report: timeline,
// utilization, steps and findings, in that order.
func Analyze(r *audit.Analysis) ([]*Figure, error) {
	build := []func(*audit.Analysis) (*Figure, error){NewTimeline, NewUtilization, NewSteps, NewFindings}
	out := make([]*Figure, 0, len(build))
	for _, b := range build {
		f, err := b(r)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}
