package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/traceaudit/traceaudit/internal/version"
)

// writeJSON writes a JSON body indented, with a final newline.
func writeJSON(w io.Writer, body []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return fmt.Errorf("report: json: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
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
	// verbose asks for the full text of an analysis (Options.Verbose).
	verbose bool
	// width is the columns text wraps to (0: textWidth).
	width int
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
