package driver

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline"
)

// commName recognises communication kernels independently of
// timeline.IsCommKernel.
var commName = regexp.MustCompile(`(?i)^(nccl|rccl)|ncclDevKernel|ncclKernel|multimem_all_reduce`)

// multiGPU lists every multi-GPU trace of the project and the shared corpus.
func multiGPU(t *testing.T) []string {
	files := []string{ddp("d0_straggler.rank0.pt.trace.json.gz"), ddp("d0_straggler.rank1.pt.trace.json.gz"),
		ddp("d1_balanced.rank0.pt.trace.json.gz"), ddp("d1_balanced.rank1.pt.trace.json.gz"),
		ddp("d0_straggler.nsys.sqlite"), ddp("d1_balanced.nsys.sqlite")}
	for _, n := range []string{"hta_a100_ddp2_rank0_nccl_reltime.json.gz", "hta_a100_ddp16_rank0_pinned_pageable.json.gz",
		"hta_a100_ddp8_rank3_dataloader_async_cpu_to_gpu.json.gz", "hta_v100_ddp2_rank1_profile_memory_216k.json.gz",
		"tracelens_b200_vllm_eager_tp8_rank0.json.gz"} {
		files = append(files, testfix.Shared(t, "chrome", n))
	}
	files = append(files, testfix.SharedGlob(t, "nsys", "nsys-2026.2.1_torch-2gpu-*.sqlite")...)
	// The project's own 2-GPU captures: a CPU straggler, FSDP, DDP buckets.
	own, err := filepath.Glob(testfix.Project("[cfk][01]_*"))
	if err != nil || len(own) != 18 {
		t.Fatalf("%d of the 18 project multi-GPU fixtures: %v", len(own), err)
	}
	return append(files, own...)
}

// On every multi-GPU trace, collectives never count as compute: the
// compute busy share is exactly the steady time covered by the kernels
// whose names are not communication, and every GPU process of an export
// is analysed on its own.
func TestCollectivesNeverCompute(t *testing.T) {
	for _, path := range multiGPU(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tl, err := ingest.Open(path, ingest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			procs := tl.GPUProcesses()
			if filepath.Ext(path) == ".sqlite" && len(procs) != 2 {
				t.Fatalf("%d GPU processes, want 2", len(procs))
			}
			for _, p := range procs {
				sub := tl
				if len(procs) > 1 {
					sub = tl.ForProcess(p.PID)
				}
				r, err := audit.RunWith(sub, analyze.DefaultConfig(), suite.Default)
				if err != nil {
					t.Fatal(err)
				}
				var compute, comm []ivl.Interval
				for i := range sub.Events {
					e := &sub.Events[i]
					if e.Kind != timeline.KindKernel {
						continue
					}
					iv := ivl.Interval{Start: e.Start, End: e.End}
					if commName.MatchString(sub.Name(e.Name)) {
						comm = append(comm, iv)
					} else {
						compute = append(compute, iv)
					}
				}
				ix := r.Index
				want := float64(ivl.Union(compute).OverlapLen(ix.SteadySet)) / float64(ix.SteadyNS)
				if d := want - r.GPU.ComputeBusyShare; d > 1e-9 || d < -1e-9 || len(comm) == 0 {
					t.Errorf("pid %d: compute busy share %.6f, want %.6f (%d comm kernels)", p.PID, r.GPU.ComputeBusyShare, want, len(comm))
				}
				// The compute bucket is those kernels' steady time, per step.
				n := int64(len(ix.Steady))
				if d := r.Steps.BreakdownNS[index.Compute]*n - ivl.Union(compute).OverlapLen(ix.SteadySet); d > n || d < -n {
					t.Errorf("pid %d: compute bucket %d ns per step", p.PID, r.Steps.BreakdownNS[index.Compute])
				}
				t.Logf("pid %d dev %v: %s; steps %d from %s; compute %.3f comm %.3f", p.PID, p.Devices, r.Verdict, r.Steps.Count, r.Steps.Source, r.GPU.ComputeBusyShare, r.GPU.CommBusyShare)
			}
		})
	}
}
