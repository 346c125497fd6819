package report

import (
	"bytes"
	"io"

	"github.com/traceaudit/traceaudit/analyze/audit"
)

// ForBatch is the document of several unrelated traces, each analysed
// alone: text, Markdown and JSON, which its report folder holds without
// plots.
func ForBatch(b *audit.Batch) *Document {
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
	b := &audit.Batch{Files: rs}
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

// batchText writes each trace's report.
func batchText(p *printer, b *audit.Batch) {
	for i, r := range b.Files {
		if i > 0 {
			p.line("")
		}
		analyzeText(p, r)
	}
}

// batchMarkdown writes each trace's report, separated by rules.
func batchMarkdown(p *printer, b *audit.Batch, o Options) {
	for i, r := range b.Files {
		if i > 0 {
			p.line("")
			p.line("---")
			p.line("")
		}
		analyzeMarkdown(p, r, o)
	}
}
