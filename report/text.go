package report

import (
	"strings"
	"unicode"
)

// textWidth is where the text report wraps prose when the width of the
// terminal is not known (Options.Width).
const textWidth = 100

// cols is the width the printer wraps to: Options.Width, else textWidth.
func (p *printer) cols() int {
	if p.width > 0 {
		return p.width
	}
	return textWidth
}

// wrap breaks s into lines of at most width runes at spaces.
func wrap(s string, width int) []string {
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		words := glueUnits(strings.Fields(para))
		cur := ""
		for _, w := range words {
			if cur != "" && len([]rune(cur))+1+len([]rune(w)) > width {
				lines = append(lines, cur)
				cur = ""
			}
			if cur == "" {
				cur = w
			} else {
				cur += " " + w
			}
		}
		lines = append(lines, cur)
	}
	return lines
}

// hanging writes s wrapped at width, its first line after first and the
// others after indent.
func hanging(p *printer, first, indent, s string, width int) {
	for i, l := range wrap(s, width) {
		if i == 0 {
			p.line("%s%s", first, l)
		} else {
			p.line("%s%s", indent, l)
		}
	}
}

// units that stay on the line of the number before them ("23 %", not
// "23" at a line's end and "%" on the next).
var unitWords = map[string]bool{"%": true, "ns": true, "µs": true, "us": true, "ms": true, "s": true, "B": true, "kB": true, "KB": true,
	"MB": true, "GB": true, "KiB": true, "MiB": true, "GiB": true, "GB/s": true}

// glueUnits joins each unit word (with its trailing punctuation) to the
// number before it, so that wrap never breaks between them.
func glueUnits(words []string) []string {
	out := words[:0:0]
	for _, w := range words {
		u := strings.TrimRight(w, ",;:.)")
		if n := len(out); n > 0 && unitWords[u] && strings.IndexFunc(out[n-1][len(out[n-1])-1:], unicode.IsDigit) == 0 {
			out[n-1] += " " + w
			continue
		}
		out = append(out, w)
	}
	return out
}
