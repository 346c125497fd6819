// Package mdcheck checks the Markdown traceaudit writes, for tests: its
// Mermaid charts against a parser of the subset traceaudit emits (`pie`
// and `xychart-beta` bar charts, with an optional init directive), and
// the structure a name from a trace could break (table rows, code fences,
// raw HTML).
package mdcheck

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Blocks returns the bodies of the ```mermaid blocks of md.
func Blocks(md string) []string {
	var out []string
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```mermaid" {
			continue
		}
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		out = append(out, strings.Join(body, "\n")+"\n")
	}
	return out
}

var (
	initRe    = regexp.MustCompile(`^%%\{init: (\{.*\})\}%%$`)
	pieTitle  = regexp.MustCompile(`^pie( showData)?( title [^"\n]+)?$`)
	pieSlice  = regexp.MustCompile(`^ {4}"([^"]+)" : ([0-9]+(\.[0-9]+)?)$`)
	xyHead    = regexp.MustCompile(`^xychart-beta( horizontal)?$`)
	xyTitle   = regexp.MustCompile(`^ {4}title "([^"]+)"$`)
	xyXAxis   = regexp.MustCompile(`^ {4}x-axis \[(.*)\]$`)
	xyYAxis   = regexp.MustCompile(`^ {4}y-axis "([^"]+)" ([0-9]+(\.[0-9]+)?) --> ([0-9]+(\.[0-9]+)?)$`)
	xyBar     = regexp.MustCompile(`^ {4}bar \[(.*)\]$`)
	labelSafe = regexp.MustCompile(`^[A-Za-z0-9 .,:()/+\-%µ]+$`)
)

// Mermaid checks one chart of the subset traceaudit writes.
func Mermaid(block string) error {
	lines := strings.Split(strings.TrimRight(block, "\n"), "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "%%") {
		m := initRe.FindStringSubmatch(lines[0])
		if m == nil {
			return fmt.Errorf("bad init directive %q", lines[0])
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(m[1]), &v); err != nil {
			return fmt.Errorf("init directive is not JSON: %v", err)
		}
		lines = lines[1:]
	}
	if len(lines) == 0 {
		return fmt.Errorf("empty chart")
	}
	switch {
	case pieTitle.MatchString(lines[0]):
		return pie(lines)
	case xyHead.MatchString(lines[0]):
		return xychart(lines)
	}
	return fmt.Errorf("unknown chart %q", lines[0])
}

func label(s string) error {
	if !labelSafe.MatchString(s) {
		return fmt.Errorf("unsafe label %q", s)
	}
	return nil
}

func pie(lines []string) error {
	if t := strings.TrimPrefix(pieTitle.FindStringSubmatch(lines[0])[2], " title "); t != "" {
		if err := label(t); err != nil {
			return err
		}
	}
	if len(lines) < 2 {
		return fmt.Errorf("pie without slices")
	}
	for _, l := range lines[1:] {
		m := pieSlice.FindStringSubmatch(l)
		if m == nil {
			return fmt.Errorf("bad pie slice %q", l)
		}
		if err := label(m[1]); err != nil {
			return err
		}
		if v, _ := strconv.ParseFloat(m[2], 64); v <= 0 {
			return fmt.Errorf("pie slice %q: want a positive value", l)
		}
	}
	return nil
}

func xychart(lines []string) error {
	var nx, nbars int
	var seenX, seenY bool
	var top float64
	for _, l := range lines[1:] {
		switch {
		case xyTitle.MatchString(l):
			if err := label(xyTitle.FindStringSubmatch(l)[1]); err != nil {
				return err
			}
		case xyXAxis.MatchString(l):
			items, err := list(xyXAxis.FindStringSubmatch(l)[1], true)
			if err != nil {
				return fmt.Errorf("x-axis: %v", err)
			}
			nx, seenX = len(items), true
		case xyYAxis.MatchString(l):
			m := xyYAxis.FindStringSubmatch(l)
			if err := label(m[1]); err != nil {
				return err
			}
			lo, _ := strconv.ParseFloat(m[2], 64)
			top, _ = strconv.ParseFloat(m[4], 64)
			if top <= lo {
				return fmt.Errorf("y-axis range %v --> %v", lo, top)
			}
			seenY = true
		case xyBar.MatchString(l):
			items, err := list(xyBar.FindStringSubmatch(l)[1], false)
			if err != nil {
				return fmt.Errorf("bar: %v", err)
			}
			for _, it := range items {
				if v, _ := strconv.ParseFloat(it, 64); seenY && v > top {
					return fmt.Errorf("bar value %s above the y-axis maximum %v", it, top)
				}
			}
			if nbars = len(items); seenX && nbars != nx {
				return fmt.Errorf("%d bars for %d x-axis labels", nbars, nx)
			}
		default:
			return fmt.Errorf("unknown xychart line %q", l)
		}
	}
	if !seenX || nbars == 0 {
		return fmt.Errorf("xychart without x-axis or bars")
	}
	return nil
}

// list parses a comma-separated list of quoted labels or numbers.
func list(s string, quoted bool) ([]string, error) {
	var out []string
	for _, it := range strings.Split(s, ", ") {
		if quoted {
			if len(it) < 2 || it[0] != '"' || it[len(it)-1] != '"' {
				return nil, fmt.Errorf("want a quoted label, got %q", it)
			}
			it = it[1 : len(it)-1]
			if err := label(it); err != nil {
				return nil, err
			}
		} else if _, err := strconv.ParseFloat(it, 64); err != nil {
			return nil, fmt.Errorf("want a number, got %q", it)
		}
		out = append(out, it)
	}
	return out, nil
}

// allowedHTML are the raw HTML tags traceaudit's Markdown uses.
var allowedHTML = map[string]bool{"details": true, "/details": true, "summary": true, "/summary": true, "sub": true, "/sub": true}

var tagRe = regexp.MustCompile(`<(/?[A-Za-z][A-Za-z0-9-]*)`)

// Structure reports what could break a Markdown report's layout or run in
// it: table rows whose cell count differs from their header's (pipes
// outside code spans), unbalanced code fences, and raw HTML tags other
// than traceaudit's own outside code.
func Structure(md string) []error {
	var errs []error
	lines := strings.Split(md, "\n")
	fence := ""
	cols := 0
	for n, l := range lines {
		where := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("line %d: %s: %q", n+1, fmt.Sprintf(format, args...), l))
		}
		if fence != "" {
			if strings.HasPrefix(l, fence) && strings.Trim(l, "`") == "" && len(l) >= len(fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(l, "```") {
			fence = l[:len(l)-len(strings.TrimLeft(l, "`"))]
			continue
		}
		text := outsideCode(l)
		for _, m := range tagRe.FindAllStringSubmatch(text, -1) {
			if !allowedHTML[strings.ToLower(m[1])] {
				where("raw HTML <%s>", m[1])
			}
		}
		if strings.HasPrefix(l, "|") {
			c := cells(text)
			switch {
			case cols == 0:
				cols = c
			case c != cols:
				where("%d cells, the table has %d", c, cols)
			}
		} else {
			cols = 0
		}
	}
	if fence != "" {
		errs = append(errs, fmt.Errorf("an unclosed code fence %q", fence))
	}
	return errs
}

// outsideCode blanks the inner text of inline code spans (CommonMark: a
// run of n backticks closes at the next run of exactly n), keeping
// escaped pipes inside, as GitHub splits cells on unescaped pipes even in
// code.
func outsideCode(l string) string {
	var b strings.Builder
	for i := 0; i < len(l); {
		if l[i] == '\\' && i+1 < len(l) {
			b.WriteString(l[i : i+2])
			i += 2
			continue
		}
		if l[i] != '`' {
			b.WriteByte(l[i])
			i++
			continue
		}
		n := 0
		for i+n < len(l) && l[i+n] == '`' {
			n++
		}
		closeAt := -1
		for j := i + n; j < len(l); {
			if l[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(l) && l[j+m] == '`' {
				m++
			}
			if m == n {
				closeAt = j
				break
			}
			j += m
		}
		if closeAt < 0 {
			b.WriteString(l[i : i+n])
			i += n
			continue
		}
		inner := l[i+n : closeAt]
		b.WriteString(strings.Repeat("`", n))
		for k := 0; k < len(inner); k++ {
			if inner[k] == '|' && k > 0 && inner[k-1] == '\\' {
				b.WriteString("\\|")
			} else if inner[k] == '|' {
				b.WriteByte('|')
			} else {
				b.WriteByte('x')
			}
		}
		b.WriteString(strings.Repeat("`", n))
		i = closeAt + n
	}
	return b.String()
}

// cells counts a table row's cells: unescaped pipes minus one.
func cells(l string) int {
	n := 0
	for i := 0; i < len(l); i++ {
		if l[i] == '\\' {
			i++
			continue
		}
		if l[i] == '|' {
			n++
		}
	}
	return n - 1
}
