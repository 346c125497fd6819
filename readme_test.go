package traceaudit

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

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
