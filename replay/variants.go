package replay

import (
	"fmt"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/fix"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/timeline"
)

// Variant names (design.md).
const (
	Observed          = "observed"
	Pinned            = "pinned"
	PinnedCopyStream  = "pinned-copy-stream"
	PackCopies        = "pack-copies"
	PrefetchWorkers   = "prefetch-workers"
	PersistentWorkers = "persistent-workers"
	KeepCache         = "keep-cache"
	ReuseBuffers      = "reuse-buffers"
	CUDAGraph         = "cuda-graph"
	NoSync            = "no-sync"
	CacheData         = "cache-data"
	FewerCollectives  = "fewer-collectives"
	All               = "all"
)

// SyncEvery is how many steps a loop that does not drain the GPU queue
// every step runs between two synchronisations (the no-sync fix reads its
// metric every SyncEvery steps; a trace without per-step syncs is replayed
// so too, since its host would otherwise run ahead without bound).
const SyncEvery = 10

// Feeders is how many producers stand in for the trace's DataLoader
// workers when batches arrived ready-made (their count is not in the
// trace; 4 is a common num_workers).
const Feeders = 4

// Where batches are copied into pinned memory (Setup.PinOn).
const (
	PinOnMain   = "main"   // the main thread, each step (tensor.pin_memory())
	PinOnThread = "thread" // a pin goroutine, as the DataLoader's pin_memory thread
	PinOnNone   = "none"   // nobody: the copies read pinned buffers filled once
)

// variantFix is one fix variant: what it changes in a setup, and the lowest
// severity of its finding that plans it. The finding it verifies is not
// written here: it is the analyzer whose VerifyWith names the variant
// (FixFor), the one source of that link.
type variantFix struct {
	name  string
	apply func(s *Setup, p *Plan)
	min   analyze.Severity
}

// fixes are the fix variants in plan order.
var fixes = []variantFix{
	{Pinned, func(s *Setup, p *Plan) { s.Pinned = true }, analyze.SeverityWarning},
	{PinnedCopyStream, func(s *Setup, p *Plan) { s.Pinned, s.CopyStream = true, true }, analyze.SeverityWarning},
	{PackCopies, func(s *Setup, p *Plan) { s.PackCopies = true }, analyze.SeverityWarning},
	// The loader's fix as its advice writes it, as the step model runs it:
	// workers, and pin_memory where batches are copied from pageable memory.
	{PrefetchWorkers, func(s *Setup, p *Plan) {
		s.Workers, s.Feeders = p.prefetchWorkers(), 0
		s.Pinned = s.Pinned || p.Step.pageableHtoD()
	}, analyze.SeverityWarning},
	{PersistentWorkers, func(s *Setup, p *Plan) { s.PersistentWorkers = true }, analyze.SeverityWarning},
	{KeepCache, func(s *Setup, p *Plan) { s.KeepCache = true }, analyze.SeverityWarning},
	{ReuseBuffers, func(s *Setup, p *Plan) { s.ReuseBuffers = true }, analyze.SeverityWarning},
	{CacheData, func(s *Setup, p *Plan) { s.CacheData = true }, analyze.SeverityWarning},
	{FewerCollectives, func(s *Setup, p *Plan) { s.FewerCollectives = true }, analyze.SeverityWarning},
	// Any launch-bound or sync-api finding, info included, plans its
	// variant (design.md).
	{CUDAGraph, func(s *Setup, p *Plan) { s.CUDAGraph = true }, analyze.SeverityInfo},
	{NoSync, func(s *Setup, p *Plan) { s.SyncEvery, s.DeferReads = SyncEvery, p.Step.ReadWorkNS > 0 }, analyze.SeverityInfo},
}

// FixFor is the ID of the analyzer whose findings variant name verifies
// where no finding of the trace calls for it: the first analyzer handed to
// Build that names it first in its VerifyWith, else the first that names it
// at all ("" for observed and all). A planned variant names the finding
// it fixes itself.
func (p *Plan) FixFor(name string) string { return p.fixIDs[name] }

// fixIDs maps each variant that analyzers verify, but all, to its analyzer
// (FixFor).
func fixIDs(analyzers []*analyze.Analyzer) map[string]string {
	ids := map[string]string{}
	for _, first := range []bool{true, false} {
		for _, a := range analyzers {
			for i, name := range a.VerifyWith {
				if _, ok := ids[name]; !ok && name != All && (i == 0 || !first) {
					ids[name] = a.ID
				}
			}
		}
	}
	return ids
}

// Names lists every variant name in plan order.
func Names() []string {
	out := []string{Observed}
	for _, f := range fixes {
		out = append(out, f.name)
	}
	return append(out, All)
}

// Setup is what a variant runs: the observed loop's shape, with the fix
// applied.
type Setup struct {
	// Pinned: copies come from pinned memory (PinOn says who fills it).
	Pinned bool `json:"pinned"`
	// CopyStream: copies run on their own stream, one batch ahead of the
	// compute (double buffering).
	CopyStream bool `json:"copy_stream"`
	// Workers is the number of producers doing the per-batch host work
	// ahead of the main loop, as DataLoader workers (0: the main thread
	// builds batches, or Feeders bring them).
	Workers int `json:"workers"`
	// ReuseBuffers: batch buffers are allocated once; nothing is unmapped.
	ReuseBuffers bool `json:"reuse_buffers"`
	// PinOn says who copies batches into pinned memory: "main", "thread"
	// or "none" ("" when copies are pageable).
	PinOn string `json:"pin_on,omitempty"`
	// Feeders is the number of producers standing in for the trace's own
	// DataLoader workers when batches arrived ready-made (they build the
	// batch in shared memory; the main thread keeps its observed wait).
	Feeders int `json:"feeders,omitempty"`
	// CUDAGraph: the launch-bound kernels are captured once into a CUDA
	// graph, and each step launches the graph instead of each kernel.
	CUDAGraph bool `json:"cuda_graph"`
	// SyncEvery: the host waits for the GPU every SyncEvery steps (1: at
	// the end of every step, as the observed loop does when it syncs).
	SyncEvery int `json:"sync_every"`
	// PackCopies: the step's small copies (Phases.SmallCopies) are
	// stacked into one pinned buffer and copied once, without waiting.
	PackCopies bool `json:"pack_copies,omitempty"`
	// PersistentWorkers: the loader's workers are not started again at
	// each epoch (Phases.Restart).
	PersistentWorkers bool `json:"persistent_workers,omitempty"`
	// KeepCache: device memory is not allocated and freed each step
	// (Phases.Churn).
	KeepCache bool `json:"keep_cache,omitempty"`
	// DeferReads: the values read back are computed on the GPU and read
	// every SyncEvery steps, so the host work on them goes
	// (Phases.ReadWorkNS).
	DeferReads bool `json:"defer_reads,omitempty"`
	// CacheData: the step's file reads are served from memory
	// (Phases.Reads).
	CacheData bool `json:"cache_data,omitempty"`
	// FewerCollectives: the step's collectives are issued as fewer,
	// larger ones, which saves the host their issue time
	// (Phases.IssueSavedNS).
	FewerCollectives bool `json:"fewer_collectives,omitempty"`
}

// Variant is one way of running the step, as planned: what a run measures
// of it is the result's (VariantResult).
type Variant struct {
	Name string `json:"name"`
	// FixFor is the finding the variant fixes (nil for observed and all).
	FixFor *string `json:"fix_for"`
	Plan   Setup   `json:"plan"`
	// PredictedSpeedup is the analyzer's estimate for the fix.
	PredictedSpeedup float64 `json:"predicted_speedup"`
	// ModelStepNS, when set, is the step model's simulated step with the
	// fix, the profiler's cost removed (analyze's model.fixes), where the
	// model reproduces the trace: what the measured step is held to.
	ModelStepNS int64 `json:"model_step_ns,omitempty"`
}

// observedSetup is the loop as the trace shows it.
func observedSetup(p *Plan) Setup {
	st := &p.Step
	s := Setup{SyncEvery: SyncEvery}
	if st.Sync {
		s.SyncEvery = 1
	}
	if st.Batches == BatchesWorkers {
		s.Feeders = Feeders
	}
	pinned := false
	for _, c := range st.Copies {
		if c.Dir == timeline.CopyHtoD {
			pinned = !c.Pageable
			if c.Pageable {
				break
			}
		}
	}
	if pinned {
		s.Pinned = true
		if st.PinNS > 0 {
			s.PinOn = PinOnMain
		}
	}
	return normalize(s, p)
}

// normalize decides who pins a pinned setup's batches when no one was
// named: the pin thread when producers make them, the main thread when it
// builds them, no one when the batch is reused (pinned once) or nothing is
// copied.
func normalize(s Setup, p *Plan) Setup {
	switch {
	case !s.Pinned:
		s.PinOn = ""
	case s.PinOn != "":
	case s.Workers > 0 || s.Feeders > 0:
		s.PinOn = PinOnThread
	case p.Step.Batches == BatchesMain:
		s.PinOn = PinOnMain
	default:
		s.PinOn = PinOnNone
	}
	return s
}

// fixVariant is the variant named name applied to the observed loop,
// without a prediction.
func fixVariant(name string, p *Plan) Variant {
	v := Variant{Name: name, Plan: observedSetup(p)}
	if id := p.FixFor(name); id != "" {
		v.FixFor = &id
	}
	for _, f := range fixes {
		if f.name == name {
			f.apply(&v.Plan, p)
		}
	}
	v.Plan = normalize(v.Plan, p)
	return v
}

// variants plans observed, one variant per finding that a replay can fix
// (at warning or above, or any severity for launch-bound and sync-api),
// and all when there is more than one fix.
func variants(r *audit.Analysis, p *Plan) []Variant {
	if f := fixFinding(r, PrefetchWorkers, analyze.SeverityWarning); f != nil {
		var d fix.DataLoader
		if analyze.DecodeDetail(f, &d) && d.Workers > 0 {
			p.workers = d.Workers // the count the finding recommends
		}
	}
	out := []Variant{{Name: Observed, Plan: observedSetup(p), PredictedSpeedup: 1}}
	if r.Model.Faithful() {
		out[0].ModelStepNS = r.Model.StepNS // the loop unchanged, the profiler's cost removed
	}
	all := observedSetup(p)
	var planned []*analyze.Finding
	for _, f := range fixes {
		fd := fixFinding(r, f.name, f.min)
		if fd == nil {
			continue
		}
		v := fixVariant(f.name, p)
		id := fd.ID
		v.FixFor, v.PredictedSpeedup, v.ModelStepNS = &id, fd.EstimatedSpeedup, modelStep(r, f.name)
		out = append(out, v)
		f.apply(&all, p)
		planned = append(planned, fd)
	}
	if len(planned) > 1 {
		if f, ok := r.Model.Fix(model.All); ok && r.Model.Faithful() && f.Workers > 0 && all.Workers > 0 {
			all.Workers = f.Workers // the pool the model chose for the step with every fix
		}
		out = append(out, Variant{Name: All, Plan: normalize(all, p), PredictedSpeedup: predictAll(r, p, all, planned),
			ModelStepNS: modelStep(r, All)})
	}
	return out
}

// modelStep is the step model's simulated step with the fix named name,
// where the model reproduces the trace (0 otherwise).
func modelStep(r *audit.Analysis, name string) int64 {
	if f, ok := r.Model.Fix(name); ok && r.Model.Faithful() {
		return f.StepNS
	}
	return 0
}

// predictAll estimates the step with every planned fix: the step model's
// all where it reproduces the trace, else from the mean split:
// prefetching removes the data bucket, pinned copies the copy bucket,
// reusing buffers the os bucket; a CUDA graph and dropping the syncs
// remove what their findings counted (other-bucket time).
func predictAll(r *audit.Analysis, p *Plan, s Setup, planned []*analyze.Finding) float64 {
	if f, ok := r.Model.Fix(model.All); ok && r.Model.Faithful() {
		return f.Speedup
	}
	b := r.Steps.BreakdownNS
	step := b[index.Compute] + b[index.Copy] + b[index.Sync] + b[index.OS] + b[index.Data] + b[index.Other]
	saved := int64(0)
	if s.Workers > 0 {
		saved += b[index.Data]
	}
	if s.Pinned || s.CopyStream {
		saved += b[index.Copy]
	}
	if s.ReuseBuffers {
		saved += b[index.OS]
	}
	if rs := p.Step.Restart; rs != nil && s.PersistentWorkers && s.Workers == 0 {
		saved += rs.StallNS / int64(rs.EverySteps)
	}
	var other int64
	for _, f := range planned {
		if t := audit.TransformOf(f); t == CUDAGraph || t == NoSync || t == PackCopies || t == KeepCache {
			other += f.WastedNS
		}
	}
	saved += min(other, b[index.Other]+b[index.Sync])
	if step <= 0 {
		return 1
	}
	return analyze.Speedup(float64(saved) / float64(step))
}

// Select keeps the variants named in list (comma-separated; "" keeps the
// plan's). A named variant the findings did not call for is planned anyway,
// with no prediction. observed is always kept (and planned if the plan has
// none): speedups are relative to it.
func (p *Plan) Select(list string) error {
	if strings.TrimSpace(list) == "" {
		return nil
	}
	have := map[string]Variant{Observed: {Name: Observed, Plan: observedSetup(p), PredictedSpeedup: 1}}
	for _, v := range p.Variants {
		have[v.Name] = v
	}
	out := []Variant{have[Observed]}
	seen := map[string]bool{Observed: true}
	named := false
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		named = named || name != ""
		if name == "" || seen[name] {
			continue
		}
		if !slices.Contains(Names(), name) {
			return fmt.Errorf("unknown variant %q (want %s)", name, strings.Join(Names(), ", "))
		}
		seen[name] = true
		v, ok := have[name]
		if !ok {
			if name == All {
				s := observedSetup(p)
				for _, f := range fixes {
					f.apply(&s, p)
				}
				v = Variant{Name: All, Plan: normalize(s, p)}
			} else {
				v = fixVariant(name, p)
			}
			if f, ok := p.model.Fix(name); ok && p.model.Faithful() {
				v.ModelStepNS = f.StepNS // the model simulated it for a finding below the plan's severity
			}
		}
		out = append(out, v)
	}
	if !named {
		return fmt.Errorf("%q names no variant (want %s)", list, strings.Join(Names(), ", "))
	}
	p.Variants = out
	return nil
}
