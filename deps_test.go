package traceaudit

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

const module = "github.com/traceaudit/traceaudit"

// rule forbids packages matching from, other than those matching except,
// from depending (directly or not) on packages matching to.
type rule struct {
	from, to, why string
	except        []string
}

var rules = []rule{
	{"timeline", module + "/", "timeline is the leaf model: standard library only", nil},
	{"timeline", "github.com/", "timeline is the leaf model: standard library only", nil},
	{"analyze/...", module + "/ingest", "analyzers never see file formats", nil},
	{"analyze/...", module + "/report", "analyzers do not render", nil},
	{"analyze/...", module + "/replay", "analyzers do not replay", nil},
	{"report/...", module + "/ingest", "reports never see parsers", nil},
	{"ingest/...", module + "/analyze", "ingest only builds timelines", nil},
	{"ingest/...", module + "/report", "ingest only builds timelines", nil},
	{"replay/...", module + "/ingest", "the replay plans from timelines, not files", nil},
	{"replay/...", module + "/analyze/passes", "the replay plans from typed fixes, not detectors", nil},
	{"replay/...", module + "/analyze/suite", "the driver hands the replay its analysis; the replay never runs the suite", nil},
	{"...", module + "/internal/testing/", "test kits are for tests only", []string{"internal/testing/...", "cmd/benchrun"}},
	{"internal/...", module + "/", "internal holds leaf helpers: they import nothing of the module", []string{"internal/testing/..."}},
	{"...", "modernc.org/sqlite", "SQLite stays in ingest/nsys", nil},
	{"...", "github.com/tidwall/gjson", "gjson stays in ingest/chrome", nil},
	{"...", "github.com/klauspost/compress", "gzip decompression stays in ingest", nil},
	{"...", "gonum.org/v1/plot", "gonum stays in report/plot", nil},
	{"...", "github.com/ebitengine/purego", "purego stays in replay/cuda", nil},
}

// allowed lists the packages that may hold a heavy dependency, and those
// above them that link it in. An entry ending in "/" covers a subtree; any
// other entry is one package.
var allowed = map[string][]string{
	"modernc.org/sqlite":            {"ingest/nsys", "ingest", "cmd/", "internal/testing/testaudit", "driver"},
	"github.com/tidwall/gjson":      {"ingest/chrome", "ingest", "cmd/", "internal/testing/testaudit", "driver"},
	"github.com/klauspost/compress": {"ingest", "cmd/", "internal/testing/testaudit", "driver"},
	"gonum.org/v1/plot":             {"report/plot", "report/folder", "cmd/"},
	"github.com/ebitengine/purego":  {"replay/cuda", "replay/cudaexec", "cmd/"},
}

func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps=false", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./...").Output()
	if err != nil {
		testfix.Missing(t, "go list: %v", err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		n++
		for _, dep := range f[1:] {
			for _, r := range rules {
				if !match(r.from, pkg) || matchAny(r.except, pkg) || !strings.HasPrefix(dep, r.to) || dep == f[0] {
					continue
				}
				if okHeavy(r.to, pkg) {
					continue
				}
				t.Errorf("%s imports %s: %s", pkg, dep, r.why)
			}
		}
	}
	if n < 5 {
		t.Fatalf("go list saw only %d packages", n)
	}
}

// TestCommandsUnderCmd keeps programs out of the library tree: a package
// main lives under cmd/ (gh's layout), never under internal/.
func TestCommandsUnderCmd(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}}", "./...").Output()
	if err != nil {
		testfix.Missing(t, "go list: %v", err)
	}
	mains := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, name, _ := strings.Cut(line, " ")
		pkg := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		if name != "main" {
			continue
		}
		mains++
		if !strings.HasPrefix(pkg, "cmd/") {
			t.Errorf("%s is a package main outside cmd/", pkg)
		}
	}
	if mains < 2 {
		t.Fatalf("go list saw %d package main, want traceaudit and benchrun", mains)
	}
}

func okHeavy(dep, pkg string) bool {
	for _, p := range allowed[dep] {
		if pkg == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(pkg, p)) {
			return true
		}
	}
	return false
}

func matchAny(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if match(p, pkg) {
			return true
		}
	}
	return false
}

func match(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}
