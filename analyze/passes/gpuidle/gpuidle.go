// Package gpuidle defines the gpu-idle analyzer: the time in steady steps
// when no kernel runs on the devices the main process uses, with each gap
// explained by what the host thread that launched the next work was doing.
package gpuidle

import (
	"fmt"
	"sort"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/hostact"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// Analyzer is gpu-idle.
var Analyzer = &analyze.Analyzer{
	ID:    "gpu-idle",
	Title: "GPU idle: no kernel runs",
	Doc: `gpu-idle measures the time in steady steps when no kernel runs on the GPUs
the main process uses (copies alone count as idle: the GPU computes nothing).
Each gap longer than --min-gap is attributed to what the host thread that
launched the work ending the gap was doing meanwhile: a copy call, a sync
call, an OS call, a data-loading range, another named range, or
uninstrumented host work. gpu-idle is the symptom; the cause analyzers
(dataloader-wait, sync-memcpy, munmap-stall, copy-compute-serial, sync-api,
launch-bound) split it up.
Wasted time: time with no kernel running. Cost: O(n log n).`,
	Requires:   []*analyze.Analyzer{index.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.20, Error: 0.50},
	VerifyWith: []string{"all"},
	Observable: index.RequireKernels,
	Run:        run,
}

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	idle := ix.SteadySet.Subtract(ix.AnyKernel)
	total := idle.Len()
	var byCause hostact.Split // gap time over --min-gap by host cause
	if total == 0 {
		return nil, nil
	}
	// Kernels on the analysed devices in start order, to find the work
	// that ends each gap.
	kernels := make([]int32, 0, ix.Count[timeline.KindKernel])
	for i := range tl.Events {
		if e := &tl.Events[i]; e.Kind == timeline.KindKernel && ix.OnDevices(e) {
			kernels = append(kernels, int32(i))
		}
	}
	acts := hostact.NewCache(ix)
	// names[c] sums gap time per dominant event name of cause c.
	var names [hostact.NumCauses]map[string]int64
	for c := range names {
		names[c] = map[string]int64{}
	}
	var cands []analyze.Candidate
	for _, g := range idle {
		if g.Len() < p.Config.MinGapNS {
			continue
		}
		k := sort.Search(len(kernels), func(i int) bool { return tl.Events[kernels[i]].Start >= g.End })
		thread, hasThread := ix.Main, ix.HasMain
		gpuTrack := ""
		if k < len(kernels) {
			e := &tl.Events[kernels[k]]
			gpuTrack = ix.Label(e.Track)
			if e.Link >= 0 {
				thread, hasThread = tl.Events[e.Link].Track, true
			}
		}
		track := gpuTrack
		var th *hostact.Thread
		var split hostact.Split
		if hasThread {
			th = acts.Thread(thread)
			split = th.Split(g.Start, g.End)
			for c := range split {
				byCause[c] += split[c]
				if n := th.Name(hostact.Cause(c)); n != "" && split[c] > 0 {
					names[c][n] += split[c]
				}
			}
			if track == "" {
				track = ix.Label(thread)
			}
		}
		describeGap := func() string {
			what := fmt.Sprintf("GPU idle %s", units.Dur(g.Len()))
			if th != nil {
				what += "; " + describe(th, split, g.Start, g.End) + " on " + ix.Label(thread)
			}
			return what
		}
		cands = append(cands, analyze.Candidate{Weight: g.Len(), Describe: describeGap, Evidence: analyze.Evidence{
			StartNS: g.Start, EndNS: g.End, Track: track}})
	}
	per, share := ix.PerStep(total)
	top := byCause.Top()
	f := analyze.Finding{
		Title:    fmt.Sprintf("GPU idle %s of each step (%s per step)", units.Pct(share), units.Dur(per)),
		WastedNS: per,
		Share:    share,
		Evidence: analyze.TopEvidence(cands, analyze.MaxEvidence),
		Detail:   map[string]float64{"idle_ns_total": float64(total)},
	}
	var gapTotal int64
	for _, v := range byCause {
		gapTotal += v
	}
	for c := hostact.Cause(0); c < hostact.NumCauses; c++ {
		if gapTotal > 0 {
			f.Detail["gap_share_"+strings.ReplaceAll(c.String(), " ", "_")] = float64(byCause[c]) / float64(gapTotal)
		}
	}
	topName, best := "", int64(-1)
	for n, v := range names[top] {
		if v > best || (v == best && n < topName) {
			topName, best = n, v
		}
	}
	f.Fix, f.Code = fixFor(top, topName, byCause, gapTotal)
	p.Report(f)
	return nil, nil
}

// describe says in words how a gap divides among host causes, largest
// first, with the dominant names.
func describe(th *hostact.Thread, s hostact.Split, lo, hi int64) string {
	type part struct {
		c hostact.Cause
		v int64
	}
	var parts []part
	for c, v := range s {
		if v > 0 {
			parts = append(parts, part{hostact.Cause(c), v})
		}
	}
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].v > parts[j].v })
	total := hi - lo
	var out []string
	for i, pt := range parts {
		if i == 3 || float64(pt.v) < 0.05*float64(total) {
			break
		}
		label := "host in " + pt.c.String()
		switch pt.c {
		case hostact.NamedRange:
			if n := th.InnermostRange(lo + (hi-lo)/2); n != "" {
				label = fmt.Sprintf("host in range %q", n)
			}
		case hostact.Uninstrumented:
			label = "host busy outside any range or CUDA call"
		default:
			if n := th.Name(pt.c); n != "" {
				label = fmt.Sprintf("host in %s (%s)", pt.c, n)
			}
		}
		out = append(out, fmt.Sprintf("%s %s", label, units.Pct(float64(pt.v)/float64(total))))
	}
	if len(out) == 0 {
		return "host activity unknown"
	}
	return strings.Join(out, ", ")
}

// fixFor points from the symptom to the cause that dominates the gaps.
func fixFor(top hostact.Cause, topName string, s hostact.Split, total int64) (fix, code string) {
	if total == 0 {
		return "The idle time is made of gaps shorter than --min-gap: many small bubbles between kernels. " +
				"See launch-bound and sync-api; CUDA graphs or torch.compile remove launch overhead.",
			`model = torch.compile(model, mode="reduce-overhead")  # CUDA graphs remove per-kernel launch gaps`
	}
	share := units.Pct(float64(s[top]) / float64(total))
	switch top {
	case hostact.DataRange:
		return "Most idle gaps (" + share + ") are spent waiting for the next batch on the host: load data in " +
				"DataLoader worker processes so batches are ready when the GPU needs them (see dataloader-wait).",
			`loader = DataLoader(dataset, batch_size=B, num_workers=N, pin_memory=True, persistent_workers=True)`
	case hostact.CopyCall:
		return "Most idle gaps (" + share + ") are host-to-device copies the host waits for: copy from pinned " +
				"memory with non_blocking=True, on a side stream, while the previous step computes (see sync-memcpy, copy-compute-serial).",
			`x = x.pin_memory().to("cuda", non_blocking=True)`
	case hostact.SyncCall:
		return "Most idle gaps (" + share + ") follow host synchronisation that drains the GPU queue " +
				"(torch.cuda.synchronize, .item(), .cpu()): synchronise less often (see sync-api).",
			`if step % 50 == 0:
    print(loss.item())  # read values back every N steps, not every step`
	case hostact.OSCall:
		switch call := topName; {
		case timeline.IsMunmapLike(call):
			return "Most idle gaps (" + share + ") are " + call + " calls on the launching thread, releasing freed " +
					"host buffers: reuse batch buffers instead of freeing them each step (see munmap-stall).",
				`buf = torch.empty(shape, dtype=dtype).pin_memory()  # allocate once, reuse every step`
		case call == "ioctl":
			return "Most idle gaps (" + share + ") are ioctl calls on the launching thread: the CUDA driver at work, " +
					"typically cudaMalloc/cudaFree or context set-up inside the loop. Allocate device and pinned memory " +
					"once, outside the loop (PyTorch's caching allocators do this once warmed up).",
				`# allocate outside the loop and reuse; avoid torch.cuda.empty_cache() in the loop`
		}
		return "Most idle gaps (" + share + ") are OS calls (" + topName + ") on the launching thread: the thread " +
				"that should launch the next work is waiting on the system. Move that work off the launching thread.",
			`# move blocking I/O and system calls off the thread that launches GPU work`
	case hostact.NamedRange:
		return "Most idle gaps (" + share + ") are spent in host ranges that launch no GPU work: move that work " +
				"off the critical path (worker processes, a background thread) or onto the GPU.",
			`# move per-step host work into DataLoader workers or a background thread`
	}
	return "Most idle gaps (" + share + ") are host work outside any range or CUDA call: add " +
			"torch.profiler.record_function or NVTX ranges around the loop's phases to see what it is.",
		`with torch.profiler.record_function("get batch"):
    x, y = next(it)`
}
