// Package commsmall defines the comm-small analyzer: many small
// collectives per step, each paying a host-side issue cost (the framework's
// collective call, NCCL's enqueue, the kernel launch) that a few larger
// collectives moving the same bytes would pay a few times only.
package commsmall

import (
	"fmt"
	"slices"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/comm"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/passes/commexposed"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// ID is the analyzer's ID.
const ID = "comm-small"

// TargetBytes is the message size the fix aims at: DDP's default gradient
// bucket (bucket_cap_mb=25, in MiB).
const TargetBytes = 25 << 20

// target names TargetBytes in reports.
const target = "25 MiB"

// Analyzer is comm-small.
var Analyzer = &analyze.Analyzer{
	ID:    ID,
	Title: "many small collectives, each paying a host-side issue cost",
	Doc: `comm-small applies when steady steps run at least 20 collectives each with
a median message of at most 4 MiB (DDP with a small bucket_cap_mb,
per-parameter all-reduces, unwrapped FSDP). Each collective costs the host
an issue: the framework's collective call (c10d::allreduce_,
record_param_comms), NCCL's enqueue (its NVTX range), the kernel launch.
It measures that host time per step (the outermost such ranges around each
collective's launch call, else the launch call itself) and counts what
the same bytes in 25 MiB messages (DDP's default bucket) would not pay:
the issue time times (n - n') / n, with n' = bytes per step / 25 MiB
rounded up. That saving shortens the step only while the host is on the
critical path, so it is capped by the step's GPU-idle time (the other
bucket).
Wasted time: that saving. Cost: O(c log r) over the collectives and the
issuing threads' ranges. Needs message sizes (Kineto 2024 and later).`,
	Requires:   []*analyze.Analyzer{index.Analyzer, comm.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.05, Error: 0.20},
	VerifyWith: []string{"fewer-collectives"},
	Observable: observable,
	Run:        run,
}

// NoSizes is the not_observable reason of a trace with collectives whose
// message sizes were not recorded.
const NoSizes = "the trace does not record the collectives' message sizes (nsys exports, Kineto before 2024), so it cannot tell how many fewer, larger collectives would move the same bytes: capture the ranks with torch.profiler (PyTorch 2.4 or later records each collective's size)"

func observable(p *analyze.Pass) (bool, string) {
	cx := p.ResultOf[comm.Analyzer].(*comm.Index)
	if cx.SizesUnknown() {
		return false, NoSizes
	}
	if !p.Timeline.Observed.APICalls {
		return false, "the trace has no host CUDA API calls, so collectives cannot be traced back to the host that issued them"
	}
	return true, ""
}

// Detail is the typed form of a comm-small finding's detail map.
type Detail struct {
	// CollectivesPerStep is the number of collectives per steady step and
	// MedianBytes their median message size.
	CollectivesPerStep int   `detail:"collectives_per_step"`
	MedianBytes        int64 `detail:"median_bytes"`
	// BytesPerStep is what they move per step; TargetPerStep how many
	// TargetBytes messages would move it.
	BytesPerStep  int64 `detail:"bytes_per_step"`
	TargetPerStep int   `detail:"target_per_step"`
	// IssueNSPerStep is the host's issue time per step and IssueNS its
	// median per collective.
	IssueNSPerStep int64 `detail:"issue_ns_per_step"`
	IssueNS        int64 `detail:"issue_ns"`
}

// DetailOf reads f's detail; ok is false when a key is missing.
func DetailOf(f *analyze.Finding) (d Detail, ok bool) { return d, analyze.DecodeDetail(f, &d) }

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	cx := p.ResultOf[comm.Analyzer].(*comm.Index)
	tl := p.Timeline
	ops := cx.Steady()
	steps := max(len(ix.Steady), 1)
	n := len(ops) / steps
	if n < commexposed.ManyPerStep {
		return nil, nil
	}
	var bytes int64
	sizes := make([]int64, 0, len(ops))
	for _, o := range ops {
		bytes += o.Bytes
		if o.Bytes > 0 {
			sizes = append(sizes, o.Bytes)
		}
	}
	if len(sizes) == 0 {
		return nil, nil
	}
	slices.Sort(sizes)
	median := sizes[(len(sizes)-1)/2]
	if median > commexposed.SmallBytes {
		return nil, nil
	}
	perStepBytes := bytes / int64(steps)
	fewer := max(int((perStepBytes+TargetBytes-1)/TargetBytes), 1)
	if fewer >= n {
		return nil, nil
	}

	spans, per := comm.IssueTime(tl, ops)
	if len(per) == 0 {
		return nil, nil
	}
	var issueNS int64
	for _, sp := range spans {
		issueNS += ix.SteadyCovered(sp)
	}
	issuePer := issueNS / int64(steps)
	saved := issuePer * int64(n-fewer) / int64(n)
	idle, _ := ix.PerStep(ix.SteadyCovered(ix.Buckets[index.Other]))
	wasted := min(saved, idle)
	if wasted <= 0 {
		return nil, nil
	}
	_, share := ix.PerStep(wasted * int64(steps))
	slices.Sort(per)
	f := analyze.Finding{
		Title: fmt.Sprintf("many small collectives: %d per step, median %s; issuing them costs the host %s per step, %s of it beyond %d collectives of %s",
			n, units.Bytes(median), units.Dur(issuePer), units.Dur(saved), fewer, target),
		WastedNS:         wasted,
		Share:            share,
		EstimatedSpeedup: ix.Speedup(wasted, 0, share),
		Bound: fmt.Sprintf("%d collectives of %s still cost %s of issue per step; the saving is capped by the GPU's idle time (%s per step)",
			fewer, target, units.Dur(issuePer-saved), units.Dur(idle)),
		Detail: analyze.DetailMap(Detail{CollectivesPerStep: n, MedianBytes: median, BytesPerStep: perStepBytes,
			TargetPerStep: fewer, IssueNSPerStep: issuePer, IssueNS: per[(len(per)-1)/2]}),
		Fix: fmt.Sprintf("%d collectives per step of median %s: each one costs the host about %s to issue (the framework's collective call, "+
			"NCCL's enqueue, the launch), while the GPU waits. The same %s per step in %d messages of %s pays that %d times. "+
			"Raise DDP's bucket_cap_mb back to the default 25 (or higher), or coalesce small tensors (FSDP: wrap larger modules; "+
			"torch.distributed: all_reduce_coalesced or one flattened buffer).",
			n, units.Bytes(median), units.Dur(per[(len(per)-1)/2]), units.Bytes(perStepBytes), fewer, target, fewer),
		Code: `model = torch.nn.parallel.DistributedDataParallel(
    model, device_ids=[local_rank],
    bucket_cap_mb=25,                 # the default; 1 MB buckets issue 25x the all-reduces
    gradient_as_bucket_view=True,     # no copy between gradients and buckets
)`,
	}
	f.Evidence = evidence(ix, tl, ops)
	p.AddFinding(f)
	return nil, nil
}

// evidence is the steps with the most collectives.
func evidence(ix *index.Index, tl *timeline.Timeline, ops []*comm.Op) []analyze.Evidence {
	count := map[int]int{}
	for _, o := range ops {
		count[o.Step]++
	}
	var cands []analyze.Candidate
	for s, c := range count {
		if s < 0 || s >= len(ix.Steps) {
			continue
		}
		st := ix.Steps[s]
		c := c
		cands = append(cands, analyze.Candidate{Weight: int64(c), Evidence: analyze.Evidence{StartNS: st.Start, EndNS: st.End, Track: stepTrack(ix)},
			Describe: func() string { return fmt.Sprintf("%d collectives launched in %s", c, st.Name) }})
	}
	return analyze.TopEvidence(cands, analyze.MaxEvidence)
}

func stepTrack(ix *index.Index) string {
	if ix.HasMain {
		return ix.Label(ix.Main)
	}
	return ""
}
