package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline/timelinetext"
)

// TestDumpTimeline: `stats --dump-timeline` prints a trace's timeline as
// text that reads back into the same events, the start of an analyzer
// test case made from a real trace.
func TestDumpTimeline(t *testing.T) {
	name := "b0_pageable_sync.nsys.sqlite"
	out, errOut, code := run(t, "stats", "--dump-timeline", filepath.Join("fixtures", name))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"\nobserved gpu api os nvtx memkinds can-os can-nvtx\n", "\nmemcpy gpu0/stream7 ", " dir=HtoD src=pageable dst=device bytes="} {
		if !strings.Contains(out, want) {
			t.Errorf("dump lacks %q", want)
		}
	}
	back, err := timelinetext.Decode([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := ingest.Open(testfix.Project(name), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Events) != len(tl.Events) || len(back.Tracks) != len(tl.Tracks) || back.Observed != tl.Observed {
		t.Errorf("dump reads back as %d events on %d tracks (%+v), want %d on %d (%+v)",
			len(back.Events), len(back.Tracks), back.Observed, len(tl.Events), len(tl.Tracks), tl.Observed)
	}
}
