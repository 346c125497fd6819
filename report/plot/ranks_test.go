package plot

import (
	"slices"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/job"
)

// twoRanks is a job of two ranks: rank 0 waits 50 ms of its 60 ms comm
// bucket for rank 1, which loads data; rank 1 is the straggler.
func twoRanks() *job.Analysis {
	rank := func(r int, b index.Breakdown, wait int64) *job.Rank {
		n, dev, pid := r, int64(r), int64(100+r)
		rep := &audit.Analysis{Identity: audit.Identity{Rank: &n, Device: &dev, PID: &pid}}
		rep.Steps.BreakdownNS = b
		rep.Steps.MedianNS = b.Total()
		return &job.Rank{Analysis: rep, WaitNSPerStep: wait}
	}
	return &job.Analysis{
		Job: job.Summary{Ranks: 2, Verdict: "input-bound: 60 % of each step waits for data",
			Straggler: &job.Straggler{Rank: 1, Device: 1, PID: 101, Cause: "dataloader-wait", WaitNSPerStep: 50 * ms}},
		Ranks: []*job.Rank{
			rank(0, index.Breakdown{index.Compute: 30 * ms, index.Comm: 60 * ms, index.Other: 10 * ms}, 50*ms),
			rank(1, index.Breakdown{index.Compute: 30 * ms, index.Comm: 2 * ms, index.Data: 60 * ms, index.Other: 8 * ms}, 0),
		},
	}
}

func TestRanksBarsAndStraggler(t *testing.T) {
	j := twoRanks()
	f, err := NewRanks(j)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "ranks" || f.Plot.Title.Text != "Where each rank's step goes (straggler: rank 1)" || !strings.Contains(f.Caption, "the others wait 50.0 ms per step for it (its own cause: dataloader-wait)") {
		t.Errorf("title %q, caption %q", f.Plot.Title.Text, f.Caption)
	}
	bs := layersOf[*boxes](f)
	bars, outline := bs[0], bs[1]
	got := map[string]map[string]float64{}
	for _, b := range bars.Boxes {
		if got[b.Group] == nil {
			got[b.Group] = map[string]float64{}
		}
		got[b.Group][b.Label] += b.Y1 - b.Y0
		if b.Hatch != (b.Label == "waiting for other ranks") {
			t.Errorf("%s %s: hatched %v", b.Group, b.Label, b.Hatch)
		}
	}
	near(t, "rank 0 waiting", got["rank 0"]["waiting for other ranks"], 50, 1e-9)
	near(t, "rank 0 comm besides", got["rank 0"]["exposed comm"], 10, 1e-9)
	near(t, "rank 0 compute", got["rank 0"]["compute"], 30, 1e-9)
	near(t, "rank 1 data", got["rank 1"]["data wait"], 60, 1e-9)
	near(t, "rank 1 comm", got["rank 1"]["exposed comm"], 2, 1e-9)
	if len(outline.Boxes) != 1 || outline.Boxes[0].X0 > 1 || outline.Boxes[0].X1 < 1 || outline.Line.Color != colError {
		t.Errorf("straggler outline %+v", outline.Boxes)
	}
	want := []string{"other", "data wait", "exposed comm", "compute", "waiting for other ranks (hatched)", "the straggler"}
	if l := legendLabels(f); !slices.Equal(l, want) {
		t.Errorf("legend %q, want %q", l, want)
	}
	// Without a straggler: no outline, and the caption says so.
	j.Job.Straggler = nil
	f, _ = NewRanks(j)
	if bs := layersOf[*boxes](f); len(bs[1].Boxes) != 0 || !strings.Contains(f.Caption, "No rank holds the others back") {
		t.Errorf("no straggler: %+v %q", bs[1].Boxes, f.Caption)
	}
}
