// Package report renders traceaudit's results for people and programs:
// text for the terminal, Markdown (with Mermaid charts) for pull requests,
// a self-contained HTML page, an annotated Chrome trace for Perfetto, CSV
// tables and JSON for tools. Each kind of result is a Document, built by
// its constructor (ForAnalysis, ForDiff, ...) in a file of its own that
// holds all of its renderers; the files named after a format hold what
// that format's renderers share. Names from traces are escaped for each
// format (escape.go). Plots live in report/plot, report folders in
// report/folder. Reports never see file formats.
package report

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/replay"
)

// Format names an output format.
type Format string

// The output formats. Every document renders as JSON; which others it
// has, its constructor says.
const (
	Text     Format = "text"
	Markdown Format = "markdown"
	JSON     Format = "json"
	CSV      Format = "csv"
	// HTML is the self-contained report.html of report folders.
	HTML Format = "html"
	// ChromeTrace is annotated.json of report folders: the steady window
	// as a Chrome trace with the findings as their own tracks (Perfetto).
	ChromeTrace Format = "chrome-trace"
)

// formats are the formats Render knows, for telling an unknown format
// from one a document lacks.
var formats = []Format{Text, Markdown, JSON, CSV, HTML, ChromeTrace}

// Options tune a rendering. The zero value is a plain rendering.
type Options struct {
	// Command is the command line that produced the document, quoted at the
	// end of Markdown reports.
	Command string
	// Plots are figures written beside a Markdown report (report folders):
	// linked after the findings.
	Plots []Plot
	// Color marks severities (and diff statuses) with ANSI colours in text
	// output; for a terminal that did not opt out (NO_COLOR).
	Color bool
	// Verbose writes an analysis's text in full (every finding with its
	// evidence); without it the text gives the answer in a screen.
	Verbose bool
	// Width is the columns text wraps to: the terminal's (0: 100).
	Width int
}

// Plot is a figure written beside a report.
type Plot struct {
	// File is the PNG's path relative to the report.
	File string
	// Title and Caption say what the plot shows and what to look for.
	Title, Caption string
	// SVG is the figure as SVG, inlined by the HTML report.
	SVG []byte
}

// ErrFormat is returned for a document that has no rendering in a format.
var ErrFormat = errors.New("format not supported for this document")

// A renderer writes one document in one format.
type renderer func(w io.Writer, o Options) error

// A Document is a result with a renderer for each format it has and the
// figures of its report folder. Each kind of result has a constructor
// (ForAnalysis, ForJob, ForDiff, ...) in a file of its own, beside its
// renderers; a new kind of result adds one (and a Plotter method if it
// brings a new kind of figure).
type Document struct {
	// value is the result itself: errors name its type.
	value   any
	formats map[Format]renderer
	// plots draws the figures of the document's report folder, in report
	// order; nil for a document that has no report folder.
	plots func(Plotter) error
}

// ForValue is a document that renders only as JSON: v, which must encode
// as an object (the version information, say).
func ForValue(v any) *Document {
	return &Document{value: v, formats: map[Format]renderer{JSON: asJSON(v)}}
}

// Render writes the document in format f. JSON adds schema_version and
// tool_version to the document's object; HTML shows Options.Plots inline
// and Markdown links them. A format the document lacks returns an error
// wrapping ErrFormat.
func (d *Document) Render(w io.Writer, f Format, o Options) error {
	r, ok := d.formats[f]
	switch {
	case ok:
		return r(w, o)
	case slices.Contains(formats, f):
		return unsupported(f, d.value)
	}
	return fmt.Errorf("report: %q: %w", f, ErrFormat)
}

// Has reports whether the document renders in format f.
func (d *Document) Has(f Format) bool {
	_, ok := d.formats[f]
	return ok
}

// A Plotter draws the figures of a report folder, one method per kind of
// figure, from the result it shows. report/folder implements it with
// report/plot, so that package report never links the plotting library.
type Plotter interface {
	// Analysis draws the figures of one trace's analysis: its timeline,
	// utilization, steps and findings.
	Analysis(r *audit.Analysis) error
	// StepsDiff draws the step split before and after.
	StepsDiff(before, after *audit.Analysis) error
	// Ranks draws where each rank's step goes.
	Ranks(j *job.Analysis) error
	// Replay draws the measured and predicted step of each variant.
	Replay(r *replay.Result) error
}

// Plot draws the figures of the document's report folder on p, in the
// order the report shows them. A document without a report folder (stats,
// tables) returns an error wrapping ErrFormat.
func (d *Document) Plot(p Plotter) error {
	if d.plots == nil {
		return fmt.Errorf("report folder of %T: %w", d.value, ErrFormat)
	}
	return d.plots(p)
}

// noPlots is the plots of a report folder that holds only its renderings.
func noPlots(Plotter) error { return nil }

func unsupported(f Format, doc any) error {
	return fmt.Errorf("report: %s of %T: %w", f, doc, ErrFormat)
}

// asText is the terminal renderer of write: names cleaned of what a
// terminal would interpret, colours where Options allow.
func asText(write func(p *printer)) renderer {
	return func(w io.Writer, o Options) error {
		p := &printer{w: w, clean: termSafe, color: o.Color, verbose: o.Verbose, width: o.Width}
		write(p)
		return p.err
	}
}

// asMarkdown is the pull-request renderer (GitHub-flavoured Markdown) of
// write.
func asMarkdown(write func(p *printer, o Options)) renderer {
	return func(w io.Writer, o Options) error {
		p := &printer{w: w, clean: mdSafe}
		write(p, o)
		return p.err
	}
}

// asHTML is the HTML renderer of the page that build makes.
func asHTML(build func() htmlPage) renderer {
	return func(w io.Writer, o Options) error { return writePage(w, build(), o) }
}

// asJSON is the JSON renderer of v, an object: schema_version and
// tool_version first.
func asJSON(v any) renderer {
	return func(w io.Writer, _ Options) error {
		body, err := stamped(v)
		if err != nil {
			return err
		}
		return writeJSON(w, body)
	}
}
