// Package replay turns a timeline and its findings into a plan (one
// steady-state step of the trace, reduced to the phases that decide its
// length) and runs that plan on a GPU: once as observed and once per fix,
// with real copies, streams, kernels, host work and munmap calls.
//
// The plan is pure data; an Executor (package replay/cudaexec over the CUDA
// driver API, or a fake in tests) carries out GPU operations. Host phases run
// here: real CPU work of the observed length, real memory writes filling the
// batch, real mmap/munmap of batch-sized mappings.
package replay

import (
	"fmt"
	"sort"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/passes/dataloader"
	"github.com/traceaudit/traceaudit/timeline"
)

// MinCopyBytes: copies smaller than this are left out of the plan (they
// are latency-bound and do not decide the step).
const MinCopyBytes = 64 << 10

// Copy is one host-device transfer of a step.
type Copy struct {
	// Dir is "HtoD" or "DtoH".
	Dir string `json:"dir"`
	// Bytes is the size of the transfer.
	Bytes int64 `json:"bytes"`
	// Pageable says the host side is pageable memory (else pinned).
	Pageable bool `json:"pageable"`
	// SideStream says the trace ran it on a stream without kernels.
	SideStream bool `json:"side_stream"`
	// ObservedNS is its GPU time in the trace.
	ObservedNS int64 `json:"observed_ns"`
}

// Step is the plan of one steady-state step, in nanoseconds per phase.
type Step struct {
	// DataNS is the main thread's time producing the next batch (the data
	// bucket): real CPU work that also writes the batch.
	DataNS int64 `json:"data_ns"`
	// OtherNS is host work while the GPU idles (the other bucket).
	OtherNS int64 `json:"other_ns"`
	// ComputeNS is kernel time per step (the compute bucket), run as one
	// spin kernel over all SMs.
	ComputeNS int64 `json:"compute_ns"`
	// Copies are the step's host-device transfers in trace order.
	Copies []Copy `json:"copies"`
	// Munmaps is how many batch-sized mappings the main thread unmaps per
	// step (0 unless the trace shows munmap stalls); MunmapBytes is the
	// size of each.
	Munmaps     int   `json:"munmaps"`
	MunmapBytes int64 `json:"munmap_bytes"`
	// Sync says the step ends with a host synchronisation (.item(),
	// torch.cuda.synchronize()).
	Sync bool `json:"sync"`
}

// BatchBytes is the bytes copied host-to-device per step.
func (s *Step) BatchBytes() int64 {
	var n int64
	for _, c := range s.Copies {
		if c.Dir == "HtoD" {
			n += c.Bytes
		}
	}
	return n
}

// Plan is the replay of one trace.
type Plan struct {
	File string `json:"file"`
	// ObservedStepNS is the trace's median steady step.
	ObservedStepNS int64 `json:"observed_step_ns"`
	// ObservedGPUNS is the trace's GPU time per steady step: kernel busy
	// time plus copy busy time, mean over steady steps.
	ObservedGPUNS int64 `json:"observed_gpu_ns"`
	Step          Step  `json:"step"`
	// Variants are observed first, then one per finding the replay can
	// fix, then all.
	Variants []Variant `json:"variants"`
}

// Build makes the plan of a trace from its analysis.
func Build(r *audit.Report) (*Plan, error) {
	ix, tl := r.Index, r.Timeline
	if ix == nil || tl == nil {
		return nil, fmt.Errorf("replay: %s: the report has no timeline", r.File)
	}
	if len(ix.Steady) == 0 {
		return nil, fmt.Errorf("replay: %s: no steady steps to replay", r.File)
	}
	if len(ix.AnyKernel) == 0 {
		return nil, fmt.Errorf("replay: %s: no GPU kernels to replay", r.File)
	}
	p := &Plan{File: r.File, ObservedStepNS: r.Steps.MedianNS}
	n := int64(len(ix.Steady))
	p.ObservedGPUNS = (ix.SteadyCovered(ix.AnyKernel) + ix.SteadyCovered(ix.Copies)) / n
	b := ix.MeanBreakdown()
	st := &p.Step
	// Communication kernels occupy the GPU like compute on one rank's
	// replay: they replay as GPU time.
	st.DataNS, st.OtherNS, st.ComputeNS = b[index.Data], b[index.Other], b[index.Compute]+b[index.Comm]
	// Sync waits emerge from the replay itself (the host waits for the
	// spin kernel); the sync bucket's time without kernels is host work.
	st.OtherNS += b[index.Sync]
	rep := representative(ix)
	st.Copies = copiesIn(tl, ix, rep)
	st.Sync = syncsIn(tl, ix, rep)
	if f := findingOf(r, "munmap-stall"); f != nil {
		calls := f.Detail["calls_per_step"]
		st.Munmaps = max(1, int(calls+0.5))
		st.MunmapBytes = st.BatchBytes() / int64(st.Munmaps)
		if st.MunmapBytes < 1<<20 {
			st.MunmapBytes = 1 << 20
		}
		// The munmap time itself is replayed by real munmap calls.
	} else {
		st.OtherNS += b[index.OS]
	}
	p.Variants = variants(r, p)
	return p, nil
}

// representative is the steady step whose length is the median.
func representative(ix *index.Index) index.Step {
	s := append([]index.Step(nil), ix.Steady...)
	sort.Slice(s, func(i, j int) bool { return s[i].Dur() < s[j].Dur() })
	return s[(len(s)-1)/2]
}

// copiesIn lists the host-device copies of at least MinCopyBytes that run
// in step s on the analysed devices.
func copiesIn(tl *timeline.Timeline, ix *index.Index, s index.Step) []Copy {
	var out []Copy
	for i := range tl.Events {
		e := &tl.Events[i]
		if !index.HostCopy(e) || e.Bytes < MinCopyBytes || !ix.OnDevices(e) || e.Start < s.Start || e.Start >= s.End {
			continue
		}
		out = append(out, Copy{Dir: e.Copy.String(), Bytes: e.Bytes, Pageable: !index.PinnedSide(e),
			SideStream: !ix.KernelStreams[e.Track], ObservedNS: e.Dur()})
	}
	return out
}

// syncsIn reports whether the main thread synchronises with the GPU in s.
func syncsIn(tl *timeline.Timeline, ix *index.Index, s index.Step) bool {
	if !ix.HasMain {
		return false
	}
	for _, i := range tl.Tracks[ix.Main].Events {
		e := &tl.Events[i]
		if e.Kind == timeline.KindAPI && e.API == timeline.APISync && e.Start >= s.Start && e.Start < s.End {
			return true
		}
	}
	return false
}

func findingOf(r *audit.Report, id string) *analyze.Finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id && r.Findings[i].Severity >= analyze.SeverityWarning {
			return &r.Findings[i]
		}
	}
	return nil
}

// Workers is the prefetch pool size: design.md's formula from the step's
// data wait. The run caps it at the CPU count of the machine it runs on.
func Workers(st *Step, stepNS int64) int { return dataloader.Workers(st.DataNS, stepNS) }
