package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/compare"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/analyze/stats"
	"github.com/traceaudit/traceaudit/internal/version"
	"github.com/traceaudit/traceaudit/replay"
)

// Format names an output format.
type Format string

// The output formats. Every document renders as Text, Markdown and JSON;
// stats tables also as CSV.
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

// A renderer writes any document in one format.
type renderer func(w io.Writer, doc any, o Options) error

// renderers holds the one renderer of each format.
var renderers = map[Format]renderer{Text: renderText, Markdown: renderMarkdown, JSON: renderJSON, CSV: renderCSV, HTML: renderHTML, ChromeTrace: renderChromeTrace}

// Render writes doc in format f, the one entry point of every renderer.
// Documents are *audit.Analysis, []*audit.Analysis (several traces),
// *audit.Batch (a batch), *job.Analysis (a job), *compare.Diff,
// *compare.JobDiff, *replay.Result, *stats.Stats and *stats.Table. Text and
// Markdown take all but tables in Markdown; CSV takes tables; HTML takes
// analyze, diff and replay documents (with Options.Plots inline);
// ChromeTrace takes an analyze report with its timeline; JSON takes any
// document that encodes as an object and adds schema_version and
// tool_version to it. A combination without a rendering returns an error
// wrapping ErrFormat. A new document type adds a case to each renderer's
// switch (and, for report folders, to report/folder).
func Render(w io.Writer, f Format, doc any, o Options) error {
	r, ok := renderers[f]
	if !ok {
		return fmt.Errorf("report: %q: %w", f, ErrFormat)
	}
	return r(w, doc, o)
}

func unsupported(f Format, doc any) error {
	return fmt.Errorf("report: %s of %T: %w", f, doc, ErrFormat)
}

// renderText is the terminal renderer.
func renderText(w io.Writer, doc any, o Options) error {
	p := &printer{w: w, clean: termSafe, color: o.Color}
	switch d := doc.(type) {
	case *audit.Analysis:
		analyzeText(p, d)
	case []*audit.Analysis:
		for i, r := range d {
			if i > 0 {
				p.line("")
			}
			analyzeText(p, r)
		}
	case *job.Analysis:
		jobText(p, d)
	case *audit.Batch:
		batchText(p, d)
	case *compare.JobDiff:
		jobDiffText(p, d)
	case *compare.Diff:
		diffText(p, d)
	case *replay.Result:
		replayText(p, d)
	case *stats.Stats:
		statsText(p, d)
	case *stats.Table:
		tableText(p, d)
	default:
		return unsupported(Text, doc)
	}
	return p.err
}

// renderMarkdown is the pull-request renderer (GitHub-flavoured Markdown).
func renderMarkdown(w io.Writer, doc any, o Options) error {
	p := &printer{w: w, clean: mdSafe}
	switch d := doc.(type) {
	case *audit.Analysis:
		analyzeMarkdown(p, d, o)
	case []*audit.Analysis:
		for i, r := range d {
			if i > 0 {
				p.line("")
				p.line("---")
				p.line("")
			}
			analyzeMarkdown(p, r, o)
		}
	case *job.Analysis:
		jobMarkdown(p, d, o)
	case *audit.Batch:
		batchMarkdown(p, d, o)
	case *compare.JobDiff:
		jobDiffMarkdown(p, d, o)
	case *compare.Diff:
		diffMarkdown(p, d, o)
	case *replay.Result:
		replayMarkdown(p, d, o)
	default:
		return unsupported(Markdown, doc)
	}
	return p.err
}

// renderCSV writes tables as CSV.
func renderCSV(w io.Writer, doc any, _ Options) error {
	t, ok := doc.(*stats.Table)
	if !ok {
		return unsupported(CSV, doc)
	}
	return tableCSV(w, t)
}

// renderJSON writes a document as indented JSON with schema_version and
// tool_version first. Several analyze reports are a JSON array of analyze
// objects, each carrying both.
func renderJSON(w io.Writer, doc any, _ Options) error {
	var body []byte
	var err error
	if rs, ok := doc.([]*audit.Analysis); ok {
		parts := make([][]byte, len(rs))
		for i, r := range rs {
			if parts[i], err = stamped(r); err != nil {
				return err
			}
		}
		body = append(append([]byte("["), bytes.Join(parts, []byte(","))...), ']')
	} else if body, err = stamped(doc); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return fmt.Errorf("report: json: %w", err)
	}
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}

// stamped encodes doc, an object, with schema_version and tool_version as
// its first fields.
func stamped(doc any) ([]byte, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("report: json: %w", err)
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, unsupported(JSON, doc)
	}
	tool, _ := json.Marshal(version.Tool())
	head := `{"schema_version":` + strconv.Itoa(version.Schema) + `,"tool_version":` + string(tool)
	if string(b) != "{}" {
		head += ","
	}
	return append([]byte(head), b[1:]...), nil
}

// printer writes formatted lines and keeps the first error.
type printer struct {
	w   io.Writer
	err error
	// clean is applied to every string argument of line: strings in
	// documents hold names from traces, data written by someone else.
	clean func(string) string
	// color allows ANSI colours (text output to a terminal).
	color bool
}

// styled is text the renderer made itself (colours): line does not clean
// it.
type styled string

// line writes one formatted line, cleaning string arguments.
func (p *printer) line(format string, args ...any) {
	if p.err != nil {
		return
	}
	if len(args) == 0 {
		_, p.err = io.WriteString(p.w, format+"\n")
		return
	}
	if p.clean != nil {
		for i, a := range args {
			if s, ok := a.(string); ok {
				args[i] = p.clean(s)
			}
		}
	}
	_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
}

// ANSI colours of severities and diff statuses.
const (
	ansiRed    = "\x1b[1;31m"
	ansiYellow = "\x1b[1;33m"
	ansiBlue   = "\x1b[34m"
	ansiGreen  = "\x1b[32m"
	ansiReset  = "\x1b[0m"
)

// paint colours s (already padded) when the printer may.
func (p *printer) paint(s, color string) styled {
	if !p.color || color == "" {
		return styled(s)
	}
	return styled(color + s + ansiReset)
}

// severityColor is the colour of a severity name.
func severityColor(sev string) string {
	switch sev {
	case "error":
		return ansiRed
	case "warning":
		return ansiYellow
	case "info":
		return ansiBlue
	}
	return ""
}
