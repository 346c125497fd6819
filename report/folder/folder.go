// Package folder writes a report folder (`--out DIR`): report.md,
// report.json and report.html rendered by package report, annotated.json
// (the annotated Chrome trace) for analyze reports, and the document's
// plots as PNG and SVG from report/plot (inline SVG in report.html). It is
// the one folder writer of traceaudit:
// internal/outdir makes the write atomic and refuses any folder traceaudit
// did not write.
package folder

import (
	"bytes"
	"context"
	"fmt"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/compare"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/internal/outdir"
	"github.com/traceaudit/traceaudit/replay"
	"github.com/traceaudit/traceaudit/report"
	"github.com/traceaudit/traceaudit/report/plot"
)

// Write writes doc's report folder at dir. On any error the previous
// folder stays as it was and nothing is left behind; a folder traceaudit
// did not write is refused (outdir.ErrRefused).
func Write(ctx context.Context, dir string, doc any, o report.Options) error {
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

func fill(ctx context.Context, w *outdir.Writer, doc any, o report.Options) error {
	figs, err := figures(doc)
	if err != nil {
		return err
	}
	o.Plots = nil
	for _, f := range figs {
		if err := ctx.Err(); err != nil {
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
		if err := w.File(f.Name+".png", png); err != nil {
			return err
		}
		if err := w.File(f.Name+".svg", svg); err != nil {
			return err
		}
		o.Plots = append(o.Plots, report.Plot{File: f.Name + ".png", Title: f.Title, Caption: f.Caption, SVG: svg})
	}
	for _, out := range files(doc) {
		var buf bytes.Buffer
		if err := report.Render(&buf, out.format, doc, o); err != nil {
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

// files are the rendered files of a document's folder.
func files(doc any) []file {
	out := []file{{"report.md", report.Markdown}, {"report.json", report.JSON}}
	switch doc.(type) {
	case *compare.JobDiff, *audit.Batch:
		return out // several reports: report.md and report.json hold them all
	case *audit.Analysis:
		out = append(out, file{"annotated.json", report.ChromeTrace})
	}
	return append(out, file{"report.html", report.HTML})
}

// figures are the plots of a document, in report order.
func figures(doc any) ([]*plot.Figure, error) {
	var build []func() (*plot.Figure, error)
	switch d := doc.(type) {
	case *audit.Analysis:
		return plot.Analyze(d)
	case *compare.Diff:
		build = append(build, func() (*plot.Figure, error) { return plot.NewStepsDiff(d.Before, d.After) })
	case *job.Analysis:
		build = append(build, func() (*plot.Figure, error) { return plot.NewRanks(d) })
	case *compare.JobDiff, *audit.Batch:
		// report.md and report.json only
	case *replay.Result:
		if !d.DryRun {
			build = append(build, func() (*plot.Figure, error) { return plot.NewReplay(replayBars(d)) })
		}
	default:
		return nil, fmt.Errorf("report folder of %T: %w", doc, report.ErrFormat)
	}
	out := make([]*plot.Figure, 0, len(build))
	for _, b := range build {
		f, err := b()
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// replayBars are the measured and predicted step times of each variant.
func replayBars(r *replay.Result) []plot.ReplayBar {
	bars := make([]plot.ReplayBar, 0, len(r.Variants))
	for _, v := range r.Variants {
		bars = append(bars, plot.ReplayBar{Name: v.Name, MeasuredNS: v.StepNSMean, PredictedNS: r.PredictedStepNS(v)})
	}
	return bars
}
