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
)

// Options tune a rendering. The zero value is a plain rendering.
type Options struct {
	// Command is the command line that produced the document, quoted at the
	// end of Markdown reports.
	Command string
	// Plots are figures written beside a Markdown report (report folders):
	// linked after the findings.
	Plots []Plot
}

// Plot is a figure written beside a report.
type Plot struct {
	// File is the PNG's path relative to the report.
	File string
	// Title and Caption say what the plot shows and what to look for.
	Title, Caption string
}

// ErrFormat is returned for a document that has no rendering in a format.
var ErrFormat = errors.New("format not supported for this document")

// A renderer writes any document in one format.
type renderer func(w io.Writer, doc any, o Options) error

// renderers holds the one renderer of each format.
var renderers = map[Format]renderer{Text: renderText, Markdown: renderMarkdown, JSON: renderJSON, CSV: renderCSV}

// Render writes doc in format f. Documents are *audit.Report,
// []*audit.Report (several traces), *audit.Batch, *job.Report,
// *compare.Diff, *compare.JobDiff, *replay.Report,
// and *stats.Stats; JSON takes any document that encodes
// as an object and adds schema_version and tool_version to it.
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
	p := &printer{w: w}
	switch d := doc.(type) {
	case *audit.Report:
		analyzeText(p, d)
	case []*audit.Report:
		for i, r := range d {
			if i > 0 {
				p.line("")
			}
			analyzeText(p, r)
		}
	case *job.Report:
		jobText(p, d)
	case *audit.Batch:
		batchText(p, d)
	case *compare.JobDiff:
		jobDiffText(p, d)
	case *compare.Diff:
		diffText(p, d)
	case *replay.Report:
		replayText(p, d)
	case *stats.Stats:
		statsText(p, d)
	default:
		return unsupported(Text, doc)
	}
	return p.err
}

// renderMarkdown is the pull-request renderer (GitHub-flavoured Markdown).
func renderMarkdown(w io.Writer, doc any, o Options) error {
	p := &printer{w: w}
	switch d := doc.(type) {
	case *audit.Report:
		analyzeMarkdown(p, d, o)
	case []*audit.Report:
		for i, r := range d {
			if i > 0 {
				p.line("")
				p.line("---")
				p.line("")
			}
			analyzeMarkdown(p, r, o)
		}
	case *job.Report:
		jobMarkdown(p, d, o)
	case *audit.Batch:
		batchMarkdown(p, d, o)
	case *compare.JobDiff:
		jobDiffMarkdown(p, d, o)
	case *compare.Diff:
		diffMarkdown(p, d, o)
	case *replay.Report:
		replayMarkdown(p, d, o)
	default:
		return unsupported(Markdown, doc)
	}
	return p.err
}

// renderCSV writes tables as CSV.
func renderCSV(w io.Writer, doc any, _ Options) error {
	return unsupported(CSV, doc)
}

// renderJSON writes a document as indented JSON with schema_version and
// tool_version first. Several analyze reports are a JSON array of analyze
// objects, each carrying both.
func renderJSON(w io.Writer, doc any, _ Options) error {
	var body []byte
	var err error
	if rs, ok := doc.([]*audit.Report); ok {
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
