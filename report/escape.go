package report

import (
	"strings"
	"unicode/utf8"
)

// Names in a trace (kernels, ranges, threads, files) are data written by
// someone else. Every renderer treats every string of a document as such:
// the text renderer strips terminal control sequences (termSafe), Markdown
// escapes what Markdown and HTML would interpret (mdEscape,
// mdCode), Mermaid labels keep a safe alphabet (mermaidLabel), and HTML
// goes through html/template.

// termSafe strips what a terminal would interpret: escape sequences (CSI,
// OSC, DCS and other ESC sequences, and their 8-bit C1 forms), other
// control characters, and the bidirectional overrides that reorder text
// ("Trojan Source"). Line breaks and tabs become spaces, so a name stays on
// its line; invalid UTF-8 becomes U+FFFD.
func termSafe(s string) string { return stripControls(s, false) }

// mdSafe is termSafe keeping line breaks and tabs, for Markdown (code
// blocks span lines); the Markdown escapers do the rest.
func mdSafe(s string) string { return stripControls(s, true) }

func stripControls(s string, keepLines bool) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == 0x1b: // ESC
			i = skipEscape(s, i)
		case r == 0x9b: // CSI
			i = skipCSI(s, i)
		case r == 0x90 || r == 0x98 || r == 0x9d || r == 0x9e || r == 0x9f: // DCS, SOS, OSC, PM, APC
			i = skipString(s, i)
		case r == '\n' || r == '\t' || r == '\r':
			if keepLines && r != '\r' {
				b.WriteRune(r)
			} else {
				b.WriteByte(' ')
			}
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0), bidi(r):
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// plain reports whether s needs no stripping: printable ASCII, or UTF-8
// without controls.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c >= 0x80 {
			return plainUTF8(s[i:])
		}
	}
	return true
}

func plainUTF8(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError || bidi(r) {
			return false
		}
	}
	return true
}

// bidi reports the explicit bidirectional formatting characters.
func bidi(r rune) bool { return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) }

// skipEscape skips the sequence after an ESC at s[i:] and returns the
// index after it.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f { // intermediate bytes
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e { // final byte
		i++
	}
	return i
}

// skipCSI skips a control sequence's parameter, intermediate and final
// bytes.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString skips an OSC, DCS, SOS, PM or APC string up to its
// terminator (BEL, ESC \ or ST), or to the end.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i + 1
		case strings.HasPrefix(s[i:], "\u009c"):
			return i + len("\u009c")
		}
		i++
	}
	return i
}

// mdEscaper escapes what Markdown (GitHub's included) or HTML would
// interpret in prose: emphasis, code, links and images, raw HTML and
// entities, strikethrough, table pipes and math. Text is kept on one line,
// so no name can start a block (a heading, a list, a quote).
var mdEscaper = strings.NewReplacer(
	"\\", "\\\\", "*", "\\*", "_", "\\_", "`", "\\`", "[", "\\[", "]", "\\]",
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "~", "\\~", "|", "\\|", "$", "\\$",
)

// mdEscape escapes text for Markdown prose, on one line.
func mdEscape(s string) string {
	return mdEscaper.Replace(strings.Join(strings.Fields(strings.ReplaceAll(termSafe(s), "\u00a0", " ")), " "))
}

// mdCode is s as an inline code span that s cannot close: the fence is
// longer than any run of backticks in s. In a table, pipes are escaped as
// GitHub requires even inside code.
func mdCode(s string, inTable bool) string {
	s = termSafe(s)
	if inTable {
		s = strings.ReplaceAll(s, "|", "\\|")
	}
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || s == "" {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

// codeFence is a fence for a fenced code block holding s: at least three
// backticks, more than any run in s.
func codeFence(s string) string { return strings.Repeat("`", max(3, longestRun(s, '`')+1)) }

func longestRun(s string, c byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}

// mermaidLabel keeps a label to letters, digits, spaces and . , : ( ) / + - %
// (anything else becomes a space), at most 60 characters: Mermaid labels
// cannot carry quotes, brackets or markup safely.
func mermaidLabel(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range termSafe(s) {
		if n == 60 {
			break
		}
		ok := r == ' ' || r == '.' || r == ',' || r == ':' || r == '(' || r == ')' || r == '/' || r == '+' || r == '-' || r == '%' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r == 'µ'
		if !ok {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
