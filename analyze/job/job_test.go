package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/timeline"
	tt "github.com/traceaudit/traceaudit/timeline/timelinetest"
)

const ms, us = tt.Ms, tt.Us

// rank builds one rank of a 2-rank DDP-like job on one clock shifted by
// offset: 5 ProfilerSteps of 100 ms; each step waits late(step) in
// DataLoader __next__, computes 30 ms, then all-reduces 64 MB. Every rank's
// all-reduce ends together, 2 ms after the last rank arrives.
func rank(t *testing.T, r int, late func(r, step int) int64, offset int64) *audit.Analysis {
	t.Helper()
	return rankSteps(t, r, late, offset, "ProfilerStep#%d", 0)
}

// rankSteps is rank with steps named by format (with the step number), from
// step first on: a trace that starts later holds fewer steps.
func rankSteps(t *testing.T, r int, late func(r, step int) int64, offset int64, format string, first int) *audit.Analysis {
	t.Helper()
	b := tt.New()
	b.B.Dist = timeline.Distributed{Known: true, Rank: r, WorldSize: 2, Backend: "nccl"}
	h := b.Thread(int64(100+r), int64(100+r), "python")
	s, nccl := b.Stream(int64(r), 7), b.Stream(int64(r), 20)
	for step := first; step < 5; step++ {
		t0 := int64(step)*100*ms + offset
		name := format
		if strings.Contains(format, "%d") {
			name = fmt.Sprintf(format, step+3)
		}
		b.Range(h, name, t0, t0+100*ms)
		d := late(r, step)
		if d > 0 {
			b.Range(h, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0, t0+d)
		}
		b.Launch(h, s, "gemm", t0+d, t0+d+5*us, t0+d+10*us, t0+d+30*ms)
		last := max(late(0, step), late(1, step)) + 30*ms + 20*us
		b.Collective(h, nccl, timeline.Collective{Op: "allreduce", Bytes: 64 << 20, Group: "0", GroupSize: 2, DType: "Float", Seq: -1},
			t0+d+30*ms, t0+d+30*ms+5*us, t0+d+30*ms+20*us, t0+last+2*ms)
	}
	rep, err := audit.RunWith(b.Build(t), analyze.DefaultConfig(), suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	rep.File = fmt.Sprintf("rank%d.json", r)
	rep.Index, rep.Timeline = nil, nil
	return rep
}

func find(fs []analyze.Finding, id string) *analyze.Finding {
	for i := range fs {
		if fs[i].ID == id {
			return &fs[i]
		}
	}
	return nil
}

// Rank 1 loads each batch for 50 ms on its main thread; rank 0 does not
// and waits 50 ms in every all-reduce.
func TestStraggler(t *testing.T) {
	late := func(r, _ int) int64 { return int64(r) * 50 * ms }
	j, err := Reduce([]*audit.Analysis{rank(t, 1, late, 0), rank(t, 0, late, 0)}, Options{InfoFloor: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if *j.Ranks[0].Rank != 0 || *j.Ranks[1].Rank != 1 || j.Job.Ranks != 2 || *j.Job.WorldSize != 2 || j.Job.Clock != "shared" || j.Job.MatchedCollectives != 5 {
		t.Fatalf("job %+v", j.Job)
	}
	s := j.Job.Straggler
	if s == nil || s.Rank != 1 || s.Device != 1 || s.PID != 101 || s.File != "rank1.json" || s.Cause != "dataloader-wait" {
		t.Fatalf("straggler %+v", s)
	}
	// Rank 0 waits from its arrival to rank 1's: 50 ms, exposed.
	if s.WaitNSPerStep != 50*ms || j.Ranks[0].WaitNSPerStep != 50*ms || j.Ranks[1].WaitNSPerStep != 0 {
		t.Errorf("waits: straggler %d, rank 0 %d, rank 1 %d", s.WaitNSPerStep, j.Ranks[0].WaitNSPerStep, j.Ranks[1].WaitNSPerStep)
	}
	r0 := j.Ranks[0]
	if !strings.HasPrefix(r0.Verdict, "communication-bound") {
		t.Errorf("rank 0 verdict %q", r0.Verdict)
	}
	cw := find(r0.Findings, "comm-wait")
	if cw == nil || cw.WastedNS != 50*ms || cw.Severity != analyze.SeverityError || cw.Detail["cross_rank"] != 1 || cw.Detail["waited_for_rank"] != 1 {
		t.Fatalf("rank 0 comm-wait %+v", cw)
	}
	if !strings.Contains(cw.Fix, "waits for rank 1 (GPU 1)") || !strings.Contains(cw.Fix, "dataloader-wait") || !strings.Contains(cw.Code, "num_workers") {
		t.Errorf("comm-wait fix %q / %q", cw.Fix, cw.Code)
	}
	if !strings.Contains(cw.Evidence[0].What, "allreduce of 67.1 MB (Float) in ProfilerStep#") || !strings.Contains(cw.Evidence[0].What, "waited 50.0 ms for rank 1") {
		t.Errorf("comm-wait evidence %+v", cw.Evidence[0])
	}
	if find(j.Ranks[1].Findings, "comm-wait") != nil {
		t.Errorf("the straggler waits for no one: %+v", j.Ranks[1].Findings)
	}
	if ce := find(r0.Findings, "comm-exposed"); ce == nil || !strings.Contains(ce.Fix, "waiting for other ranks") {
		t.Errorf("comm-exposed %+v", ce)
	}
	if len(j.Job.Findings) != 1 || j.Job.Findings[0].ID != StragglerID || j.Job.Findings[0].Severity != analyze.SeverityError ||
		!strings.Contains(j.Job.Findings[0].Fix, "Fix rank 1's own dataloader-wait") || j.Job.Findings[0].VerifyWith[0] != "prefetch-workers" {
		t.Errorf("job findings %+v", j.Job.Findings)
	}
	// The others gain no more than rank 1's own fix saves it.
	sf, dw := j.Job.Findings[0], find(j.Ranks[1].Findings, "dataloader-wait")
	if dw == nil || sf.EstimatedSpeedup > dw.EstimatedSpeedup+1e-9 || sf.EstimatedSpeedup > analyze.Speedup(sf.Share)+1e-9 || sf.EstimatedSpeedup < 1 {
		t.Errorf("straggler estimate %.3f, its cause's %+v, share %.3f", sf.EstimatedSpeedup, dw, sf.Share)
	}
	if ev := j.Job.Findings[0].Evidence; len(ev) == 0 || !strings.Contains(ev[0].What, "rank 1 arrived 50.0 ms after rank 0") {
		t.Errorf("straggler evidence %+v", ev)
	}
	if j.Job.Verdict != j.Ranks[1].Verdict || !strings.HasPrefix(j.Job.Verdict, "input-bound") {
		t.Errorf("job verdict %q", j.Job.Verdict)
	}
	if len(j.Job.StepNSByRank) != 2 || j.Job.StepNSByRank[0] != 100*ms {
		t.Errorf("step by rank %v", j.Job.StepNSByRank)
	}
}

// Each rank is late in turn: they wait for each other, nobody holds the
// job back; one very slow step on one rank names no one either.
func TestJitterNamesNoStraggler(t *testing.T) {
	for name, late := range map[string]func(r, step int) int64{
		"alternating": func(r, step int) int64 {
			if step%2 == r {
				return 20 * ms
			}
			return 0
		},
		"one slow step": func(r, step int) int64 {
			if r == 1 && step == 2 {
				return 60 * ms
			}
			return 0
		},
	} {
		t.Run(name, func(t *testing.T) {
			j, err := Reduce([]*audit.Analysis{rank(t, 0, late, 0), rank(t, 1, late, 0)}, Options{InfoFloor: 0.01})
			if err != nil {
				t.Fatal(err)
			}
			if j.Job.Straggler != nil || len(j.Job.Findings) != 0 {
				t.Fatalf("straggler %+v", j.Job.Straggler)
			}
			if cw := find(j.Ranks[0].Findings, "comm-wait"); cw != nil && !strings.Contains(cw.Fix, "no single rank holds the others back") {
				t.Errorf("comm-wait fix %q", cw.Fix)
			}
		})
	}
}

// Ranks on clocks 5 s apart are aligned by the ends of their all-reduces:
// the same waits as on one clock.
func TestClockAlignment(t *testing.T) {
	late := func(r, _ int) int64 { return int64(r) * 50 * ms }
	j, err := Reduce([]*audit.Analysis{rank(t, 0, late, 0), rank(t, 1, late, 5_000*ms)}, Options{InfoFloor: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if j.Job.Clock != "aligned" || j.Ranks[1].ClockOffsetNS != -5_000*ms || j.Ranks[0].ClockOffsetNS != 0 {
		t.Fatalf("clock %s, offsets %d %d", j.Job.Clock, j.Ranks[0].ClockOffsetNS, j.Ranks[1].ClockOffsetNS)
	}
	if s := j.Job.Straggler; s == nil || s.Rank != 1 || s.WaitNSPerStep != 50*ms || j.Ranks[0].WaitNSPerStep != 50*ms {
		t.Fatalf("straggler %+v, rank 0 wait %d", s, j.Ranks[0].WaitNSPerStep)
	}
	// Collectives are on the job's clock; evidence on the rank's own.
	if c := j.Ranks[1].Collectives[0]; c.ArrivalNS != 50*ms+30*ms+20*us {
		t.Errorf("rank 1 arrival on the job's clock: %d", c.ArrivalNS)
	}
	if ev := j.Job.Findings[0].Evidence[0]; ev.EndNS < 5_000*ms {
		t.Errorf("straggler evidence not on rank 1's clock: %+v", ev)
	}
}

// The reduce reads only what the analyze JSON holds: reducing decoded
// per-rank JSON gives the same document.
func TestReduceOverJSON(t *testing.T) {
	late := func(r, _ int) int64 { return int64(r) * 50 * ms }
	direct, err := Reduce([]*audit.Analysis{rank(t, 0, late, 0), rank(t, 1, late, 0)}, Options{InfoFloor: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	var decoded []*audit.Analysis
	for _, r := range []*audit.Analysis{rank(t, 0, late, 0), rank(t, 1, late, 0)} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var d audit.Analysis
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		decoded = append(decoded, &d)
	}
	viaJSON, err := Reduce(decoded, Options{InfoFloor: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(direct)
	b, _ := json.Marshal(viaJSON)
	if !bytes.Equal(a, b) {
		t.Errorf("reduce over JSON differs:\n%s\n%s", a, b)
	}
}

func TestDuplicateRanks(t *testing.T) {
	late := func(int, int) int64 { return 0 }
	_, err := Reduce([]*audit.Analysis{rank(t, 0, late, 0), rank(t, 0, late, 0)}, Options{})
	if !errors.Is(err, ErrNotJob) || !strings.Contains(err.Error(), "both rank 0") {
		t.Errorf("err %v", err)
	}
	if _, err := Reduce(nil, Options{}); !errors.Is(err, ErrNotJob) {
		t.Errorf("no ranks: %v", err)
	}
}

// A broadcast's root leaves before the others arrive: no wait beyond its
// own run, and never used to align clocks.
func TestBroadcastRootDoesNotWait(t *testing.T) {
	if symmetric("broadcast") || !symmetric("_allgather_base") || !symmetric("allreduce") {
		t.Error("symmetric")
	}
}

// A straggler's cause is its loudest finding that is not an effect of
// waiting; gpu-idle only when nothing else explains half of it.
func TestCause(t *testing.T) {
	r := &audit.Analysis{Verdict: "compute-bound: kernels run 90 % of each step"}
	if id, f := Cause(r); id != "compute-bound" || f != nil {
		t.Errorf("no findings: %s", id)
	}
	r.Findings = []analyze.Finding{{ID: "gpu-idle", WastedNS: 100}, {ID: "comm-exposed", WastedNS: 90}, {ID: "launch-bound", WastedNS: 10}}
	if id, _ := Cause(r); id != "gpu-idle" {
		t.Errorf("host work without a name: %s", id)
	}
	r.Findings = append(r.Findings, analyze.Finding{ID: "dataloader-wait", WastedNS: 60})
	if id, f := Cause(r); id != "dataloader-wait" || f.WastedNS != 60 {
		t.Errorf("dataloader-wait explains the idle time: %s", id)
	}
}

// Steps that are not numbered (NVTX "step" ranges) and traces that start
// at different steps: matching by order on the communicator would pair
// different instances; on one clock their ends pair them right.
func TestMatchByEnds(t *testing.T) {
	late := func(r, _ int) int64 { return int64(r) * 50 * ms }
	j, err := Reduce([]*audit.Analysis{rankSteps(t, 0, late, 0, "step", 1), rankSteps(t, 1, late, 0, "step", 0)}, Options{InfoFloor: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if j.Job.MatchedCollectives != 4 || j.Job.Clock != "shared" {
		t.Fatalf("matched %d, clock %s", j.Job.MatchedCollectives, j.Job.Clock)
	}
	if s := j.Job.Straggler; s == nil || s.Rank != 1 || j.Ranks[0].WaitNSPerStep != 50*ms || j.Ranks[1].WaitNSPerStep != 0 {
		t.Fatalf("straggler %+v, waits %d %d", s, j.Ranks[0].WaitNSPerStep, j.Ranks[1].WaitNSPerStep)
	}
	// And on clocks 3 s apart. Identical steps without numbers leave the
	// offset known up to whole steps (the ends of every step align), which
	// changes nothing in the waits.
	j, err = Reduce([]*audit.Analysis{rankSteps(t, 0, late, 0, "step", 1), rankSteps(t, 1, late, 3_000*ms, "step", 0)}, Options{InfoFloor: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if off := j.Ranks[1].ClockOffsetNS; j.Job.Clock != "aligned" || (off+3_000*ms)%(100*ms) != 0 || j.Job.MatchedCollectives != 4 || j.Ranks[0].WaitNSPerStep != 50*ms {
		t.Fatalf("clock %s offset %d matched %d wait %d", j.Job.Clock, j.Ranks[1].ClockOffsetNS, j.Job.MatchedCollectives, j.Ranks[0].WaitNSPerStep)
	}
}

// The straggler finding lists its rank's other causes at warning or above,
// never the cause itself, gpu-idle or the effects of waiting.
func TestOtherCauses(t *testing.T) {
	r := &audit.Analysis{Findings: []analyze.Finding{
		{ID: "launch-bound", WastedNS: 113 * ms, EstimatedSpeedup: 2.18, Severity: analyze.SeverityError},
		{ID: "gpu-idle", WastedNS: 150 * ms, EstimatedSpeedup: 5.8, Severity: analyze.SeverityError},
		{ID: "comm-exposed", WastedNS: 20 * ms, EstimatedSpeedup: 1.1, Severity: analyze.SeverityWarning},
		{ID: "comm-small", WastedNS: 30800 * us, EstimatedSpeedup: 1.18, Severity: analyze.SeverityWarning},
		{ID: "sync-api", WastedNS: 2 * ms, EstimatedSpeedup: 1.01, Severity: analyze.SeverityInfo},
	}}
	id, f := Cause(r)
	if id != "launch-bound" {
		t.Fatalf("cause %s", id)
	}
	if got, want := otherCauses(r, f), "comm-small (30.8 ms per step, est. 1.18x)"; got != want {
		t.Errorf("other causes %q, want %q", got, want)
	}
}
