package traceaudit

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testfix"
)

const module = "github.com/traceaudit/traceaudit"

// rule forbids packages matching from from depending (directly or not) on
// packages matching to.
type rule struct{ from, to, why string }

var rules = []rule{
	{"timeline", module + "/", "timeline is the leaf model: standard library only"},
	{"timeline", "github.com/", "timeline is the leaf model: standard library only"},
	{"analyze/...", module + "/ingest", "analyzers never see file formats"},
	{"analyze/...", module + "/report", "analyzers do not render"},
	{"analyze/...", module + "/replay", "analyzers do not replay"},
	{"report/...", module + "/ingest", "reports never see parsers"},
	{"ingest/...", module + "/analyze", "ingest only builds timelines"},
	{"ingest/...", module + "/report", "ingest only builds timelines"},
	{"replay/...", module + "/ingest", "the replay plans from timelines, not files"},
	{"...", module + "/internal/testaudit", "testaudit (ingest, then analyze) is for tests only"},
	{"...", "modernc.org/sqlite", "SQLite stays in ingest/nsys"},
	{"...", "github.com/tidwall/gjson", "gjson stays in ingest/chrome"},
	{"...", "github.com/klauspost/compress", "gzip decompression stays in ingest"},
	{"...", "gonum.org/v1/plot", "gonum stays in report/plot"},
	{"...", "github.com/ebitengine/purego", "purego stays in replay/cuda"},
}

// allowed lists the packages that may hold a heavy dependency, and those
// above them that link it in. An entry ending in "/" covers a subtree; any
// other entry is one package.
var allowed = map[string][]string{
	"modernc.org/sqlite":            {"ingest/nsys", "ingest", "cmd/", "internal/benchrun", "internal/testaudit", "internal/inputs"},
	"github.com/tidwall/gjson":      {"ingest/chrome", "ingest", "cmd/", "internal/benchrun", "internal/testaudit", "internal/inputs"},
	"github.com/klauspost/compress": {"ingest", "cmd/", "internal/benchrun", "internal/testaudit", "internal/inputs"},
	"gonum.org/v1/plot":             {"report/plot", "report/folder", "cmd/", "internal/benchrun"},
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
				if !match(r.from, pkg) || !strings.HasPrefix(dep, r.to) || dep == f[0] {
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

func okHeavy(dep, pkg string) bool {
	for _, p := range allowed[dep] {
		if pkg == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(pkg, p)) {
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
