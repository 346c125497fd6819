package report

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
)

// A rank's row shows its own cause as the straggler finding names it, or
// the time it waits for the others when that is larger.
func TestTopFinding(t *testing.T) {
	const ms = 1_000_000
	f := func(id string, wasted int64) analyze.Finding {
		return analyze.Finding{ID: id, WastedNS: wasted, Share: float64(wasted) / (100 * ms)}
	}
	for _, c := range []struct {
		name string
		fs   []analyze.Finding
		want string
	}{
		{"nothing", nil, "-"},
		{"gpu-idle unexplained beats a smaller wait", []analyze.Finding{f("gpu-idle", 40*ms), f("comm-exposed", 25*ms), f("dataloader-wait", 10*ms)}, "gpu-idle 40.0 ms (40 %)"},
		{"a named cause explains gpu-idle", []analyze.Finding{f("gpu-idle", 40*ms), f("dataloader-wait", 30*ms)}, "dataloader-wait 30.0 ms (30 %)"},
		{"a waiting rank", []analyze.Finding{f("comm-exposed", 58*ms), f("comm-wait", 57*ms), f("launch-bound", 3*ms)}, "comm-exposed 58.0 ms (58 %)"},
		{"a fact is not shown", []analyze.Finding{f("copy-at-peak", 50*ms), f("sync-memcpy", 5*ms)}, "sync-memcpy 5.00 ms (5.0 %)"},
	} {
		if got := topFinding(&audit.Analysis{Findings: c.fs}); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
