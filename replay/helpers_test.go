package replay

import (
	"testing"

	"github.com/traceaudit/traceaudit/internal/testaudit"
)

func planOf(t *testing.T, path string) *Plan {
	t.Helper()
	p, err := Build(testaudit.File(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// auditOf reads and analyzes a trace.
var auditOf = testaudit.File
