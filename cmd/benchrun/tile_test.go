package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/internal/testing/testaudit"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

var analyzeFile = testaudit.File

// sameFindings checks that tiling a trace in time does not change what the
// analysis says: the same findings at the same severities, the same verdict
// class, shares within a few points.
func sameFindings(t *testing.T, orig, tiled *audit.Analysis, tiles int) {
	t.Helper()
	class := func(v string) string { c, _, _ := strings.Cut(v, ":"); return c }
	if class(orig.Verdict) != class(tiled.Verdict) {
		t.Errorf("verdict %q became %q", orig.Verdict, tiled.Verdict)
	}
	sev := func(r *audit.Analysis) map[string]analyze.Finding {
		m := map[string]analyze.Finding{}
		for _, f := range r.Findings {
			if f.Severity >= analyze.SeverityWarning {
				m[f.ID] = f
			}
		}
		return m
	}
	a, b := sev(orig), sev(tiled)
	if len(a) != len(b) {
		t.Errorf("findings at warning or above: %d in the original, %d tiled", len(a), len(b))
	}
	for id, f := range a {
		g, ok := b[id]
		if !ok || g.Severity != f.Severity {
			t.Errorf("%s: %s in the original, %s tiled", id, f.Severity, g.Severity)
			continue
		}
		if d := g.Share - f.Share; d > 0.05 || d < -0.05 {
			t.Errorf("%s: share %.3f became %.3f", id, f.Share, g.Share)
		}
	}
	if tiled.Steps.Count < tiles*(orig.Steps.Count-orig.Steps.StartupExcluded-orig.Steps.TeardownExcluded) {
		t.Errorf("steps: %d tiled from %d", tiled.Steps.Count, orig.Steps.Count)
	}
}

func TestTilingKeepsFindings(t *testing.T) {
	dir := t.TempDir()
	t.Run("chrome", func(t *testing.T) {
		src := testfix.Project("r0_baseline.pt.trace.json.gz")
		dst := filepath.Join(dir, "r0x4.json")
		_, events, err := tileChrome(src, dst, 4)
		if err != nil {
			t.Fatal(err)
		}
		orig := analyzeFile(t, src)
		tiled := analyzeFile(t, dst)
		if n := int64(len(tiled.Timeline.Events)); n < 3*int64(len(orig.Timeline.Events)) || events < 4*14000 {
			t.Fatalf("tiled timeline has %d events (%d written)", n, events)
		}
		sameFindings(t, orig, tiled, 4)
	})
	t.Run("nsys", func(t *testing.T) {
		src := testfix.Shared(t, "h200", "r0_baseline.nsys.sqlite")
		dst := filepath.Join(dir, "r0x4.sqlite")
		rows, err := tileNsys(src, dst, 4)
		if err != nil {
			t.Fatal(err)
		}
		if rows < 4*7700 {
			t.Fatalf("%d rows", rows)
		}
		sameFindings(t, analyzeFile(t, src), analyzeFile(t, dst), 4)
	})
}
