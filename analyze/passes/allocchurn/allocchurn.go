// Package allocchurn defines the alloc-churn analyzer: device (and pinned
// host) memory allocated and freed in steady steps while the GPU idles,
// the sign of a caching allocator that is off or emptied every step.
package allocchurn

import (
	"fmt"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/fix"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/advice"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/hostact"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// Analyzer is alloc-churn.
var Analyzer = &analyze.Analyzer{
	ID:    "alloc-churn",
	Title: "device memory allocated and freed every step",
	Doc: `alloc-churn finds memory allocation and free calls (cudaMalloc/cudaFree,
hipMalloc/hipFree, cuMemAlloc/cuMemFree, cudaHostAlloc/cudaFreeHost and host
registration) on the main process's threads in steady steps, in at least two
steps (or the only one): the caching allocator is off
(PYTORCH_NO_CUDA_MEMORY_CACHING) or emptied every step
(torch.cuda.empty_cache()), or a program allocates inside its loop. cudaFree
and hipFree synchronise the device, and each call costs the launching thread
time while the GPU waits. The stream-ordered allocator (cudaMallocAsync,
cudaFreeAsync) pools memory and is not counted.
Wasted time: those calls' time while no kernel runs. Cost: O(n log n).`,
	Requires:   []*analyze.Analyzer{index.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.05, Error: 0.20},
	VerifyWith: []string{"keep-cache"},
	Observable: observable,
	Run:        run,
}

func observable(p *analyze.Pass) (bool, string) {
	if !p.Timeline.Observed.APICalls {
		return false, "the trace has no host CUDA API calls (capture them: nsys --trace=cuda, or ProfilerActivity.CPU)"
	}
	return index.RequireKernels(p)
}

// Detail is an alloc-churn finding's detail: the fix's figures and the
// steps that made such calls.
type Detail struct {
	fix.Churn
	StepsWithCalls int `detail:"steps_with_calls"`
}

// IsChurnCall reports whether an API call of that name allocates or frees
// memory outside a pool: the stream-ordered allocator's calls
// (cudaMallocAsync, cudaFreeAsync, cuMemAllocAsync) do not count.
func IsChurnCall(name string) bool {
	b := timeline.BaseAPIName(name)
	return timeline.ClassifyAPI(b) == timeline.APIAlloc && !strings.Contains(b, "Async") && !strings.Contains(b, "FromPool")
}

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	if !ix.HasMain {
		return nil, nil
	}
	pid := tl.Tracks[ix.Main].PID
	var calls []int32
	names := map[string]int64{}
	stepsWith := map[int]bool{}
	for t := range tl.Tracks {
		tr := &tl.Tracks[t]
		if tr.Kind != timeline.TrackHost || tr.PID != pid {
			continue
		}
		for _, i := range tr.Events {
			e := &tl.Events[i]
			if e.Kind != timeline.KindAPI || e.API != timeline.APIAlloc || !ix.InSteady(e.Start) || !IsChurnCall(tl.Name(e.Name)) {
				continue
			}
			calls = append(calls, i)
			names[timeline.BaseAPIName(tl.Name(e.Name))] += e.Dur()
			stepsWith[stepOf(ix, e.Start)] = true
		}
	}
	if len(calls) == 0 || (len(ix.Steady) > 1 && len(stepsWith) < 2) {
		return nil, nil // one allocation in one step is not churn
	}
	wasted, cands := hostact.Stalls(tl, ix, calls, ix.Kernels, func(e *timeline.Event, w int64) string {
		return fmt.Sprintf("%s for %s, %s of it with no kernel running", timeline.BaseAPIName(tl.Name(e.Name)), units.Dur(e.Dur()), units.Dur(w))
	})
	total := wasted.Len()
	if total == 0 {
		return nil, nil
	}
	top, topNS := "", int64(-1)
	for n, v := range names {
		if v > topNS || (v == topNS && n < top) {
			top, topNS = n, v
		}
	}
	per, share := ix.PerStep(total)
	callsPerStep := float64(len(calls)) / float64(max(len(ix.Steady), 1))
	f := analyze.Finding{
		Title: fmt.Sprintf("allocator churn: %.1f allocation calls per step (mostly %s), %s of each step with no kernel running (%s per step)",
			callsPerStep, top, units.Pct(share), units.Dur(per)),
		WastedNS:         per,
		Share:            share,
		EstimatedSpeedup: ix.Speedup(per, 0, share),
		Bound:            "none: memory allocated once is never freed in the loop",
		Evidence:         analyze.TopEvidence(cands, analyze.MaxEvidence),
		Detail:           analyze.DetailMap(Detail{Churn: fix.Churn{CallsPerStep: callsPerStep, IdleNSPerStep: per}, StepsWithCalls: len(stepsWith)}),
	}
	switch advice.Of(ix) {
	case advice.CUDA:
		f.Fix = "Each iteration allocates and frees memory (" + top + "): cudaFree synchronises the device and every call costs the " +
			"launching thread time while the GPU waits. Allocate the buffers once before the loop and reuse them, or use the " +
			"stream-ordered allocator (cudaMallocAsync/cudaFreeAsync) with a memory pool."
		f.Code = `cudaMalloc(&d_buf, bytes);                 /* once, before the loop */
for (int i = 0; i < n; i++) { /* reuse d_buf */ }
cudaFree(d_buf);                            /* once, after it */`
	default:
		f.Fix = "Device memory is allocated and freed every step (" + top + "): PyTorch's caching allocator is off " +
			"(PYTORCH_NO_CUDA_MEMORY_CACHING=1) or emptied in the loop (torch.cuda.empty_cache()), so every step pays for cudaMalloc/cudaFree " +
			"(hipMalloc/hipFree on ROCm), which synchronise the device. Keep the caching allocator on, remove empty_cache() from the loop, and " +
			"against fragmentation use PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PYTORCH_HIP_ALLOC_CONF on ROCm)."
		f.Code = `# no torch.cuda.empty_cache() inside the loop; unset PYTORCH_NO_CUDA_MEMORY_CACHING
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")   # before the first CUDA call`
	}
	p.AddFinding(f)
	return nil, nil
}

// stepOf is the index of the steady step holding t, or -1.
func stepOf(ix *index.Index, t int64) int {
	for k, s := range ix.Steady {
		if t >= s.Start && t < s.End {
			return k
		}
	}
	return -1
}
