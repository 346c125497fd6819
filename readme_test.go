package traceaudit

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/traceaudit/traceaudit/cmd/traceaudit/cli"
	"github.com/traceaudit/traceaudit/internal/testing/mdcheck"
)

// docFiles are the Markdown files of the README and the manual: README.md,
// CONTRIBUTING.md and the other pages at the root, and docs/*.md. The
// tests below keep the examples in all of them true.
func docFiles(t *testing.T) []string {
	t.Helper()
	root, _ := filepath.Glob("*.md")
	docs, _ := filepath.Glob(filepath.Join("docs", "*.md"))
	if !slices.Contains(root, "README.md") || len(docs) == 0 {
		t.Fatalf("want README.md and docs/*.md, found %v and %v", root, docs)
	}
	return append(root, docs...)
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeGoVersion: the Go version the README asks for is go.mod's, no
// page of the README or the manual names another, and no example installs
// the unpublished module with go install.
func TestReadmeGoVersion(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	want := "Go " + string(m[1]) + " or newer"
	if !strings.Contains(readDoc(t, "README.md"), want) {
		t.Errorf("README.md does not say %q (go.mod: go %s)", want, m[1])
	}
	for _, f := range docFiles(t) {
		doc := readDoc(t, f)
		for _, v := range regexp.MustCompile(`Go (1\.\d+(?:\.\d+)?)`).FindAllStringSubmatch(doc, -1) {
			if !strings.HasPrefix(string(m[1]), v[1]) {
				t.Errorf("%s names Go %s; go.mod says go %s", f, v[1], m[1])
			}
		}
		if strings.Contains(doc, "go install github.com/traceaudit") {
			t.Errorf("%s tells users to go install the module, which is not published", f)
		}
	}
}

// mermaidPage is the page whose Mermaid example is the Markdown report of
// the shipped sample trace.
const mermaidPage = "docs/reports.md"

// TestReadmeMermaid: the manual's Mermaid example (mermaidPage) is what
// traceaudit writes for the shipped sample trace, and every Mermaid chart
// in the README and the manual passes the chart checker.
func TestReadmeMermaid(t *testing.T) {
	for _, f := range docFiles(t) {
		for i, b := range mdcheck.Blocks(readDoc(t, f)) {
			if err := mdcheck.Mermaid(b); err != nil {
				t.Errorf("%s chart %d: %v", f, i, err)
			}
		}
	}
	got := mdcheck.Blocks(readDoc(t, filepath.FromSlash(mermaidPage)))
	if len(got) < 2 {
		t.Fatalf("%s has %d mermaid blocks", mermaidPage, len(got))
	}
	var out, errb bytes.Buffer
	if code := cli.Run([]string{"analyze", "--format", "markdown", "fixtures/r0_baseline.pt.trace.json.gz"}, &cli.IO{Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := mdcheck.Blocks(out.String())
	for i, b := range got[:2] {
		if i < len(want) && b != want[i] {
			t.Errorf("%s chart %d differs from traceaudit's output:\n%s\nwant\n%s", mermaidPage, i, b, want[i])
		}
	}
}

// TestReadmeQuickStart: the README's quick start shows lines that
// traceaudit prints for the shipped sample trace, in its order ("..."
// marks what the excerpt leaves out).
func TestReadmeQuickStart(t *testing.T) {
	const command = "    $ ./bin/traceaudit analyze fixtures/r0_baseline.pt.trace.json.gz"
	lines := strings.Split(readDoc(t, "README.md"), "\n")
	start := slices.Index(lines, command)
	if start < 0 {
		t.Fatalf("README.md lacks the quick start command %q", strings.TrimSpace(command))
	}
	var excerpt []string
	for _, l := range lines[start+1:] {
		if l != "" && !strings.HasPrefix(l, "    ") {
			break
		}
		if l = strings.TrimPrefix(l, "    "); strings.TrimSpace(l) != "" && strings.TrimSpace(l) != "..." {
			excerpt = append(excerpt, l)
		}
	}
	if len(excerpt) < 5 {
		t.Fatalf("README.md's quick start shows %d lines of output", len(excerpt))
	}
	var out, errb bytes.Buffer
	if code := cli.Run([]string{"analyze", "fixtures/r0_baseline.pt.trace.json.gz"}, &cli.IO{Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	printed := strings.Split(out.String(), "\n")
	at := 0
	for _, l := range excerpt {
		i := slices.Index(printed[at:], l)
		if i < 0 {
			t.Errorf("README.md's quick start shows a line traceaudit does not print there:\n%s\ntraceaudit prints:\n%s", l, out.String())
			return
		}
		at += i + 1
	}
}

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fenceRe = regexp.MustCompile("(?ms)^```.*?^```")
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
)

// anchors returns the anchors GitHub gives the headings of a Markdown page:
// lower case, punctuation dropped, spaces as hyphens, "-1", "-2" for
// repeats.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(fenceRe.ReplaceAllString(md, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		for n, s := 0, a; ; n++ {
			if !out[s] {
				out[s] = true
				break
			}
			s = a + "-" + string(rune('0'+n+1))
		}
	}
	return out
}

// TestDocLinks: every relative link and image of the README and the manual
// names a file of the repository, and every anchor a heading of its page.
func TestDocLinks(t *testing.T) {
	n := 0
	for _, f := range docFiles(t) {
		doc := readDoc(t, f)
		for _, m := range mdLink.FindAllStringSubmatch(fenceRe.ReplaceAllString(doc, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			path, frag, _ := strings.Cut(target, "#")
			file := f
			if path != "" {
				file = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s links to %s: %v", f, target, err)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(file, ".md") {
				t.Errorf("%s links to %s: an anchor in a file that is not Markdown", f, target)
				continue
			}
			if !anchors(readDoc(t, file))[frag] {
				t.Errorf("%s links to %s: %s has no heading with the anchor #%s", f, target, file, frag)
			}
		}
	}
	if n < 20 {
		t.Errorf("found only %d relative links in the README and the manual", n)
	}
}
