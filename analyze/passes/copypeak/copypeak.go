// Package copypeak defines the copy-at-peak analyzer: host copies that
// already run near the pinned-memory bandwidth, where only moving fewer
// bytes helps.
package copypeak

import (
	"fmt"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/advice"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// Thresholds.
const (
	// AtPeak is the share of the pinned reference bandwidth from which a
	// copy counts as running at peak.
	AtPeak = 0.80
	// MinCopyShare is the share of the steady window copies must take for
	// the finding to matter.
	MinCopyShare = 0.05
)

// Analyzer is copy-at-peak.
var Analyzer = &analyze.Analyzer{
	ID:    "copy-at-peak",
	Title: "host copies already run at the pinned bandwidth",
	Doc: `copy-at-peak is informational: host copies of 1 MiB or more, taking at least
5 % of the steady window, already run at 80 % or more of the pinned reference
bandwidth (the trace's best pinned copy, else the GPU model's PCIe
generation, else --pinned-gbps). The bandwidth of a direction is its bytes
over the union of its copies' time, so copies that share the link on several
streams count together. Pinning and streams cannot make them faster: only
fewer bytes help (send uint8 or fp16 instead of fp32, decode on the GPU).
Wasted time: none. Cost: O(n log n).`,
	Requires: []*analyze.Analyzer{index.Analyzer},
	Observable: func(p *analyze.Pass) (bool, string) {
		if !p.Timeline.Observed.GPU {
			return false, "the trace has no GPU activity"
		}
		return true, ""
	},
	Run: run,
}

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	ref := ix.Pinned(p.Config.PinnedGBps)
	// Per direction: bytes over the union of the copies' time, so that
	// copies running at once on several streams count as one transfer
	// that shares the link.
	type dir struct {
		bytes int64
		spans []ivl.Interval
	}
	dirs := map[timeline.CopyKind]*dir{}
	var all []ivl.Interval
	var cands []analyze.Candidate
	for _, i := range ix.DeviceWork {
		e := &tl.Events[i]
		if !index.HostCopy(e) || e.Bytes < index.PinnedRefMinBytes || e.Dur() == 0 || !ix.InSteady(e.Start) {
			continue
		}
		d := dirs[e.Copy]
		if d == nil {
			d = &dir{}
			dirs[e.Copy] = d
		}
		iv := ivl.Interval{Start: e.Start, End: e.End}
		d.bytes += e.Bytes
		d.spans = append(d.spans, iv)
		all = append(all, iv)
		cands = append(cands, analyze.Candidate{Weight: e.Dur(), Evidence: analyze.Evidence{
			StartNS: e.Start, EndNS: e.End, Track: ix.Label(e.Track)}, Describe: func() string {
			return fmt.Sprintf("%s copy of %s at %s GB/s", e.Copy, units.Bytes(e.Bytes), units.GBps(e.Bytes, e.Dur()))
		}})
	}
	if len(all) == 0 || ix.SteadyNS == 0 {
		return nil, nil
	}
	copyShare := float64(ivl.Union(all).Len()) / float64(ix.SteadyNS)
	if copyShare < MinCopyShare {
		return nil, nil
	}
	var bw float64
	var peakDir timeline.CopyKind
	for _, k := range []timeline.CopyKind{timeline.CopyHtoD, timeline.CopyDtoH} {
		if d := dirs[k]; d != nil {
			if g := float64(d.bytes) / float64(max(ivl.Union(d.spans).Len(), 1)); g > bw {
				bw, peakDir = g, k
			}
		}
	}
	if bw < AtPeak*ref.GBps {
		return nil, nil
	}
	streams := map[string]bool{}
	for _, c := range cands {
		streams[c.Track] = true
	}
	p.AddFinding(analyze.Finding{
		Severity:         analyze.SeverityInfo,
		Title:            fmt.Sprintf("%s copies run at %.0f GB/s, %s of the %.0f GB/s pinned reference: only fewer bytes help", peakDir, bw, units.Pct(bw/ref.GBps), ref.GBps),
		EstimatedSpeedup: 1,
		Bound:            "none: no time is wasted",
		Evidence:         analyze.TopEvidence(cands, 3),
		Detail:           map[string]float64{"achieved_gbps": bw, "pinned_gbps": ref.GBps, "copy_share": copyShare, "streams": float64(len(streams))},
		Fix: fmt.Sprintf("Host copies take %s of the steady window (on %d stream(s)) and together already run near the link's limit (%s). Move fewer bytes: ",
			units.Pct(copyShare), len(streams), ref.Text) + advice.Of(ix).Pick(
			"send images as uint8 and normalise on the GPU, send fp16/bf16 instead of fp32, or decode and augment on the GPU.",
			"send inputs as uint8 or fp16/bf16 and convert on the GPU, or decode on the GPU.",
			"transfer compact types (uint8, half) and convert on the GPU, or keep data resident on the GPU between iterations."),
		Code: advice.Of(ix).Pick(`x = batch_uint8.to("cuda", non_blocking=True)          # 4x fewer bytes than float32
x = (x.float() / 255 - mean) / std                        # normalise on the GPU`, `x = inputs_uint8.to("cuda", non_blocking=True)         # 4x fewer bytes than float32
x = (x.float() / 255 - mean) / std                        # convert on the GPU`, `/* copy uint8 or __half data and convert in a kernel */`),
	})
	return nil, nil
}
