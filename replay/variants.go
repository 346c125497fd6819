package replay

import (
	"fmt"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
)

// Variant names (design.md), and the finding each fixes.
const (
	Observed         = "observed"
	Pinned           = "pinned"
	PinnedCopyStream = "pinned-copy-stream"
	PrefetchWorkers  = "prefetch-workers"
	ReuseBuffers     = "reuse-buffers"
	All              = "all"
)

// fixes maps a fix variant to the finding it verifies, in plan order.
var fixes = []struct{ variant, finding string }{
	{Pinned, "sync-memcpy"},
	{PinnedCopyStream, "copy-compute-serial"},
	{PrefetchWorkers, "dataloader-wait"},
	{ReuseBuffers, "munmap-stall"},
}

// Names lists every variant name in plan order.
func Names() []string {
	out := []string{Observed}
	for _, f := range fixes {
		out = append(out, f.variant)
	}
	return append(out, All)
}

// Setup is what a variant changes about the observed loop.
type Setup struct {
	// Pinned: copies come from pinned memory, filled by a pinning
	// goroutine as the DataLoader's pin thread does.
	Pinned bool `json:"pinned"`
	// CopyStream: copies run on their own stream, one batch ahead of the
	// compute (double buffering).
	CopyStream bool `json:"copy_stream"`
	// Workers is the number of producer goroutines doing the per-batch host
	// work ahead of the main loop (0: the main thread does it).
	Workers int `json:"workers"`
	// ReuseBuffers: batch buffers are allocated once; nothing is unmapped.
	ReuseBuffers bool `json:"reuse_buffers"`
}

// Variant is one way of running the step. The last three fields are set
// by a run, absent in dry runs.
type Variant struct {
	Name string `json:"name"`
	// FixFor is the finding the variant fixes (nil for observed and all).
	FixFor *string `json:"fix_for"`
	Plan   Setup   `json:"plan"`
	// PredictedSpeedup is the analyzer's estimate for the fix.
	PredictedSpeedup float64 `json:"predicted_speedup"`
	StepNSMedian     int64   `json:"step_ns_median,omitempty"`
	GPUNSMedian      int64   `json:"gpu_ns_median,omitempty"`
	Speedup          float64 `json:"speedup,omitempty"`
}

// variants plans observed, one variant per finding at warning or above
// that a replay can fix, and all when there is more than one fix.
func variants(r *audit.Report, p *Plan) []Variant {
	out := []Variant{{Name: Observed, PredictedSpeedup: 1}}
	var all Setup
	n := 0
	for _, f := range fixes {
		fd := findingOf(r, f.finding)
		if fd == nil {
			continue
		}
		v := fixVariant(f.variant, p)
		v.PredictedSpeedup = fd.EstimatedSpeedup
		out = append(out, v)
		all = merge(all, v.Plan)
		n++
	}
	if n > 1 {
		out = append(out, Variant{Name: All, Plan: all, PredictedSpeedup: predictAll(r, all)})
	}
	return out
}

// fixVariant is the variant named name, without a prediction.
func fixVariant(name string, p *Plan) Variant {
	v := Variant{Name: name}
	for _, f := range fixes {
		if f.variant == name {
			id := f.finding
			v.FixFor = &id
		}
	}
	switch name {
	case Pinned:
		v.Plan.Pinned = true
	case PinnedCopyStream:
		v.Plan.Pinned, v.Plan.CopyStream = true, true
	case PrefetchWorkers:
		v.Plan.Workers = Workers(&p.Step, p.ObservedStepNS)
	case ReuseBuffers:
		v.Plan.ReuseBuffers = true
	}
	return v
}

func merge(a, b Setup) Setup {
	return Setup{Pinned: a.Pinned || b.Pinned, CopyStream: a.CopyStream || b.CopyStream,
		Workers: max(a.Workers, b.Workers), ReuseBuffers: a.ReuseBuffers || b.ReuseBuffers}
}

// predictAll estimates the step with every planned fix from the mean split:
// prefetching removes the data bucket, pinned copies on a side stream the
// copy bucket, reusing buffers the os bucket.
func predictAll(r *audit.Report, s Setup) float64 {
	b := r.Steps.BreakdownNS
	step := b.Compute + b.Copy + b.Sync + b.OS + b.Data + b.Other
	saved := int64(0)
	if s.Workers > 0 {
		saved += b.Data
	}
	if s.Pinned || s.CopyStream {
		saved += b.Copy
	}
	if s.ReuseBuffers {
		saved += b.OS
	}
	if step <= 0 {
		return 1
	}
	return analyze.Speedup(float64(saved) / float64(step))
}

// Select keeps the variants named in list (comma-separated; "" keeps the
// plan's). A named variant the findings did not call for is planned anyway,
// with no prediction. observed is always kept: speedups are relative to it.
func (p *Plan) Select(list string) error {
	if strings.TrimSpace(list) == "" {
		return nil
	}
	have := map[string]Variant{}
	for _, v := range p.Variants {
		have[v.Name] = v
	}
	known := map[string]bool{}
	for _, n := range Names() {
		known[n] = true
	}
	out := []Variant{have[Observed]}
	seen := map[string]bool{Observed: true}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			continue
		}
		if !known[name] {
			return fmt.Errorf("unknown variant %q (want %s)", name, strings.Join(Names(), ", "))
		}
		seen[name] = true
		v, ok := have[name]
		if !ok {
			if name == All {
				var s Setup
				for _, f := range fixes {
					s = merge(s, fixVariant(f.variant, p).Plan)
				}
				v = Variant{Name: All, Plan: s}
			} else {
				v = fixVariant(name, p)
			}
		}
		out = append(out, v)
	}
	p.Variants = out
	return nil
}
