package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/ingest/chrome"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/replay"
)

func chromePlan(t *testing.T) *replay.Plan {
	t.Helper()
	tl, err := ingest.Open(testfix.Project("r0_baseline.pt.trace.json.gz"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := audit.RunWith(tl, nil, suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	p, err := replay.Build(r, suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProfilerCostAuto: auto measures with --python for a Chrome trace and
// takes the measured cost out, says what it measures, warns and leaves the
// plan when the probe fails, and measures nothing for an nsys trace.
func TestProfilerCostAuto(t *testing.T) {
	var warned, said []string
	warn := func(s string) { warned = append(warned, s) }
	status := func(s string) { said = append(said, s) }

	c := profilerCost{mode: "auto", python: script(t, `echo '{"torch": "2.11.0", "events": 100, "event_ns_rounds": [1500, 1500, 1500]}'`)}
	p := chromePlan(t)
	c.apply(context.Background(), p, chrome.Format, warn, status)
	if pr := p.Profiler; pr == nil || pr.EventNS != 1500 || !strings.Contains(pr.Source, "measured here with torch 2.11.0, the median of 3 processes") {
		t.Fatalf("profiler %+v", p.Profiler)
	}
	if len(warned) != 0 || len(said) != 1 || !strings.Contains(said[0], "measuring torch.profiler's cost") {
		t.Errorf("warned %q, said %q", warned, said)
	}

	// Processes that measure different costs: the median is taken out,
	// and the plan keeps what the least and the most would have.
	count := filepath.Join(t.TempDir(), "n")
	c.python = script(t, `n=$(cat `+count+` 2>/dev/null || echo 0); n=$((n+1)); echo $n > `+count+`; echo "{\"torch\": \"2.11.0\", \"events\": 100, \"event_ns_rounds\": [$((n*700))]}"`)
	r := chromePlan(t)
	c.apply(context.Background(), r, chrome.Format, warn, status)
	if pr := r.Profiler; pr == nil || pr.EventNS != 1400 || pr.EventNSMin != 700 || pr.EventNSMax != 2100 ||
		!(pr.RemovedMinNS < pr.RemovedNS && pr.RemovedNS < pr.RemovedMaxNS) {
		t.Fatalf("profiler over processes at 0.7, 1.4, 2.1 µs: %+v", r.Profiler)
	}

	c.python = script(t, "echo 'ModuleNotFoundError: No module named torch' >&2; exit 1")
	q := chromePlan(t)
	data := q.Step.DataNS
	c.apply(context.Background(), q, chrome.Format, warn, status)
	if q.Profiler != nil || q.Step.DataNS != data || len(warned) != 1 || !strings.Contains(warned[0], "No module named torch") {
		t.Errorf("a failed probe: profiler %+v, warned %q", q.Profiler, warned)
	}

	n := chromePlan(t)
	c.apply(context.Background(), n, "nsys-sqlite", warn, status)
	if n.Profiler != nil || len(said) != 3 {
		t.Errorf("an nsys trace was measured: %+v, said %q", n.Profiler, said)
	}
}
