package cli

import (
	"bytes"
	"strings"

	"github.com/traceaudit/traceaudit/internal/outdir"
	"github.com/traceaudit/traceaudit/report"
	"github.com/traceaudit/traceaudit/report/folder"
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

// emit renders doc in format on stdout and, when outDir is set, writes
// the report folder there; args (the command line) are quoted in Markdown
// reports. Everything is rendered before anything is written, and the
// folder before stdout, so a failure leaves no partial output.
func emit(ios *IO, format, outDir string, args []string, doc *report.Document) error {
	return emitWith(ios, format, outDir, args, doc, false)
}

// emitWith is emit with the text in full when verbose (analyze --verbose).
func emitWith(ios *IO, format, outDir string, args []string, doc *report.Document, verbose bool) error {
	o := report.Options{Command: strings.Join(args, " "), Verbose: verbose}
	if format == string(report.Text) {
		o.Color = ios.Color
	}
	var buf bytes.Buffer
	if err := doc.Render(&buf, report.Format(format), o); err != nil {
		return err
	}
	ctx := ios.context()
	if err := interrupted(ctx); err != nil {
		return err
	}
	if outDir != "" {
		if err := folder.Write(ctx, outDir, doc, report.Options{Command: o.Command}); err != nil {
			return err
		}
	}
	_, err := ios.Out.Write(buf.Bytes())
	return err
}
