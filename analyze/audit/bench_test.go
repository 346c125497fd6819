package audit_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// BenchmarkRun times the analysis alone (the index and every analyzer, not
// reading) of the real H200 captures that make bench tiles, in both
// formats: the timeline is read once, outside the timer.
func BenchmarkRun(b *testing.B) {
	for _, name := range []string{"r0_baseline.nsys.sqlite", "r0_baseline.pt.trace.json.gz"} {
		b.Run(name, func(b *testing.B) {
			tl, err := ingest.Open(testfix.Shared(b, "h200", name), ingest.Options{})
			if err != nil {
				b.Fatal(err)
			}
			cfg := analyze.DefaultConfig()
			b.ReportAllocs()
			b.ReportMetric(float64(len(tl.Events)), "events")
			for b.Loop() {
				if _, err := audit.RunWith(tl, cfg, suite.Default); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
