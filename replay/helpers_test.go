package replay

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/internal/testing/testaudit"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

func planOf(t *testing.T, path string) *Plan {
	t.Helper()
	p, err := Build(testaudit.File(t, path), suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ranIf is what a run measured of p's variants, all zero, where ran is
// true, else nil (a dry run).
func ranIf(p *Plan, ran bool) []Measured {
	if !ran {
		return nil
	}
	return make([]Measured, len(p.Variants))
}

// auditOf reads and analyzes a trace.
var auditOf = testaudit.File

// wantNote fails t unless r's notes, one per line, contain want.
func wantNote(t *testing.T, r *Result, want string) {
	t.Helper()
	if all := strings.Join(r.Notes, "\n"); !strings.Contains(all, want) {
		t.Errorf("notes lack %q:\n%s", want, all)
	}
}

// stepModelTrace is the path of one of the real H200 traces of
// fixtures/step-model.
func stepModelTrace(name string) string {
	return testfix.Project(filepath.Join("step-model", name+".pt.trace.json.gz"))
}
