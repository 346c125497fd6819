// Package syncapi defines the sync-api analyzer: host synchronisation that
// drains the GPU queue, so the GPU idles while the host launches again.
package syncapi

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/fix"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/advice"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/hostact"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// SmallReadback is the size under which a blocking device-to-host copy is
// a value read back (.item(), .cpu() of a scalar) rather than a transfer.
const SmallReadback = 64 << 10

// Analyzer is sync-api.
var Analyzer = &analyze.Analyzer{
	ID:    "sync-api",
	Title: "host synchronisation drains the GPU queue",
	Doc: `sync-api finds host synchronisation on the main thread (cudaDeviceSynchronize,
cudaStreamSynchronize, cudaEventSynchronize, their driver and HIP forms, and
small blocking device-to-host reads such as .item()) after which the GPU has
nothing queued: it idles from the call's return until the host has launched
the next kernel.
Wasted time: "other"-bucket time from the call's return until the next kernel
starts (time the host then spends loading data or in OS calls belongs to
those causes), capped at the time the host spent blocked in the call: without
the sync, the host would have done that work while the GPU finished its
queue, so removing the sync saves at most the queue it waited for. After a
read-back (a device-to-host copy into memory not pinned, or the sync that
waits for it) the cap is the host's work on the values up to its next CUDA
call, if longer: computed on the GPU and read every N steps, that work goes
with the read (a metric ranked on the host after a read that barely waits).
Cost: O(n log n).`,
	Requires:   []*analyze.Analyzer{index.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.05, Error: 0.20},
	VerifyWith: []string{fix.NoSync, fix.PackCopies},
	Observable: func(p *analyze.Pass) (bool, string) {
		ix := p.ResultOf[index.Analyzer].(*index.Index)
		if !p.Timeline.Observed.APICalls || !ix.HasMain {
			return false, "the trace has no host CUDA API calls (capture them: nsys --trace=cuda, or ProfilerActivity.CPU)"
		}
		return index.RequireKernels(p)
	},
	Run: run,
}

// Detail is the typed form of a sync-api finding's detail map.
type Detail struct {
	// Drains is the number of draining synchronisations in steady steps.
	Drains int `detail:"drains"`
	// DrainsPerStep is Drains per steady step.
	DrainsPerStep float64 `detail:"drains_per_step"`
}

// DetailOf reads f's detail; ok is false when a key is missing.
func DetailOf(f *analyze.Finding) (d Detail, ok bool) { return d, analyze.DecodeDetail(f, &d) }

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	other := ix.Buckets[index.Other]
	var total int64
	var n int
	perStep := make([]int64, len(ix.Steady))
	names := map[string]int{}
	evidence := analyze.NewTop(analyze.MaxEvidence)
	var prevCopy *timeline.Event // the thread's last small pageable host-to-device copy call
	afterCopy := 0               // drains right after one
	var afterBytes int64         // those copies' bytes
	var readWork int64           // host time on values read back, in the wasted time
	var readMids []readAt        // where that work lies
	calls := tl.Tracks[ix.Main].Events
	var prevCall *timeline.Event // the thread's previous call
	prevRead := false            // whether it read back (or waited for a read-back)
	for c, i := range calls {
		e := &tl.Events[i]
		if e.Kind != timeline.KindAPI {
			continue
		}
		read := index.ReadsBack(tl, e, prevCall, prevRead)
		prevCall, prevRead = e, read
		if smallPageableCopy(tl, e) {
			prevCopy = e
			continue
		}
		if !ix.InSteady(e.End) || !drains(tl, e) {
			continue
		}
		if prevCopy != nil && e.Start-prevCopy.End < index.CopyWaitNS {
			afterCopy++
			afterBytes += tl.Events[prevCopy.Link].Bytes
		}
		prevCopy = nil
		if ix.AnyKernel.Contains(e.End) {
			continue // kernels still queued: the GPU does not idle
		}
		// The busy interval that starts next (e.End lies in none of them).
		k := sort.Search(len(ix.AnyKernel), func(j int) bool { return ix.AnyKernel[j].Start >= e.End })
		next := int64(math.MaxInt64) // no kernel follows in the trace
		if k < len(ix.AnyKernel) {
			next = ix.AnyKernel[k].Start
		} else if !read {
			continue
		}
		w := min(other.Covered(e.End, next), e.Dur())
		var after int64 // the host's work on values read back, if more than the wait
		if read {
			// The host's work on the values read back, until its next
			// call, goes with the read when the GPU computes them.
			end := min(next, nextCall(tl, calls, c))
			if a := other.Covered(e.End, end); a > w {
				after, next = a, end
				readWork += a - w
				w = a
				readMids = append(readMids, readAt{e.End + (end-e.End)/2, a})
			}
		}
		if w == 0 || next == math.MaxInt64 {
			continue
		}
		total += w
		if k := ix.SteadyIndex(e.End); k >= 0 {
			perStep[k] += w
		}
		n++
		name := timeline.BaseAPIName(tl.Name(e.Name))
		names[name]++
		if !evidence.Wants(w, e.End) {
			continue
		}
		evidence.Add(analyze.Candidate{Weight: w, Evidence: analyze.Evidence{
			StartNS: e.End, EndNS: next, Track: ix.Label(e.Track)}, Describe: func() string {
			if after > 0 {
				return fmt.Sprintf("after %s (which blocked %s) the host works %s on the values read back, with no kernel queued",
					name, units.Dur(e.Dur()), units.Dur(after))
			}
			return fmt.Sprintf("after %s (which blocked %s) the GPU idles %s until the next kernel; %s of that could overlap the drained work",
				name, units.Dur(e.Dur()), units.Dur(next-e.End), units.Dur(w))
		}})
	}
	if total == 0 {
		return nil, nil
	}
	per, share := ix.PerStep(total)
	top := topName(names)
	prog := advice.Of(ix)
	steady := max(len(ix.Steady), 1)
	if afterCopy*2 >= n && afterCopy >= MinSmallCopies*steady {
		// Pageable copies, each followed by its wait: many small tensors
		// copied one at a time.
		p.AddFinding(smallCopies(ix, n, afterCopy, afterBytes, per, share, perStep, evidence))
		return nil, nil
	}
	title := fmt.Sprintf("%d synchronisations drain the GPU: %s of each step (%s per step), mostly %s",
		n, units.Pct(share), units.Dur(per), top)
	bound := "none: the wasted time is already capped at what each call waited for"
	lead, code := "", prog.Pick(`running = torch.zeros((), device="cuda")
for step, (x, y) in enumerate(loader):
    loss = train_step(x, y)
    running += loss.detach()            # no host sync
    if step % 100 == 0:
        print(running.item() / 100)     # one sync per 100 steps
        running.zero_()`, `with torch.inference_mode():
    out = model(x)              # no .item()/.cpu() inside the model
result = out.cpu()              # one read-back per input`, `for (int it = 0; it < n; it++) {
    kernel_a<<<g, b, 0, s>>>(...);
    kernel_b<<<g, b, 0, s>>>(...);     /* no cudaDeviceSynchronize between launches */
}
cudaStreamSynchronize(s);              /* once, where the host needs the results */`)
	if 2*readWork >= total {
		readPer, _ := ix.PerStep(readWork)
		title += fmt.Sprintf("; %s of it is host work on the values read back", units.Dur(readPer))
		where := ""
		if r := topName(rangesOf(ix, readMids)); r != "" {
			where = fmt.Sprintf(" (mostly in %q)", units.Clip(r, 60))
		}
		var fix string
		fix, code = prog.ReadBackWork()
		bound = "none: the wasted time is what each call waited for and the host's work on the values it read"
		lead = "After a read-back (.item(), .cpu()) the host works on the values" + where + " while the GPU has nothing queued. " + fix + " "
	}
	fixText := "Each of these calls waits until the GPU has finished everything queued; when it returns the queue is empty " +
		"and the GPU idles until the host has launched the next kernel. " + prog.Pick(
		"Remove per-step synchronisation: torch.cuda.synchronize() outside timing code, loss.item() / .cpu() / print(tensor) every step, "+
			"and implicit syncs (torch.nonzero, boolean masks). Read metrics every N steps or accumulate them on the GPU.",
		"Remove synchronisation inside the model call: .item() / .cpu() / torch.cuda.synchronize() between operations and implicit syncs "+
			"(torch.nonzero, boolean masks); read results back once per input or batch.",
		"Synchronise once per iteration rather than after every launch (cudaDeviceSynchronize after each kernel serialises launch and execution), "+
			"or record an event and wait on it only where the host needs the results.")
	if lead != "" {
		// The read's own fix says what to do: the generic list of syncs
		// would only repeat it.
		fixText = strings.TrimSpace(lead)
	}
	p.AddFinding(analyze.Finding{
		Title:            title,
		WastedNS:         per,
		Share:            share,
		EstimatedSpeedup: ix.Speedup(per, 0, share),
		Bound:            bound,
		Evidence:         evidence.Evidence(),
		Detail:           analyze.DetailMap(Detail{Drains: n, DrainsPerStep: float64(n) / float64(max(len(ix.Steady), 1))}),
		OneOff:           ix.OneOff(perStep),
		Fix:              fixText,
		Code:             code,
	})
	return nil, nil
}

// MinSmallCopies is the number of small pageable host-to-device copies per
// step, each waited for, from which the drains are read as many small
// tensors copied one by one.
const MinSmallCopies = 16

// readAt is the middle of the host's work on values read back, and its
// length.
type readAt struct{ t, ns int64 }

// rangesOf sums the work of reads by the innermost named range on the
// main thread that holds it (built only for the title's range name: a
// thread's activity is not free on a large trace).
func rangesOf(ix *index.Index, reads []readAt) map[string]int64 {
	th := hostact.NewCache(ix).Thread(ix.Main)
	out := map[string]int64{}
	for _, r := range reads {
		if n := th.InnermostRange(r.t); n != "" {
			out[n] += r.ns
		}
	}
	return out
}

// topName is the name with the most of m (ties: the smaller name), or "".
func topName[V int | int64](m map[string]V) string {
	top, topN := "", V(0)
	for name, v := range m {
		if v > topN || (v == topN && name < top) {
			top, topN = name, v
		}
	}
	return top
}

// nextCall is the start of the CUDA call after the thread's event
// evs[c] that is not nested in it (a driver call under a runtime one), or
// the end of time.
func nextCall(tl *timeline.Timeline, evs []int32, c int) int64 {
	e := &tl.Events[evs[c]]
	for _, i := range evs[c+1:] {
		if n := &tl.Events[i]; n.Kind == timeline.KindAPI && (n.Start >= e.End || n.Link >= 0) {
			return n.Start
		}
	}
	return math.MaxInt64
}

// smallPageableCopy reports whether API call e copies under 1 MiB of
// pageable host memory to the device.
func smallPageableCopy(tl *timeline.Timeline, e *timeline.Event) bool {
	if !e.API.IsCopy() || e.Link < 0 {
		return false
	}
	c := &tl.Events[e.Link]
	return c.Copy == timeline.CopyHtoD && c.Src == timeline.MemPageable && c.Bytes < 1<<20
}

// smallCopies is the finding of drains that wait for small pageable copies
// made one tensor at a time: stack them into one pinned buffer.
func smallCopies(ix *index.Index, n, copies int, bytes, per int64, share float64, perStep []int64, ev *analyze.Top) analyze.Finding {
	steps := float64(max(len(ix.Steady), 1))
	f := analyze.Finding{
		Title: fmt.Sprintf("%.0f small pageable copies a step, each waited for: the GPU drains %d times, %s of each step (%s per step)",
			float64(copies)/steps, n, units.Pct(share), units.Dur(per)),
		WastedNS:         per,
		Share:            share,
		EstimatedSpeedup: ix.Speedup(per, 0, share),
		Bound:            "none: the wasted time is already capped at what each call waited for",
		Evidence:         ev.Evidence(),
		Detail:           analyze.DetailMap(Detail{Drains: n, DrainsPerStep: float64(n) / steps}),
		OneOff:           ix.OneOff(perStep),
		Fix: fmt.Sprintf("The host copies about %.0f small tensors a step from pageable memory, one .to(device) each: every copy "+
			"is staged and waited for, so the host spends the step in copy and sync calls while the GPU drains. Stack them into "+
			"one pinned buffer on the host (torch.cat, or a preallocated pinned tensor filled in place) and copy it once with "+
			"non_blocking=True; split it on the GPU.", float64(copies)/steps),
		Code: `staging = torch.empty(total, pin_memory=True)          # once, sized for one step's features
torch.cat([f.reshape(-1) for f in features], out=staging) # host: one pass over the features
flat = staging.to("cuda", non_blocking=True)               # one asynchronous copy
features = flat.split(sizes)                               # views on the GPU`,
	}
	maps.Copy(f.Detail, analyze.DetailMap(fix.SmallCopies{PerStep: float64(copies) / steps, Bytes: bytes / int64(max(copies, 1))}))
	f.VerifyWith = []string{fix.PackCopies}
	return f
}

// drains reports whether API call e waits for the GPU: a sync call or a
// small blocking device-to-host read.
func drains(tl *timeline.Timeline, e *timeline.Event) bool {
	if e.API == timeline.APISync {
		return true
	}
	if e.API.IsCopy() && e.Link >= 0 {
		c := &tl.Events[e.Link]
		return c.Copy == timeline.CopyDtoH && c.Bytes <= SmallReadback
	}
	return false
}
