// Package copyserial defines the copy-compute-serial analyzer: host copies
// that never overlap a kernel, because they share the compute stream or
// synchronisation serialises them.
package copyserial

import (
	"fmt"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/advice"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// OverlapTolerance: copies count as serialised when kernels overlap less
// than this share of their GPU time in the steady state.
const OverlapTolerance = 0.05

// Analyzer is copy-compute-serial.
var Analyzer = &analyze.Analyzer{
	ID:    "copy-compute-serial",
	Title: "host copies serialised with compute",
	Doc: `copy-compute-serial finds host-to-device and device-to-host copies that no
kernel overlaps anywhere in the steady state (under 5 % of their GPU time),
because they run on the same stream as the kernels or synchronisation
serialises them. Copy engines run beside the SMs: a copy on a side stream
from pinned memory, issued one step ahead (double buffering), costs no step
time.
Wasted time: copy GPU time with no kernel running. Overlap hides at most the
compute, so the estimate saves min(copy, compute) per step. Cost: O(n log n).`,
	Requires:   []*analyze.Analyzer{index.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.05, Error: 0.20},
	VerifyWith: []string{"pinned-copy-stream"},
	Observable: index.RequireKernels,
	Run:        run,
}

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	var copies []ivl.Interval
	var idx []int32
	copyStreams := map[timeline.TrackID]bool{}
	steady := ix.SteadySet.Cursor() // events come in order of start
	for _, i := range ix.DeviceWork {
		e := &tl.Events[i]
		if !index.HostCopy(e) || !steady.Contains(e.Start) || e.Dur() == 0 {
			continue
		}
		copies = append(copies, ivl.Interval{Start: e.Start, End: e.End})
		idx = append(idx, int32(i))
		copyStreams[e.Track] = true
	}
	set := ivl.Union(copies).Intersect(ix.SteadySet)
	copyNS := set.Len()
	if copyNS == 0 {
		return nil, nil
	}
	overlap := set.OverlapLen(ix.AnyKernel)
	if float64(overlap) >= OverlapTolerance*float64(copyNS) {
		return nil, nil
	}
	sharedStream := false // copies and kernels share a stream
	for t := range copyStreams {
		sharedStream = sharedStream || ix.KernelStreams[t]
	}
	wasted := set.Subtract(ix.AnyKernel)
	total := wasted.Len()
	evidence := analyze.NewTop(analyze.MaxEvidence)
	for _, i := range idx {
		e := &tl.Events[i]
		w := wasted.Covered(e.Start, e.End)
		if !evidence.Wants(w, e.Start) {
			continue
		}
		why := "serialised by synchronisation"
		if ix.KernelStreams[e.Track] {
			why = "on the kernels' stream"
		}
		evidence.Add(analyze.Candidate{Weight: w, Evidence: analyze.Evidence{
			StartNS: e.Start, EndNS: e.End, Track: ix.Label(e.Track)}, Describe: func() string {
			return fmt.Sprintf("%s copy of %s (%s), %s, %s with no kernel running", e.Copy, units.Bytes(e.Bytes), units.Dur(e.Dur()), why, units.Dur(w))
		}})
	}
	per, share := ix.PerStep(total)
	// Overlapping copies with compute hides at most the compute: the part
	// of the copies longer than the step's kernels stays.
	compute, _ := ix.PerStep(ix.SteadyCovered(ix.Kernels))
	residual := per - min(per, compute)
	how := "they run on the same stream as the kernels"
	if !sharedStream {
		how = "synchronisation orders them between kernels"
	}
	prog := advice.Of(ix)
	f := analyze.Finding{
		Title:            fmt.Sprintf("copies never overlap compute: %s of each step (%s per step)", units.Pct(share), units.Dur(per)),
		WastedNS:         per,
		Share:            share,
		EstimatedSpeedup: ix.Speedup(per, residual, share),
		Bound:            fmt.Sprintf("overlap hides at most the compute (%s of kernels per step): saves min(copy, compute)", units.Dur(compute)),
		Evidence:         evidence.Evidence(),
		Detail: map[string]float64{"overlap_share": float64(overlap) / float64(copyNS), "shared_stream": b2f(sharedStream),
			"compute_ns_per_step": float64(compute)},
		Fix: "No kernel overlaps any host copy in the steady state: " + how + ". " + prog.Pick(
			"Copy the next batch on a side stream from pinned memory while the current step computes (double buffering), and make the compute stream wait for the copy with an event instead of a host synchronisation.",
			"Copy the next input on a side stream from pinned memory while the current one computes (double buffering), and make the compute stream wait for the copy with an event instead of a host synchronisation.",
			"Issue the next iteration's copies with cudaMemcpyAsync from pinned memory on a second stream while this iteration's kernels run (double buffering), and order them with cudaEventRecord / cudaStreamWaitEvent instead of cudaDeviceSynchronize.") +
			fmt.Sprintf(" Overlap can hide at most the compute time, %s per step.", units.Dur(compute)),
		Code: prog.Pick(trainingCode, inferenceCode, cudaCode),
	}
	p.AddFinding(f)
	return nil, nil
}

const trainingCode = `copy_stream = torch.cuda.Stream()

def to_gpu(batch):                      # batch from a DataLoader(pin_memory=True)
    with torch.cuda.stream(copy_stream):
        return [t.to("cuda", non_blocking=True) for t in batch]

it = iter(loader)
next_batch = to_gpu(next(it))
for step in range(steps):
    torch.cuda.current_stream().wait_stream(copy_stream)
    x, y = next_batch
    for t in (x, y):
        t.record_stream(torch.cuda.current_stream())
    next_batch = to_gpu(next(it))       # overlaps with the compute below
    loss = loss_fn(model(x), y)
    loss.backward(); opt.step(); opt.zero_grad()`

const inferenceCode = `copy_stream = torch.cuda.Stream()
next_x = None
for inp in inputs:                      # inputs in pinned memory
    with torch.cuda.stream(copy_stream):
        x = inp.pin_memory().to("cuda", non_blocking=True)
    torch.cuda.current_stream().wait_stream(copy_stream)
    x.record_stream(torch.cuda.current_stream())
    out = model(x)                      # the next input's copy overlaps this`

const cudaCode = `cudaStream_t copy, compute; cudaEvent_t ready[2];
for (int i = 0; i < n; i++) {
    int b = i % 2;                                   /* two pinned/device buffer pairs */
    cudaMemcpyAsync(d_in[b], h_in[b], bytes, cudaMemcpyHostToDevice, copy);
    cudaEventRecord(ready[b], copy);
    cudaStreamWaitEvent(compute, ready[b], 0);       /* no host synchronisation */
    kernel<<<grid, block, 0, compute>>>(d_in[b], d_out[b]);
}`

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
