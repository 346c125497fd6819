package index

import (
	"fmt"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
)

// pcieGen lists GPU names and the pinned host-to-device bandwidth their
// host link reaches, in GB/s: PCIe Gen3 x16 about 12, Gen4 x16 about 24,
// Gen5 x16 about 50 (design.md). A series ("RTX 30") matches any model
// that starts with it; a model ("A10") only a whole model name, so that
// A10 does not match A100. The first match wins.
var pcieGen = []struct {
	match  string
	series bool
	gbps   float64
	link   string
}{
	{"RTX 4060", true, 12, "PCIe Gen4 x8"},
	{"H100", false, 50, "PCIe Gen5"}, {"H200", false, 50, "PCIe Gen5"}, {"H800", false, 50, "PCIe Gen5"}, {"H20", false, 50, "PCIe Gen5"},
	{"B200", false, 50, "PCIe Gen5"}, {"B100", false, 50, "PCIe Gen5"}, {"B300", false, 50, "PCIe Gen5"},
	{"RTX 50", true, 50, "PCIe Gen5"}, {"RTX PRO 6000", true, 50, "PCIe Gen5"}, {"MI300", true, 50, "PCIe Gen5"}, {"MI325", true, 50, "PCIe Gen5"},
	{"A100", false, 24, "PCIe Gen4"}, {"A800", false, 24, "PCIe Gen4"}, {"A30", false, 24, "PCIe Gen4"}, {"A40", false, 24, "PCIe Gen4"},
	{"A10", false, 24, "PCIe Gen4"}, {"A16", false, 24, "PCIe Gen4"}, {"A2", false, 24, "PCIe Gen4"},
	{"L40", true, 24, "PCIe Gen4"}, {"L4", false, 24, "PCIe Gen4"},
	{"RTX 30", true, 24, "PCIe Gen4"}, {"RTX 40", true, 24, "PCIe Gen4"}, {"RTX A", true, 24, "PCIe Gen4"},
	{"MI250", true, 24, "PCIe Gen4"}, {"MI210", true, 24, "PCIe Gen4"}, {"MI100", true, 24, "PCIe Gen4"},
	{"V100", false, 12, "PCIe Gen3"}, {"T4", false, 12, "PCIe Gen3"}, {"P100", false, 12, "PCIe Gen3"}, {"P40", false, 12, "PCIe Gen3"},
	{"P4", false, 12, "PCIe Gen3"}, {"TITAN V", false, 12, "PCIe Gen3"}, {"RTX 20", true, 12, "PCIe Gen3"}, {"GTX 10", true, 12, "PCIe Gen3"},
	{"QUADRO RTX", true, 12, "PCIe Gen3"},
}

// LinkReference returns the pinned bandwidth (GB/s) the named GPU's host
// link reaches and the link's name, or ok false for a GPU not in the
// table.
func LinkReference(gpu string) (gbps float64, link string, ok bool) {
	up := strings.ToUpper(gpu)
	for _, g := range pcieGen {
		m := strings.ToUpper(g.match)
		for from := 0; ; {
			i := strings.Index(up[from:], m)
			if i < 0 {
				break
			}
			i += from
			before := i == 0 || !isAlnum(up[i-1])
			after := i+len(m) == len(up) || !isAlnum(up[i+len(m)])
			if before && (after || g.series) {
				return g.gbps, g.link, true
			}
			from = i + 1
		}
	}
	return 0, "", false
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// Reference is the pinned-copy bandwidth the analyzers compare copies
// with, and where it comes from.
type Reference struct {
	// GBps is the bandwidth in GB/s.
	GBps float64
	// From is "trace" (the trace's best pinned copy of 1 MiB or more),
	// "gpu" (the GPU model's host link) or "flag" (--pinned-gbps).
	From string
	// Text says it in words: "55 GB/s, the trace's best pinned copy".
	Text string
}

// Pinned returns the pinned reference: the trace's best pinned host copy
// of 1 MiB or more, else the host link of the analysed GPU's model (PCIe
// generation), else fallback (the --pinned-gbps setting).
func (ix *Index) Pinned(fallback float64) Reference {
	if ix.bestPinned > 0 {
		return Reference{GBps: ix.bestPinned, From: "trace", Text: fmt.Sprintf("%.0f GB/s, the trace's best pinned copy", ix.bestPinned)}
	}
	for _, d := range ix.TL.Devices {
		if !ix.Devices[d.ID] {
			continue
		}
		if g, link, ok := LinkReference(d.Name); ok {
			return Reference{GBps: g, From: "gpu", Text: fmt.Sprintf("about %.0f GB/s, what pinned copies reach over the %s's %s link", g, d.Name, link)}
		}
	}
	return Reference{GBps: fallback, From: "flag", Text: fmt.Sprintf("%.0f GB/s (--pinned-gbps)", fallback)}
}

// Speedup is the bounded estimate of a finding that wastes wasted
// nanoseconds per steady step, of which the fix leaves residual:
// analyze.BoundedSpeedup over the mean steady step.
func (ix *Index) Speedup(wasted, residual int64, share float64) float64 {
	return analyze.BoundedSpeedup(ix.MeanStepNS(), wasted, residual, share)
}
