// Package folder writes a report folder (`--out DIR`): each of report.md,
// report.json, annotated.json (the annotated Chrome trace) and report.html
// that its report.Document renders, and the figures the document asks
// for, drawn by report/plot as PNG and SVG (inline SVG in report.html). It
// is the one folder writer of traceaudit: internal/outdir makes the write
// atomic and refuses any folder traceaudit did not write.
package folder

import (
	"bytes"
	"context"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/internal/outdir"
	"github.com/traceaudit/traceaudit/replay"
	"github.com/traceaudit/traceaudit/report"
	"github.com/traceaudit/traceaudit/report/plot"
)

// Write writes doc's report folder at dir. On any error the previous
// folder stays as it was and nothing is left behind; a folder traceaudit
// did not write is refused (outdir.ErrRefused).
func Write(ctx context.Context, dir string, doc *report.Document, o report.Options) error {
	w, err := outdir.New(dir)
	if err != nil {
		return err
	}
	err = fill(ctx, w, doc, o)
	if err == nil {
		err = ctx.Err() // interrupted while rendering the last files
	}
	if err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}

func fill(ctx context.Context, w *outdir.Writer, doc *report.Document, o report.Options) error {
	pl := &plotter{ctx: ctx, w: w}
	if err := doc.Plot(pl); err != nil {
		return err
	}
	o.Plots = pl.plots
	for _, out := range files {
		if !doc.Has(out.format) {
			continue
		}
		var buf bytes.Buffer
		if err := doc.Render(&buf, out.format, o); err != nil {
			return err
		}
		if err := w.File(out.name, buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// file is one rendered file of a folder.
type file struct {
	name   string
	format report.Format
}

// files are the renderings a report folder holds, in the order written:
// each of them that its document has.
var files = []file{{"report.md", report.Markdown}, {"report.json", report.JSON}, {"annotated.json", report.ChromeTrace}, {"report.html", report.HTML}}

// plotter draws a document's figures with report/plot, writes each into
// the folder as PNG and SVG, and keeps them for the renderings to show.
type plotter struct {
	ctx   context.Context
	w     *outdir.Writer
	plots []report.Plot
}

func (p *plotter) Analysis(r *audit.Analysis) error {
	figs, err := plot.Analyze(r)
	if err != nil {
		return err
	}
	return p.write(figs...)
}

func (p *plotter) StepsDiff(before, after *audit.Analysis) error {
	return p.draw(plot.NewStepsDiff(before, after))
}

func (p *plotter) Ranks(j *job.Analysis) error { return p.draw(plot.NewRanks(j)) }

func (p *plotter) Replay(r *replay.Result) error { return p.draw(plot.NewReplay(replayBars(r))) }

// draw writes one figure, or returns the error of building it.
func (p *plotter) draw(f *plot.Figure, err error) error {
	if err != nil {
		return err
	}
	return p.write(f)
}

// write writes figures as PNG and SVG, stopping when interrupted.
func (p *plotter) write(figs ...*plot.Figure) error {
	for _, f := range figs {
		if err := p.ctx.Err(); err != nil {
			return err // interrupted: stop drawing
		}
		png, err := f.PNG()
		if err != nil {
			return err
		}
		svg, err := f.SVG()
		if err != nil {
			return err
		}
		if err := p.w.File(f.Name+".png", png); err != nil {
			return err
		}
		if err := p.w.File(f.Name+".svg", svg); err != nil {
			return err
		}
		p.plots = append(p.plots, report.Plot{File: f.Name + ".png", Title: f.Title, Caption: f.Caption, SVG: svg})
	}
	return nil
}

// replayBars are the measured and predicted step times of each variant.
func replayBars(r *replay.Result) []plot.ReplayBar {
	bars := make([]plot.ReplayBar, 0, len(r.Variants))
	for _, v := range r.Variants {
		bars = append(bars, plot.ReplayBar{Name: v.Name, MeasuredNS: v.StepNSMean, PredictedNS: r.PredictedStepNS(v)})
	}
	return bars
}
