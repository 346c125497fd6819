package replay

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/ingest"
)

func planOf(t *testing.T, path string) *Plan {
	t.Helper()
	tl, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := audit.Run(tl, analyze.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func auditOf(t *testing.T, path string) *audit.Report {
	t.Helper()
	tl, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := audit.Run(tl, analyze.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return r
}
