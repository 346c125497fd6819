package report

import (
	"strings"
	"testing"
)

func TestTermSafe(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"gemm_kernel<float>", "gemm_kernel<float>"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"a\x1b]0;title\x07b", "ab"},                             // OSC set-title, BEL-terminated
		{"a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"}, // OSC 8 hyperlink, ST-terminated
		{"a\x1bPqdata\x1b\\b", "ab"},                             // DCS
		{"a\x1b7b\x1bc", "ab"},                                   // ESC 7, ESC c (reset)
		{"a\u009b2Jb", "ab"},                                     // 8-bit CSI
		{"a\u009d0;x\u009cb", "ab"},                              // 8-bit OSC ... ST
		{"line1\nline2\r\tx", "line1 line2  x"},                  // breaks become spaces
		{"bell\x07 nul\x00 del\x7f", "bell nul del"},
		{"safe\u202eevil", "safeevil"}, // bidi override
		{"\xff\xfe", "\ufffd\ufffd"},
		{"ProfilerStep#3 µs", "ProfilerStep#3 µs"},
		{"trailing\x1b", "trailing"},
		{"\x1b[", ""},
	} {
		if got := termSafe(c.in); got != c.want {
			t.Errorf("termSafe(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := mdSafe("a\nb\x1b[2Jc\td"); got != "a\nbc\td" {
		t.Errorf("mdSafe keeps lines: %q", got)
	}
}

func TestMarkdownEscapes(t *testing.T) {
	evil := "<script>alert(1)</script> **bold** [x](javascript:alert(1)) `code` ~~s~~ | $x$ &amp; _i_"
	got := mdEscape(evil)
	if strings.ContainsAny(got, "<>") {
		t.Errorf("raw angle brackets in %q", got)
	}
	// Every Markdown-special character is backslash-escaped.
	for i := 0; i < len(got); i++ {
		if got[i] == '\\' {
			i++
			continue
		}
		if strings.IndexByte("*_`[]~|$", got[i]) >= 0 {
			t.Errorf("unescaped %q at %d in %q", got[i], i, got)
		}
	}
	if !strings.Contains(got, "&amp;amp;") {
		t.Errorf("& not escaped: %q", got)
	}
	if got := mdEscape("a\n# heading\n- item"); strings.Contains(got, "\n") {
		t.Errorf("a line break survived: %q", got)
	}
	for _, c := range []struct {
		in      string
		inTable bool
		want    string
	}{
		{"host/1/2 (python3)", false, "`host/1/2 (python3)`"},
		{"a`b", false, "``a`b``"},
		{"`x", false, "`` `x ``"},
		{"a|b ``c", true, "```a\\|b ``c```"},
	} {
		if got := mdCode(c.in, c.inTable); got != c.want {
			t.Errorf("mdCode(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := codeFence("x = 1\n```\ny"); got != "````" {
		t.Errorf("codeFence %q", got)
	}
}

func TestMermaidLabelAndCSV(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"compute 60.6 ms", "compute 60.6 ms"},
		{`x"]; click A call alert(1) %%`, "x click A call alert(1) %%"},
		{"a<br/>b#quot;c{}", "a br/ b quot c"},
		{"gpu-idle", "gpu-idle"},
		{"\x1b[31mred\nnext", "red next"},
	} {
		if got := mermaidLabel(c.in); got != c.want {
			t.Errorf("mermaidLabel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if len([]rune(mermaidLabel(strings.Repeat("k", 200)))) != 60 {
		t.Error("labels are not clipped")
	}
	for in, want := range map[string]string{"=HYPERLINK(1)": "'=HYPERLINK(1)", "+1": "'+1", "@x": "'@x", "-2": "'-2", "gemm": "gemm", "a\x1b[1mb": "ab"} {
		if got := csvSafe(in); got != want {
			t.Errorf("csvSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// wrap never leaves a unit at the start of a line, away from its number.
func TestWrapKeepsUnitsWithTheirNumbers(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  []string
	}{
		{"aaaa 23 %, bb", 7, []string{"aaaa", "23 %,", "bb"}},
		{"idle 253 ms; host", 9, []string{"idle", "253 ms;", "host"}},
		{"x 1.5 GB/s) y", 5, []string{"x", "1.5 GB/s)", "y"}},
		{"in s and ms", 3, []string{"in", "s", "and", "ms"}}, // no number before
	} {
		if got := wrap(c.in, c.width); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("wrap(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}
