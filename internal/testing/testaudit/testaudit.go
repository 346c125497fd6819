// Package testaudit reads a trace and analyzes it with the default suite,
// for the tests of what comes after analysis (plots, the replay, the
// benchmark driver). The packages themselves never see a parser: only
// their tests import this one.
package testaudit

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/ingest"
)

// File reads the trace at path and analyzes it with the default settings,
// failing the test on any error.
func File(t testing.TB, path string) *audit.Analysis {
	t.Helper()
	return FileWith(t, path, analyze.DefaultConfig())
}

// FileWith is File with the given settings.
func FileWith(t testing.TB, path string, cfg *analyze.Config) *audit.Analysis {
	t.Helper()
	tl, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := audit.RunWith(tl, cfg, suite.Default)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}
