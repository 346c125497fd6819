// Package syncmemcpy defines the sync-memcpy analyzer: copies from or to
// pageable host memory, or made by blocking calls, that hold up the host
// while the GPU computes nothing.
package syncmemcpy

import (
	"fmt"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/fix"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/advice"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// MinBytes: smaller copies are latency-bound and not reported.
const MinBytes = 64 << 10

// Analyzer is sync-memcpy.
var Analyzer = &analyze.Analyzer{
	ID:    "sync-memcpy",
	Title: "synchronous or pageable host copies",
	Doc: `sync-memcpy finds copies over 64 KiB whose host side is pageable, or that a
blocking call (cudaMemcpy, cuMemcpyHtoD, hipMemcpy) made. A pageable copy is
staged by the driver through a pinned bounce buffer: the host blocks and the
copy runs at a fraction of the pinned bandwidth. Achieved bandwidth is
compared with the trace's best pinned copy of 1 MiB or more, else with what
the GPU model's PCIe generation reaches (Gen3 ~12, Gen4 ~24, Gen5 ~50 GB/s),
else --pinned-gbps (default 25 GB/s).
Wasted time: time inside those copy calls, or those copies' GPU time, while no
kernel runs. The estimate keeps the copies at the pinned reference. Cost:
O(n log n).`,
	Requires:   []*analyze.Analyzer{index.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.02, Error: 0.10},
	VerifyWith: []string{fix.Pinned, fix.NoSync},
	Observable: func(p *analyze.Pass) (bool, string) {
		tl := p.Timeline
		if !tl.Observed.GPU {
			return false, "the trace has no GPU activity (capture CUDA activity: nsys --trace=cuda, or ProfilerActivity.CUDA)"
		}
		if !tl.Observed.MemoryKinds {
			for i := range tl.Events {
				if index.HostCopy(&tl.Events[i]) {
					return false, "the trace does not say whether host memory is pageable or pinned (ROCm names copies \"Host -> Device\")"
				}
			}
		}
		return true, ""
	},
	Run: run,
}

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	var spans []ivl.Interval
	var bytes, gpuNS int64
	var pageable, blocking, dtoh int
	type flagged struct {
		i        int32
		lo, hi   int64
		pageable bool
	}
	var list []flagged
	for _, i := range ix.DeviceWork {
		e := &tl.Events[i]
		if e.Kind != timeline.KindMemcpy || e.Bytes <= MinBytes || !ix.InSteady(e.Start) {
			continue
		}
		pg := index.HostCopy(e) && index.PageableSide(e)
		blk := e.Link >= 0 && tl.Events[e.Link].API == timeline.APIMemcpy
		if !pg && !blk {
			continue
		}
		lo, hi := e.Start, e.End
		if e.Link >= 0 {
			c := &tl.Events[e.Link]
			lo, hi = min(lo, c.Start), max(hi, c.End)
			spans = append(spans, ivl.Interval{Start: c.Start, End: c.End})
		}
		spans = append(spans, ivl.Interval{Start: e.Start, End: e.End})
		list = append(list, flagged{int32(i), lo, hi, pg})
		bytes += e.Bytes
		gpuNS += e.Dur()
		if pg {
			pageable++
		} else {
			blocking++
		}
		if e.Copy == timeline.CopyDtoH {
			dtoh++
		}
	}
	if len(list) == 0 {
		return nil, nil
	}
	wasted := ivl.Union(spans).Subtract(ix.AnyKernel).Intersect(ix.SteadySet)
	total := wasted.Len()
	if total == 0 {
		return nil, nil
	}
	ref := ix.Pinned(p.Config.PinnedGBps)
	var achieved float64 // GB/s of the flagged copies
	if gpuNS > 0 {
		achieved = float64(bytes) / float64(gpuNS)
	}
	perStep := bytes / int64(max(len(ix.Steady), 1))
	top := analyze.NewTop(analyze.MaxEvidence)
	for _, c := range list {
		e := &tl.Events[c.i]
		w := wasted.Covered(c.lo, c.hi)
		if !top.Wants(w, c.lo) {
			continue
		}
		kind := "blocking"
		if c.pageable {
			kind = "pageable"
		}
		top.Add(analyze.Candidate{Weight: w, Evidence: analyze.Evidence{
			StartNS: c.lo, EndNS: c.hi, Track: ix.Label(e.Track)}, Describe: func() string {
			what := fmt.Sprintf("%s %s copy of %s at %s GB/s (pinned reaches %.0f GB/s); %s with no kernel running",
				kind, e.Copy, units.Bytes(e.Bytes), units.GBps(e.Bytes, e.Dur()), ref.GBps, units.Dur(w))
			if e.Link >= 0 {
				c := &tl.Events[e.Link]
				what += fmt.Sprintf("; the host waits in %s for %s", timeline.BaseAPIName(tl.Name(c.Name)), units.Dur(c.Dur()))
			}
			return what
		}})
	}
	per, share := ix.PerStep(total)
	// From pinned memory the same bytes still take bytes / reference: that
	// much of the wasted time stays (without overlap).
	pinnedNS := int64(float64(perStep) / ref.GBps)
	f := analyze.Finding{
		Title: fmt.Sprintf("%d pageable/blocking copies: %s of each step copying with no kernel running (%s per step)",
			len(list), units.Pct(share), units.Dur(per)),
		WastedNS:         per,
		Share:            share,
		EstimatedSpeedup: ix.Speedup(per, pinnedNS, share),
		Bound:            fmt.Sprintf("the copies at the pinned reference (%s) stay: %s per step", ref.Text, units.Dur(min(pinnedNS, per))),
		Evidence:         top.Evidence(),
		Detail: map[string]float64{"achieved_gbps": achieved, "pinned_gbps": ref.GBps, "bytes_per_step": float64(perStep),
			"pageable_copies": float64(pageable), "blocking_copies": float64(blocking), "pinned_ns_per_step": float64(pinnedNS)},
	}
	prog := advice.Of(ix)
	f.Fix = fmt.Sprintf("These copies move %s per step at %.1f GB/s; from pinned memory they would run near %s (about %s per step) "+
		"and, copied asynchronously, let the host carry on. ", units.Bytes(perStep), achieved, ref.Text, units.Dur(pinnedNS)) +
		prog.Pick("Pin the batches (DataLoader(pin_memory=True) or tensor.pin_memory()) and copy with non_blocking=True.",
			"Copy inputs from a pinned buffer (tensor.pin_memory(), or a preallocated pinned tensor that each input is copied into) with non_blocking=True.",
			"Allocate the host buffers pinned (cudaMallocHost, or cudaHostRegister on existing memory) and copy with cudaMemcpyAsync on a stream instead of cudaMemcpy.")
	f.Code = prog.Pick(`loader = DataLoader(dataset, batch_size=batch_size, num_workers=workers, pin_memory=True)
for x, y in loader:
    x = x.to("cuda", non_blocking=True)   # pinned source: asynchronous DMA at full PCIe bandwidth
    y = y.to("cuda", non_blocking=True)`, `staging = torch.empty(shape, dtype=dtype, pin_memory=True)   # once
staging.copy_(inputs)                                       # each input
x = staging.to("cuda", non_blocking=True)`, `float *h_buf;
cudaMallocHost((void **)&h_buf, bytes);          /* or cudaHostRegister(existing, bytes, 0) */
cudaMemcpyAsync(d_buf, h_buf, bytes, cudaMemcpyHostToDevice, stream);`)
	if dtoh > len(list)/2 {
		f.Detail[fix.DeviceToHost] = 1 // read-backs: read less often, not pinned batches
		f.VerifyWith = []string{fix.NoSync}
		f.Fix = fmt.Sprintf("Device-to-host copies into pageable memory %s block the host and run at %.1f GB/s. ",
			prog.Pick("(.cpu(), .item(), .numpy())", "(.cpu(), .item(), .numpy())", "(cudaMemcpy into malloc'd buffers)"), achieved) +
			prog.Pick("Copy into a pinned buffer with non_blocking=True and read it after an event, or read results back less often.",
				"Copy into a pinned buffer with non_blocking=True and read it after an event, or read results back less often.",
				"Copy into pinned host memory (cudaMallocHost) with cudaMemcpyAsync and wait on an event only when the values are needed.")
		f.Code = prog.Pick(`host_buf = torch.empty(shape, dtype=dtype, pin_memory=True)   # once
host_buf.copy_(out, non_blocking=True)
done = torch.cuda.Event(); done.record()
...                      # more GPU work
done.synchronize()       # only when the values are needed`, `host_buf = torch.empty(shape, dtype=dtype, pin_memory=True)   # once
host_buf.copy_(out, non_blocking=True)
done = torch.cuda.Event(); done.record()
done.synchronize()       # only when the values are needed`, `cudaMemcpyAsync(h_pinned, d_out, bytes, cudaMemcpyDeviceToHost, stream);
cudaEventRecord(done, stream);
/* ... more work ... */
cudaEventSynchronize(done);   /* only when the values are needed */`)
	}
	p.AddFinding(f)
	return nil, nil
}
