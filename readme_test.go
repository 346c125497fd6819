package traceaudit

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/cmd/traceaudit/cli"
	"github.com/traceaudit/traceaudit/internal/testing/mdcheck"
)

// TestReadmeGoVersion: the Go version the README asks for is go.mod's, and
// no example installs the unpublished module with go install.
func TestReadmeGoVersion(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := "Go " + string(m[1]) + " or newer"
	if !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not say %q (go.mod: go %s)", want, m[1])
	}
	for _, v := range regexp.MustCompile(`Go (1\.\d+(?:\.\d+)?)`).FindAllSubmatch(readme, -1) {
		if !strings.HasPrefix(string(m[1]), string(v[1])) {
			t.Errorf("README.md names Go %s; go.mod says go %s", v[1], m[1])
		}
	}
	if strings.Contains(string(readme), "go install github.com/traceaudit") {
		t.Error("README.md tells users to go install the module, which is not published")
	}
}

// TestReadmeMermaid: the README's Mermaid example is what traceaudit
// writes for the shipped sample trace, and passes the chart checker.
func TestReadmeMermaid(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	got := mdcheck.Blocks(string(readme))
	if len(got) < 2 {
		t.Fatalf("README.md has %d mermaid blocks", len(got))
	}
	var out, errb bytes.Buffer
	if code := cli.Run([]string{"analyze", "--format", "markdown", "fixtures/r0_baseline.pt.trace.json.gz"}, &cli.IO{Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := mdcheck.Blocks(out.String())
	for i, b := range got[:2] {
		if err := mdcheck.Mermaid(b); err != nil {
			t.Errorf("README chart %d: %v", i, err)
		}
		if i < len(want) && b != want[i] {
			t.Errorf("README chart %d differs from traceaudit's output:\n%s\nwant\n%s", i, b, want[i])
		}
	}
}
