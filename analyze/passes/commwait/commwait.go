// Package commwait defines the comm-wait analyzer: the part of exposed
// collective time a rank spends waiting for its peers to arrive rather than
// moving data.
//
// In one trace alone the wait is bounded from the collectives' sizes: a
// collective moving no more bytes than another of the same kind on the same
// group takes no longer than it, so the time beyond the fastest such run is
// waiting. Across ranks (analyze/job) it is measured exactly: each
// instance's latest arrival minus this rank's; the job reduce replaces this
// finding with that measure.
package commwait

import (
	"fmt"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/comm"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/internal/units"
)

// ID is the analyzer's ID, shared with the job reduce.
const ID = "comm-wait"

// Analyzer is comm-wait.
var Analyzer = &analyze.Analyzer{
	ID:    ID,
	Title: "collectives waiting for peers",
	Doc: `comm-wait measures the part of exposed collective time (no compute kernel
running) spent waiting for other ranks rather than moving data. Across the
ranks of a job, each collective instance's latest arrival minus this rank's
(instances matched by sequence number where recorded, else by their ends on
the job's clock, or by order on their communicator within the step that
launched them). In one trace alone, a lower
bound: a collective's run beyond the fastest run of the same collective on the
same group moving at least as many bytes. The fix is the slowest rank's own
cause.
Wasted time: that wait, within the comm bucket. Cost: O(c).`,
	Requires:   []*analyze.Analyzer{index.Analyzer, comm.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.05, Error: 0.20},
	Observable: observable,
	Run:        run,
}

// NoSizes is the not_observable reason of a trace whose collectives have no
// recorded sizes.
const NoSizes = "the trace does not record the collectives' message sizes (nsys exports, Kineto before 2024), so one trace cannot tell waiting from moving data: analyze all ranks' traces together (traceaudit analyze DIR or traceaudit job rank*.json) to measure waits from arrival times"

func observable(p *analyze.Pass) (bool, string) {
	cx := p.ResultOf[comm.Analyzer].(*comm.Index)
	if cx.SizesUnknown() {
		return false, NoSizes
	}
	return true, ""
}

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	cx := p.ResultOf[comm.Analyzer].(*comm.Index)
	var total int64
	var cands []analyze.Candidate
	for _, o := range cx.Steady() {
		if o.WaitNS == 0 {
			continue
		}
		total += o.WaitNS
		cands = append(cands, analyze.Candidate{Weight: o.WaitNS, Evidence: analyze.Evidence{StartNS: o.Start, EndNS: o.End, Track: o.Track},
			Describe: func() string {
				return fmt.Sprintf("%s; waited at least %s for peers: the fastest %s moving at least as many bytes took %s",
					o.Describe(), units.Dur(o.WaitNS), o.Name, units.Dur(o.FloorNS))
			}})
	}
	if total == 0 {
		return nil, nil
	}
	per, share := ix.PerStep(total)
	p.AddFinding(analyze.Finding{
		Title:    fmt.Sprintf("collectives wait for other ranks at least %s of each step (%s per step)", units.Pct(share), units.Dur(per)),
		WastedNS: per,
		Share:    share,
		Evidence: analyze.TopEvidence(cands, analyze.MaxEvidence),
		Detail:   map[string]float64{"wait_ns_per_step": float64(per), "cross_rank": 0},
		Bound:    "none: with the slowest rank fixed, no rank waits",
		Fix:      Fix,
		Code:     Code,
	})
	return nil, nil
}

// Fix and Code are the advice when the straggler is not known.
const (
	Fix = "This rank reaches its collectives before its peers and waits for them: a collective finishes only when the last rank arrives. " +
		"The fix is on the slowest rank: analyze all ranks' traces together (traceaudit analyze DIR) to name the straggler and its own cause " +
		"(a slower input pipeline, host work, more data). Give every rank the same configuration and the same amount of work per step."
	Code = `# same work on every rank: identical DataLoader settings, even shards
sampler = torch.utils.data.distributed.DistributedSampler(dataset, drop_last=True)
loader = torch.utils.data.DataLoader(dataset, batch_size=B, sampler=sampler,
                                     num_workers=W, pin_memory=True, persistent_workers=True)`
)
