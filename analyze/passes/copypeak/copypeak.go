// Package copypeak defines the copy-at-peak analyzer: host copies that
// already run near the pinned-memory bandwidth, where only moving fewer
// bytes helps.
package copypeak

import (
	"fmt"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/internal/units"
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
bandwidth (the trace's best pinned copy, or --pinned-gbps when that is
higher). Pinning and streams cannot make them faster: only fewer bytes help
(send uint8 or fp16 instead of fp32, decode on the GPU, crop on the host).
Wasted time: none. Cost: O(n).`,
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
	ref, _ := ix.PinnedReference(p.Config.PinnedGBps)
	ref = max(ref, p.Config.PinnedGBps)
	var bytes, ns int64
	var spans []ivl.Interval
	var cands []analyze.Candidate
	for i := range tl.Events {
		e := &tl.Events[i]
		if !index.HostCopy(e) || e.Bytes < index.PinnedRefMinBytes || e.Dur() == 0 || !ix.OnDevices(e) || !ix.InSteady(e.Start) {
			continue
		}
		bytes += e.Bytes
		ns += e.Dur()
		spans = append(spans, ivl.Interval{Start: e.Start, End: e.End})
		cands = append(cands, analyze.Candidate{Weight: e.Dur(), Evidence: analyze.Evidence{
			StartNS: e.Start, EndNS: e.End, Track: ix.Label(e.Track)}, Describe: func() string {
			return fmt.Sprintf("%s copy of %s at %s GB/s", e.Copy, units.Bytes(e.Bytes), units.GBps(e.Bytes, e.Dur()))
		}})
	}
	if ns == 0 || ix.SteadyNS == 0 {
		return nil, nil
	}
	bw := float64(bytes) / float64(ns)
	copyShare := float64(ivl.Union(spans).Len()) / float64(ix.SteadyNS)
	if bw < AtPeak*ref || copyShare < MinCopyShare {
		return nil, nil
	}
	p.Report(analyze.Finding{
		Severity: analyze.SeverityInfo,
		Title:    fmt.Sprintf("copies run at %.0f GB/s, %s of the %.0f GB/s pinned reference: only fewer bytes help", bw, units.Pct(bw/ref), ref),
		Evidence: analyze.TopEvidence(cands, 3),
		Detail:   map[string]float64{"achieved_gbps": bw, "pinned_gbps": ref, "copy_share": copyShare},
		Fix: fmt.Sprintf("Host copies take %s of the steady window and already run near the PCIe limit. Move fewer bytes: "+
			"send images as uint8 and normalise on the GPU, send fp16/bf16 instead of fp32, or decode and augment on the GPU.", units.Pct(copyShare)),
		Code: `x = batch_uint8.to("cuda", non_blocking=True)          # 4x fewer bytes than float32
x = (x.float() / 255 - mean) / std                        # normalise on the GPU`,
	})
	return nil, nil
}
