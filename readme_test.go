package traceaudit

import (
	"os"
	"regexp"
	"strings"
	"testing"
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
