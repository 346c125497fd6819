package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
		o.Color, o.Width = ios.Color, ios.Width
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
	if _, err := ios.Out.Write(buf.Bytes()); err != nil {
		return err
	}
	if outDir != "" {
		fmt.Fprintln(ios.Err, "traceaudit: "+wrote(outDir))
	}
	return nil
}

// hints say how to open a file of a report folder.
var hints = map[string]string{"report.html": " (open in a browser)", "annotated.json": " (open in ui.perfetto.dev)"}

// wrote says what a report folder holds: its reports, then its plots.
func wrote(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "wrote " + dir
	}
	var files []string
	plots := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue // the folder's own marker
		}
		switch name := e.Name(); filepath.Ext(name) {
		case ".png":
			plots++
		case ".svg":
		default:
			files = append(files, name+hints[name])
		}
	}
	sort.Slice(files, func(i, j int) bool { return rank(files[i]) < rank(files[j]) })
	out := "wrote " + filepath.Join(dir, "") + string(filepath.Separator) + ": " + strings.Join(files, ", ")
	if plots > 0 {
		out += fmt.Sprintf(", %d plot(s) (PNG and SVG)", plots)
	}
	return out
}

// rank orders a folder's files as a reader opens them.
func rank(name string) int {
	for i, p := range []string{"report.html", "report.md", "report.json", "annotated.json"} {
		if strings.HasPrefix(name, p) {
			return i
		}
	}
	return 9
}
