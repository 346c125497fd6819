package expect

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

var update = flag.Bool("update", false, "rewrite the expectations table in "+tablePage)

func load(t *testing.T) []*Entry {
	t.Helper()
	f, err := os.Open("expectations.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := Parse(f)
	if err != nil {
		t.Fatalf("expectations.txt: %v", err)
	}
	return entries
}

// sharedSubs are the folders of ../shared/fixtures that hold real traces.
var sharedSubs = []string{"chrome", "nsys", "h200", "h200-ddp"}

// realTraces lists every real trace the expectations must cover, as
// entry names: the shared corpus (when present), fixtures/ and
// fixtures/storage/.
func realTraces(t *testing.T) (names []string, sharedPresent bool) {
	t.Helper()
	for _, sub := range []string{"", "storage"} {
		for _, pat := range []string{"*.json.gz", "*.sqlite"} {
			m, _ := filepath.Glob(filepath.Join(testfix.Root(), "fixtures", sub, pat))
			for _, p := range m {
				names = append(names, filepath.ToSlash(filepath.Join("fixtures", sub, filepath.Base(p))))
			}
		}
	}
	base := os.Getenv("TRACEAUDIT_SHARED")
	if base == "" {
		base = filepath.Join(testfix.Root(), "..", "shared")
	}
	for _, sub := range sharedSubs {
		dir := filepath.Join(base, "fixtures", sub)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		sharedPresent = true
		for _, pat := range []string{"*.json.gz", "*.sqlite"} {
			m, _ := filepath.Glob(filepath.Join(dir, pat))
			for _, p := range m {
				names = append(names, "shared/"+sub+"/"+filepath.Base(p))
			}
		}
	}
	slices.Sort(names)
	return names, sharedPresent
}

// path resolves an entry's trace name.
func path(t *testing.T, name string) string {
	if rest, ok := strings.CutPrefix(name, "shared/"); ok {
		sub, file, _ := strings.Cut(rest, "/")
		return testfix.Shared(t, sub, file)
	}
	return filepath.Join(testfix.Root(), name)
}

// TestEveryTraceHasExpectations: each real trace has exactly one entry, and
// each entry names a trace that exists.
func TestEveryTraceHasExpectations(t *testing.T) {
	entries := load(t)
	traces, shared := realTraces(t)
	if !shared {
		testfix.Missing(t, "shared fixtures not found: only fixtures/ checked")
	}
	seen := map[string]int{}
	for _, e := range entries {
		if prev, dup := seen[e.Trace]; dup {
			t.Errorf("expectations.txt:%d: %s already has an entry at line %d", e.Line, e.Trace, prev)
		}
		seen[e.Trace] = e.Line
		if !slices.Contains(traces, e.Trace) && (shared || !strings.HasPrefix(e.Trace, "shared/")) {
			t.Errorf("expectations.txt:%d: %s is not a real trace of the corpus", e.Line, e.Trace)
		}
	}
	for _, tr := range traces {
		if _, ok := seen[tr]; !ok {
			t.Errorf("%s has no entry in expectations.txt: read it and write what an expert expects", tr)
		}
	}
}

// TestExpectations analyses every real trace as `traceaudit analyze` does
// and checks it against the expert expectations.
func TestExpectations(t *testing.T) {
	for _, e := range load(t) {
		t.Run(e.Trace, func(t *testing.T) {
			t.Parallel()
			p := path(t, e.Trace)
			tl, err := ingest.Open(p, ingest.Options{})
			if err == nil {
				err = ingest.Usable(tl)
			}
			if err != nil {
				t.Fatal(err)
			}
			r, err := audit.RunWith(tl, analyze.DefaultConfig(), suite.Default)
			if err != nil {
				t.Fatal(err)
			}
			for _, problem := range e.Check(r) {
				t.Error(problem)
			}
		})
	}
}

// tablePage is the page of the manual that shows the expectations table,
// relative to the repository root.
const tablePage = "docs/analyze.md"

const (
	tableBegin = "<!-- expectations table: go test ./internal/testing/expect -update writes it -->"
	tableEnd   = "<!-- end of the expectations table -->"
)

// TestReadmeTable: the manual (tablePage, "What an expert expects on each
// real trace") shows the expectations as a table generated from the file
// (go test ./internal/testing/expect -update rewrites it).
func TestReadmeTable(t *testing.T) {
	pagePath := filepath.Join(testfix.Root(), filepath.FromSlash(tablePage))
	page, err := os.ReadFile(pagePath)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(page, []byte(tableBegin)), bytes.Index(page, []byte(tableEnd))
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q and %q around the expectations table", tablePage, tableBegin, tableEnd)
	}
	// The table lives on one page: a copy elsewhere in the README or the
	// manual would not be checked.
	others, _ := filepath.Glob(filepath.Join(testfix.Root(), "docs", "*.md"))
	for _, f := range append(others, filepath.Join(testfix.Root(), "README.md")) {
		if f == pagePath {
			continue
		}
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(tableBegin)) {
			t.Errorf("%s holds an expectations table too: it belongs in %s only", f, tablePage)
		}
	}
	want := tableBegin + "\n" + Table(load(t)) + tableEnd
	got := string(page[i : j+len(tableEnd)])
	if got == want {
		return
	}
	if *update {
		out := append(append(append([]byte{}, page[:i]...), want...), page[j+len(tableEnd):]...)
		if err := os.WriteFile(pagePath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's expectations table differs from expectations.txt: go test ./internal/testing/expect -update rewrites it", tablePage)
}

// TestParse checks the file format's rules and errors.
func TestParse(t *testing.T) {
	good := `# comment
trace fixtures/x.sqlite
verdict input-bound|host-bound -- why
steps repeated range "get batch" -- why
want dataloader-wait >=error -- why
never launch-bound -- why
unobservable munmap-stall -- why
speedup sync-memcpy <=7 -- why
fix gpu-idle "get batch" -- why
nofix * "DataLoader" -- why
note jobs: tighten
`
	es, err := Parse(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	e := es[0]
	if e.Trace != "fixtures/x.sqlite" || !slices.Equal(e.Verdicts, []string{"input-bound", "host-bound"}) ||
		e.Steps != `repeated range "get batch"` || len(e.Rules) != 6 || len(e.Notes) != 1 {
		t.Fatalf("parsed %+v", e)
	}
	if r := e.Rules[0]; r.Kind != "want" || r.Min != analyze.SeverityError || r.ID != "dataloader-wait" {
		t.Errorf("want rule %+v", r)
	}
	if r := e.Rules[1]; r.Kind != "never" || r.Min != analyze.SeverityInfo {
		t.Errorf("never rule %+v", r)
	}
	if r := e.Rules[3]; r.Max != 7 {
		t.Errorf("speedup rule %+v", r)
	}
	for _, bad := range []string{
		"verdict x -- before any trace",
		"trace a\nwant x >=error",
		"trace a\nverdict x -- y\nwant x >=severe -- y",
		"trace a\nverdict x -- y\nspeedup x 7 -- y",
		"trace a\nverdict x -- y\nfix x unquoted -- y",
		"trace a\nwant x -- no verdict",
		"trace a\nverdict x -- y\nmaybe x -- y",
	} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestCheck: the invariants every trace must meet catch an estimate above
// 1 / (1 - share) and a warning in a window that is not steady.
func TestCheck(t *testing.T) {
	e := &Entry{Trace: "x", Verdicts: []string{"not-steady"}}
	r := &audit.Analysis{Verdict: "not-steady: a capture",
		Findings: []analyze.Finding{{ID: "gpu-idle", Severity: analyze.SeverityWarning, Share: 0.5, EstimatedSpeedup: 3}}}
	got := strings.Join(e.Check(r), "\n")
	if !strings.Contains(got, "above the 2.00x") || !strings.Contains(got, "is warning (est. 3.00x) in a window that is not steady") {
		t.Errorf("problems:\n%s", got)
	}
}
