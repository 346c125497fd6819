// Package commexposed defines the comm-exposed analyzer: collective
// communication running with no compute kernel beside it, so the step waits
// for it.
package commexposed

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/comm"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// Thresholds of the fix advice.
const (
	// ManyPerStep and SmallBytes: this many collectives per step with a
	// median message of at most SmallBytes pay a launch and a
	// synchronisation of the ranks each; fewer, larger ones (DDP's default
	// bucket is 25 MB) move the same data with less of both.
	ManyPerStep = 20
	SmallBytes  = 4 << 20
	// WaitDominates is the share of the exposed time one trace shows as
	// waiting for peers above which the fix is on the slower ranks.
	WaitDominates = 0.5
)

// Analyzer is comm-exposed.
var Analyzer = &analyze.Analyzer{
	ID:    "comm-exposed",
	Title: "collectives with no compute beside them",
	Doc: `comm-exposed measures the time collective communication kernels (NCCL, RCCL,
symmetric-memory all-reduce) run in steady steps while no compute kernel
runs: the comm bucket of the two-clock split. Communication overlapped by
compute is hidden and costs nothing. Evidence names each collective, its
bytes, group and achieved bus bandwidth. The fix depends on the shape: a wait
for peers (see comm-wait) is fixed on the slower rank; many small
collectives want fewer, larger ones (DDP bucket_cap_mb); large exposed ones
want overlap (DDP's backward overlap, no_sync() under gradient accumulation);
all-gathers and reduce-scatters of a sharded model want FSDP prefetch.
Wasted time: the comm bucket. Cost: O(c) over the collective index.`,
	Requires: []*analyze.Analyzer{index.Analyzer, comm.Analyzer},
	Bands:    &analyze.Bands{Warning: 0.10, Error: 0.30},
	Run:      run,
}

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	cx := p.ResultOf[comm.Analyzer].(*comm.Index)
	total := ix.SteadyCovered(ix.Buckets[index.Comm])
	if total == 0 {
		return nil, nil
	}
	per, share := ix.PerStep(total)
	ops := cx.Steady()
	steps := int64(max(len(ix.Steady), 1))
	var wait, bytes int64
	var sizes []int64
	var cands []analyze.Candidate
	var sharded int64 // exposed time in all-gathers and reduce-scatters (FSDP, ZeRO)
	for _, o := range ops {
		wait += o.WaitNS
		if n := timeline.NormOp(o.Name); n == "allgather" || n == "reducescatter" {
			sharded += o.Exposed.Len()
		}
		bytes += o.Bytes
		if o.Bytes > 0 {
			sizes = append(sizes, o.Bytes)
		}
		exposed := o.Exposed.Len()
		if exposed == 0 {
			continue
		}
		cands = append(cands, analyze.Candidate{Weight: exposed, Evidence: analyze.Evidence{StartNS: o.Start, EndNS: o.End, Track: o.Track},
			Describe: func() string {
				return o.Describe() + fmt.Sprintf("; %s of it with no compute running", units.Dur(exposed))
			}})
	}
	perStep := int64(len(ops)) / steps
	f := analyze.Finding{
		Title: fmt.Sprintf("communication-bound: collectives run with no compute beside them %s of each step (%s per step)",
			units.Pct(share), units.Dur(per)),
		WastedNS: per,
		Share:    share,
		Evidence: analyze.TopEvidence(cands, analyze.MaxEvidence),
		Detail: map[string]float64{"collectives_per_step": float64(perStep), "bytes_per_step": float64(bytes / steps),
			"wait_share": float64(wait) / float64(total)},
	}
	var median int64
	if len(sizes) > 0 {
		slices.Sort(sizes)
		median = sizes[(len(sizes)-1)/2]
		f.Detail["median_bytes"] = float64(median)
	}
	// What the fix leaves: overlap hides at most the compute beside the
	// collectives; a fixed straggler removes the waiting, not the moving.
	compute := ix.SteadyCovered(ix.Kernels) / steps
	f.EstimatedSpeedup = ix.Speedup(per, max(per-compute, 0), share)
	f.Bound = fmt.Sprintf("overlap hides at most the compute (%s of kernels per step): saves min(comm, compute)", units.Dur(compute))
	switch {
	case float64(wait) >= WaitDominates*float64(total):
		moving := per - wait/steps
		f.EstimatedSpeedup = ix.Speedup(per, moving, share)
		f.Bound = fmt.Sprintf("the data the collectives move stays (%s per step): only the wait goes", units.Dur(moving))
		f.Fix = fmt.Sprintf("At least %s of this is waiting for other ranks to arrive at the collectives, not moving data (see comm-wait): "+
			"the fix is on the slowest rank. Analyze all ranks' traces together (traceaudit analyze DIR) to name the straggler and its own cause; "+
			"overlapping communication with compute hides only the part that moves data.", units.Pct(float64(wait)/float64(total)))
		f.Code = `# make every rank do the same work per step: identical DataLoader settings on all ranks,
# even shards, and no rank-0-only work inside the loop
sampler = torch.utils.data.distributed.DistributedSampler(dataset, drop_last=True)
loader = torch.utils.data.DataLoader(dataset, batch_size=B, sampler=sampler,
                                     num_workers=W, pin_memory=True, persistent_workers=True)`
	case perStep >= ManyPerStep && median > 0 && median <= SmallBytes:
		f.Fix = fmt.Sprintf("%d collectives per step with a median message of %s: each one costs a launch and a synchronisation between "+
			"ranks, and small messages do not reach the link's bandwidth. Send fewer, larger collectives: raise DDP's bucket_cap_mb "+
			"(default 25) so gradients go in fewer buckets, and coalesce small tensors (FSDP: wrap larger modules).", perStep, units.Bytes(median))
		f.Code = `model = torch.nn.parallel.DistributedDataParallel(
    model, device_ids=[local_rank],
    bucket_cap_mb=100,                # fewer, larger all-reduces (default 25)
    gradient_as_bucket_view=True,     # no copy between gradients and buckets
)`
	case 2*sharded >= total:
		hidden := prefetchHides(ix, ops) / steps
		f.EstimatedSpeedup = ix.Speedup(per, per-min(hidden, per), share)
		f.Bound = fmt.Sprintf("prefetch runs each all-gather or reduce-scatter beside the compute between it and the collective before it: "+
			"that compute hides at most %s per step", units.Dur(hidden))
		f.Fix = fmt.Sprintf("%s of the exposed time is all-gathers and reduce-scatters: a sharded model (FSDP, ZeRO) gathering "+
			"each layer's parameters just before it runs. Prefetch the next layer's all-gather while this one computes: "+
			"FSDP's forward_prefetch=True and backward_prefetch=BACKWARD_PRE (FSDP2: reshard_after_forward=False on the last "+
			"blocks, or explicit prefetching); wrap larger modules so there are fewer, larger collectives; with gradient "+
			"accumulation, skip the reduce-scatter of all but the last micro-step (no_sync()).", units.Pct(float64(sharded)/float64(total)))
		f.Code = `model = FullyShardedDataParallel(
    model, device_id=local_rank,
    auto_wrap_policy=functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block}),
    forward_prefetch=True,                             # issue the next all-gather before this layer's forward
    backward_prefetch=BackwardPrefetch.BACKWARD_PRE,   # and before the previous layer's backward
)`
	default:
		f.Fix = "Overlap communication with compute: DistributedDataParallel all-reduces gradient buckets during the backward pass " +
			"(keep find_unused_parameters=False and gradient_as_bucket_view=True; a smaller bucket_cap_mb starts the first all-reduce earlier, " +
			"so less of it is left after the last kernel); with gradient accumulation, skip the all-reduce of all but the last micro-step " +
			"with no_sync(); with FSDP, prefetch the next all-gather (forward_prefetch=True, backward_prefetch=BACKWARD_PRE)."
		f.Code = `for i, (x, y) in enumerate(loader):
    last = (i + 1) % accum_steps == 0
    ctx = contextlib.nullcontext() if last else model.no_sync()   # all-reduce once per accum_steps
    with ctx:
        loss = model(x.cuda(non_blocking=True)).loss_fn(y) / accum_steps
        loss.backward()
    if last:
        optimizer.step(); optimizer.zero_grad(set_to_none=True)
# FSDP: FullyShardedDataParallel(model, forward_prefetch=True, backward_prefetch=BackwardPrefetch.BACKWARD_PRE)`
	}
	p.AddFinding(f)
	return nil, nil
}

// prefetchHides is the exposed collective time that prefetching one
// collective ahead can hide (ns, over the steady steps): a collective
// issued early runs beside the compute between the previous collective
// on its device and itself, and no more of it can hide there than that
// compute lasts.
func prefetchHides(ix *index.Index, ops []*comm.Op) int64 {
	byStart := slices.Clone(ops)
	slices.SortStableFunc(byStart, func(a, b *comm.Op) int { return cmp.Compare(a.Start, b.Start) })
	prevEnd := map[int64]int64{} // device -> end of its last collective so far
	kernelsOn := deviceKernels(ix)
	var hidden int64
	for _, o := range byStart {
		dev := ix.TL.Tracks[ix.TL.Events[o.Event].Track].Device
		lo, ok := prevEnd[dev]
		if !ok {
			lo = o.Start // the first collective seen: nothing before it to count on
		}
		if o.Start > lo {
			hidden += min(o.Exposed.Len(), kernelsOn(dev).Covered(lo, o.Start))
		}
		prevEnd[dev] = max(lo, o.End)
	}
	return hidden
}

// deviceKernels returns the compute kernels of one device: the index's
// kernel set when the run uses one GPU, else that device's own (a process
// driving several GPUs hides a collective only behind its own GPU's work).
func deviceKernels(ix *index.Index) func(dev int64) ivl.Set {
	if len(ix.Devices) <= 1 {
		return func(int64) ivl.Set { return ix.Kernels }
	}
	by := map[int64][]ivl.Interval{}
	for _, i := range ix.DeviceWork {
		e := &ix.TL.Events[i]
		if e.Kind == timeline.KindKernel && !e.Has(timeline.FlagComm) {
			d := ix.TL.Tracks[e.Track].Device
			by[d] = append(by[d], ivl.Interval{Start: e.Start, End: e.End})
		}
	}
	sets := make(map[int64]ivl.Set, len(by))
	for d, ivs := range by {
		sets[d] = ivl.Union(ivs)
	}
	return func(dev int64) ivl.Set { return sets[dev] }
}
