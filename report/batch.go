package report

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/internal/units"
)

// ForBatch is the document of several unrelated traces, each analysed
// alone: text, Markdown and JSON, which its report folder holds without
// plots.
func ForBatch(b *job.Batch) *Document {
	return &Document{value: b, formats: map[Format]renderer{
		Text:     asText(func(p *printer) { batchText(p, b) }),
		Markdown: asMarkdown(func(p *printer, o Options) { batchMarkdown(p, b, o) }),
		JSON:     asJSON(b),
	}, plots: noPlots}
}

// ForAnalyses is the document of several traces' analyses side by side:
// a batch of them in text and Markdown, and in JSON an array of their
// objects, each with schema_version and tool_version. It has no report
// folder.
func ForAnalyses(rs []*audit.Analysis) *Document {
	b := &job.Batch{Files: rs}
	return &Document{value: rs, formats: map[Format]renderer{
		Text:     asText(func(p *printer) { batchText(p, b) }),
		Markdown: asMarkdown(func(p *printer, o Options) { batchMarkdown(p, b, o) }),
		JSON: func(w io.Writer, _ Options) error {
			parts := make([][]byte, len(rs))
			for i, r := range rs {
				var err error
				if parts[i], err = stamped(r); err != nil {
					return err
				}
			}
			return writeJSON(w, append(append([]byte("["), bytes.Join(parts, []byte(","))...), ']'))
		},
	}}
}

// batchText writes each trace's report, then each job's, then (for more
// than one) a table of them all: a line each with its verdict, its top
// cause and the gain of fixing it.
func batchText(p *printer, b *job.Batch) {
	for i, r := range b.Files {
		if i > 0 {
			p.line("")
		}
		analyzeText(p, r)
	}
	for i, j := range b.Jobs {
		if i > 0 || len(b.Files) > 0 {
			p.line("")
		}
		jobText(p, j)
	}
	if len(b.Files)+len(b.Jobs) < 2 {
		return
	}
	p.line("")
	p.line("%-40s %-20s %-20s %s", "trace", "verdict", "top cause", "gain")
	row := func(name, verdict string, fs []analyze.Finding) {
		cause, gain := "-", "-"
		if c := rootCauses(fs); len(c) > 0 {
			cause, gain = c[0].ID, units.Speedup(c[0].EstimatedSpeedup)
			if c[0].EstimateSource == "bound" {
				gain = "at most " + gain
			}
		}
		p.line("%s", fitLine(fmt.Sprintf("%-40s %-20s %-20s %s", fitLine(name, 40), verdictHead(verdict), cause, gain), p.cols()))
	}
	for _, r := range b.Files {
		row(filepath.Base(r.File), r.Verdict, r.Findings)
	}
	for _, j := range b.Jobs {
		fs := j.Job.Findings
		if f := focusRank(j); f != nil && len(fs) == 0 {
			fs = f.Findings
		}
		row(jobFiles(j), j.Job.Verdict, fs)
	}
}

// batchMarkdown writes each trace's report, then each job's, separated by
// rules.
func batchMarkdown(p *printer, b *job.Batch, o Options) {
	n := 0
	rule := func() {
		if n > 0 {
			p.line("")
			p.line("---")
			p.line("")
		}
		n++
	}
	for _, r := range b.Files {
		rule()
		analyzeMarkdown(p, r, o)
	}
	for _, j := range b.Jobs {
		rule()
		jobMarkdown(p, j, o)
	}
}
