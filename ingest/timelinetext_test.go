package ingest_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline/timelinetext"
)

// TestTextRoundTrip writes each real trace of fixtures/ as text and reads
// it back: every event, track, device and observed flag must survive, so a
// dump of a real trace is a faithful test case.
func TestTextRoundTrip(t *testing.T) {
	paths, _ := filepath.Glob(testfix.Project("*.nsys.sqlite"))
	gz, _ := filepath.Glob(testfix.Project("*.json.gz"))
	ddp, _ := filepath.Glob(testfix.Project("h200-ddp/*"))
	paths = append(append(paths, gz...), ddp...)
	if len(paths) < 4 {
		t.Fatalf("found %d fixtures under fixtures/", len(paths))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tl, err := ingest.Open(path, ingest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			if err := timelinetext.Encode(&text, tl); err != nil {
				t.Fatal(err)
			}
			back, err := timelinetext.Decode(text.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if back.Dist != tl.Dist || fmt.Sprint(back.Collectives) != fmt.Sprint(tl.Collectives) {
				t.Errorf("job %+v and %d collectives, want %+v and %d", back.Dist, len(back.Collectives), tl.Dist, len(tl.Collectives))
			}
			if back.Source != tl.Source || back.Observed != tl.Observed || fmt.Sprint(back.Devices) != fmt.Sprint(tl.Devices) {
				t.Errorf("header %+v %+v %+v, want %+v %+v %+v", back.Source, back.Observed, back.Devices, tl.Source, tl.Observed, tl.Devices)
			}
			if len(back.Tracks) != len(tl.Tracks) || len(back.Events) != len(tl.Events) {
				t.Fatalf("%d tracks, %d events; want %d, %d", len(back.Tracks), len(back.Events), len(tl.Tracks), len(tl.Events))
			}
			for i := range tl.Tracks {
				a, b := tl.Tracks[i], back.Tracks[i]
				if a.Label() != b.Label() || len(a.Events) != len(b.Events) {
					t.Fatalf("track %d: %s (%d events), want %s (%d)", i, b.Label(), len(b.Events), a.Label(), len(a.Events))
				}
			}
			bad := 0
			for i := range tl.Events {
				a, b := tl.Events[i], back.Events[i]
				if tl.Name(a.Name) != back.Name(b.Name) {
					t.Errorf("event %d: name %q, want %q", i, back.Name(b.Name), tl.Name(a.Name))
					bad++
				}
				a.Name, b.Name = 0, 0
				if a != b {
					t.Errorf("event %d:\n got %+v\nwant %+v", i, b, a)
					bad++
				}
				if bad > 5 {
					t.FailNow()
				}
			}
		})
	}
}
