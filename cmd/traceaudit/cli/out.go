package cli

import (
	"bytes"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/internal/outdir"
	"github.com/traceaudit/traceaudit/report"
	"github.com/traceaudit/traceaudit/report/plot"
)

// checkOut refuses, before any work, an --out folder that traceaudit may
// not write: one holding files it did not write, the working folder or an
// ancestor, the root or home folder, a link or a file (outdir.Check).
func checkOut(dir string) error {
	if dir == "" {
		return nil
	}
	return outdir.Check(dir)
}

// writeOut builds a report folder with fill and swaps it in atomically: on
// any error the previous folder stays as it was.
func writeOut(dir string, fill func(w *outdir.Writer) error) error {
	w, err := outdir.New(dir)
	if err != nil {
		return err
	}
	if err := fill(w); err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}

// plotsOf turns written figures into Markdown plot links.
func plotsOf(ws []plot.Written) []report.Plot {
	out := make([]report.Plot, 0, len(ws))
	for _, x := range ws {
		out = append(out, report.Plot{File: x.PNG, Title: x.Title, Caption: x.Caption})
	}
	return out
}

// writeAnalyzeOut writes report.md, report.json and the four plots.
func writeAnalyzeOut(dir string, r *audit.Report, command string) error {
	return writeOut(dir, func(w *outdir.Writer) error {
		ws, err := plot.WriteAll(w.Dir(), r)
		if err != nil {
			return err
		}
		var md, js bytes.Buffer
		if err := report.WriteAnalyzeMarkdown(&md, r, report.MarkdownOptions{Command: command, Plots: plotsOf(ws)}); err != nil {
			return err
		}
		if err := report.WriteAnalyzeJSON(&js, []*audit.Report{r}); err != nil {
			return err
		}
		if err := w.File("report.md", md.Bytes()); err != nil {
			return err
		}
		return w.File("report.json", js.Bytes())
	})
}
