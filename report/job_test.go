package report

import (
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/job"
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

// One rank of a larger job read by itself says that a straggler needs the
// other ranks' traces, in every format; read as a rank of its job, or
// without a world size, it says nothing of the kind.
func TestAloneRankNote(t *testing.T) {
	rank, world, one := 0, 8, 1
	r := &audit.Analysis{File: "r0.json", Format: "chrome-trace", Verdict: "host-bound: x", Identity: audit.Identity{Rank: &rank, WorldSize: &world},
		Findings: []analyze.Finding{}, NotObservable: []analyze.NotObservable{}}
	const want = "rank 0 of 8, read alone: whether another rank holds this one back"
	for _, f := range []Format{Text, Markdown, HTML} {
		var b strings.Builder
		if err := ForAnalysis(r).Render(&b, f, Options{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s: no rank note", f)
		}
	}
	// Each file of a batch is read alone too.
	var batch strings.Builder
	if err := ForBatch(&job.Batch{Files: []*audit.Analysis{r, r}}).Render(&batch, Text, Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Count(batch.String(), want) != 2 {
		t.Error("a batch's files carry no rank note")
	}
	r.WorldSize = &one
	if aloneNote(r) != "" {
		t.Error("a world of one")
	}
	// An MPI program's process (no world size recorded) says which calls
	// wait for the ranks that are not here.
	r.Rank, r.WorldSize, r.MPICalls = nil, nil, []string{"MPI_Recv", "MPI_Send"}
	if n := aloneNote(r); !strings.HasPrefix(n, "one process of an MPI program, read alone: its MPI calls (MPI_Recv, MPI_Send) wait") {
		t.Errorf("MPI note %q", n)
	}
}
