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
	"github.com/traceaudit/traceaudit/analyze/passes/internal/advice"
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
call, a memory allocation call, an OS call, a data-loading range, another
named range, a host operator (cpu_op, python_function: the innermost one
spanning the gap is named), or uninstrumented host work. gpu-idle is the
symptom; the cause analyzers (dataloader-wait, sync-memcpy, munmap-stall,
copy-compute-serial, sync-api, launch-bound, alloc-churn) split it up.
Wasted time: time with no kernel running. The estimate keeps the copies
that run with no kernel (copy-engine time), which removing the gaps'
causes does not remove. Cost: O(n log n).`,
	Requires:   []*analyze.Analyzer{index.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.20, Error: 0.50},
	VerifyWith: []string{"all"},
	Observable: index.RequireKernels,
	Run:        run,
}

// DispatchGapNS: gaps inside a launching range shorter than this on
// average are launch and dispatch overhead.
const DispatchGapNS = 1_000_000

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	// The idle time is the steady steps less the kernels: |S| - |S ∩ K|;
	// its gaps are visited without building the set.
	total := ix.SteadySet.Len() - ix.SteadySet.OverlapLen(ix.AnyKernel)
	if total == 0 {
		return nil, nil
	}
	acts := hostact.NewCache(ix)
	t := newTally()
	evidence := analyze.NewTop(analyze.MaxEvidence)
	for g := range ix.SteadySet.Diff(ix.AnyKernel) {
		if g.Len() < p.Config.MinGapNS {
			continue
		}
		thread, hasThread, track := launcher(ix, g.End)
		var th *hostact.Thread
		var split hostact.Split
		if hasThread {
			th = acts.Thread(thread)
			split = th.Split(g.Start, g.End)
			t.add(th, split, g.Start, g.End)
			if track == "" {
				track = ix.Label(thread)
			}
		}
		if !evidence.Wants(g.Len(), g.Start) {
			continue
		}
		describeGap := func() string {
			what := fmt.Sprintf("no kernel for %s", units.Dur(g.Len()))
			if th != nil {
				what += "; " + describe(th, split, g.Start, g.End) + " on " + ix.Label(thread)
			}
			return what
		}
		evidence.Add(analyze.Candidate{Weight: g.Len(), Describe: describeGap, Evidence: analyze.Evidence{
			StartNS: g.Start, EndNS: g.End, Track: track}})
	}
	byCause, gaps := t.byCause, t.gaps
	per, share := ix.PerStep(total)
	// Copies that run with no kernel stay when the gaps' causes go: the
	// copy engines' time is the residual (unless another fix overlaps it).
	copyOnly, _ := ix.PerStep(ix.SteadyCovered(ix.Copies.Subtract(ix.Kernels)))
	top := byCause.Top()
	f := analyze.Finding{
		Title: idleTitle(share, per, copyOnly),
		OneOff: ix.OneOff(ix.PerSteady(func(lo, hi int64) int64 {
			return (hi - lo) - ix.AnyKernel.Covered(lo, hi)
		})),
		WastedNS:         per,
		Share:            share,
		EstimatedSpeedup: ix.Speedup(per, copyOnly, share),
		Bound:            fmt.Sprintf("copy-engine time: %s per step of copies with no kernel running stays", units.Dur(copyOnly)),
		Evidence:         evidence.Evidence(),
		Detail:           map[string]float64{"idle_ns_total": float64(total), "copy_only_ns_per_step": float64(copyOnly)},
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
	topName := t.topName(top)
	// Inside a range that launches the GPU's work, many short gaps are
	// launch and dispatch overhead; gaps of a millisecond or more are host
	// work (a metric computed on the CPU) that happens to sit in it.
	launching := false
	if topName != "" && ix.HasMain && gaps[top] > 0 {
		short := byCause[top]/int64(gaps[top]) < DispatchGapNS
		switch top {
		case hostact.NamedRange:
			launching = short && acts.Thread(ix.Main).RangeLaunches(topName)
		case hostact.HostOp:
			launching = short && acts.Thread(ix.Main).OpLaunches(topName)
		}
	}
	f.Fix, f.Code = fixFor(advice.Of(ix), top, topName, t.names[top][topName], launching, byCause, gapTotal)
	if note := profilerNote(ix, p.Timeline, top); note != "" {
		f.Fix += " " + note
	}
	if 2*copyOnly >= per {
		// The host's activity explains the gaps only in part: the GPU
		// moves data through them, and no host fix removes that.
		f.Fix = fmt.Sprintf("Copies run with no kernel beside them through %s of this idle time (%s per step): the GPU waits for "+
			"its transfers more than for the host (see sync-memcpy and copy-compute-serial; the estimate keeps the copies). "+
			"Of the rest: ", units.Pct(float64(copyOnly)/float64(per)), units.Dur(copyOnly)) + lowerFirst(f.Fix)
	}
	p.AddFinding(f)
	return nil, nil
}

// The cost of one event torch.profiler records, least and most
// (docs/calibration.md).
const (
	ProfilerEventLoNS = 600
	ProfilerEventHiNS = 2_400
)

// profilerNote says, for a PyTorch profiler trace (a profiler that records
// its own annotations: Observed.CanAnnotations) whose gaps are host
// time, how much of the step the profiler's own events may take when that
// is 5 % of it or more at the least cost, else "": host-bound figures of a
// densely recorded trace (with_stack, record_shapes) include the profiler.
func profilerNote(ix *index.Index, tl *timeline.Timeline, top hostact.Cause) string {
	if !tl.Observed.CanAnnotations || !ix.HasMain || len(ix.Steady) == 0 || ix.SteadyNS <= 0 {
		return ""
	}
	switch top {
	case hostact.HostOp, hostact.NamedRange, hostact.ReadWork, hostact.Uninstrumented:
	default:
		return ""
	}
	n := 0
	for _, i := range tl.Tracks[ix.Main].Events {
		if e := &tl.Events[i]; e.Kind != timeline.KindOS && ix.InSteady(e.Start) {
			n++
		}
	}
	perStep := float64(n) / float64(len(ix.Steady))
	step := float64(ix.SteadyNS) / float64(len(ix.Steady))
	lo, hi := perStep*ProfilerEventLoNS/step, perStep*ProfilerEventHiNS/step
	if lo < 0.05 {
		return ""
	}
	return fmt.Sprintf("The trace records %.0f events a step on the launching thread: at %s to %s an event (torch.profiler, measured on an H200), "+
		"the profiler itself may take %s to %s of the step, host time this trace counts and the unprofiled loop does not: time the loop "+
		"without the profiler (or profile without with_stack and record_shapes) before trusting the estimate.",
		perStep, units.Dur(ProfilerEventLoNS), units.Dur(ProfilerEventHiNS), units.Pct(lo), units.Pct(min(hi, 1)))
}

// lowerFirst lowers the first letter of a sentence that follows another.
func lowerFirst(s string) string {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}

// launcher finds the host thread that launched the first kernel starting
// at or after end (the work that ended a gap), and the kernel's stream; the
// main thread when no kernel or launch is known.
func launcher(ix *index.Index, end int64) (thread timeline.TrackID, ok bool, gpuTrack string) {
	tl := ix.TL
	thread, ok = ix.Main, ix.HasMain
	// The device work is in start order: the first kernel at or after end
	// is the first kernel from the first work at or after end.
	work := ix.DeviceWork
	k := sort.Search(len(work), func(i int) bool { return tl.Events[work[i]].Start >= end })
	for k < len(work) && tl.Events[work[k]].Kind != timeline.KindKernel {
		k++
	}
	if k < len(work) {
		e := &tl.Events[work[k]]
		gpuTrack = ix.Label(e.Track)
		if e.Link >= 0 {
			thread, ok = tl.Events[e.Link].Track, true
		}
	}
	return thread, ok, gpuTrack
}

// tally sums the gaps' host time by cause, counts the gaps each cause
// dominates, and sums the time per name within each cause (the innermost
// operator or range for those, the dominant call name for the others).
type tally struct {
	byCause hostact.Split
	gaps    [hostact.NumCauses]int
	names   [hostact.NumCauses]map[string]int64
}

func newTally() *tally {
	t := &tally{}
	for c := range t.names {
		t.names[c] = map[string]int64{}
	}
	return t
}

// add counts one gap [lo, hi) that split divides among causes on th.
func (t *tally) add(th *hostact.Thread, split hostact.Split, lo, hi int64) {
	t.gaps[split.Top()]++
	for c := range split {
		t.byCause[c] += split[c]
		if split[c] == 0 {
			continue
		}
		var n string
		credit := split[c]
		switch hostact.Cause(c) {
		case hostact.HostOp:
			// The operator is credited the time it spans, not the
			// gap's operator time that its callers hold around it.
			var in int64
			n, in = th.InnermostOpIn(lo, hi)
			credit = min(credit, in)
		case hostact.NamedRange:
			if n = th.InnermostRange(lo + (hi-lo)/2); n == "" {
				n = th.NameIn(hostact.NamedRange, lo, hi)
			}
		case hostact.ReadWork:
			n = th.InnermostRange(lo + (hi-lo)/2) // the range the work is in, if any
		default:
			n = th.NameIn(hostact.Cause(c), lo, hi)
		}
		if n != "" {
			t.names[c][n] += credit
		}
	}
}

// topName is the name with the most gap time under cause c (ties: the
// smaller name).
func (t *tally) topName(c hostact.Cause) string {
	name, best := "", int64(-1)
	for n, v := range t.names[c] {
		if v > best || (v == best && n < name) {
			name, best = n, v
		}
	}
	return name
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
			n := th.InnermostRange(lo + (hi-lo)/2)
			if n == "" {
				n = th.NameIn(pt.c, lo, hi) // the middle of the gap is in none
			}
			if n != "" {
				label = fmt.Sprintf("host in range %q", n)
			}
		case hostact.HostOp:
			label = "host in operators"
			if n := th.InnermostOp(lo, hi); n != "" {
				label = fmt.Sprintf("host in %s", units.Clip(n, 80))
			}
		case hostact.Uninstrumented:
			label = "host busy outside any range or CUDA call"
		case hostact.ReadWork:
			label = "host at work on values read back"
			if n := th.InnermostRange(lo + (hi-lo)/2); n != "" {
				label = fmt.Sprintf("host at work on values read back (in range %q)", n)
			}
		default:
			if n := th.NameIn(pt.c, lo, hi); n != "" {
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

// launchOverhead is the advice for idle gaps that are the host's time
// between launches (Python, operator dispatch): cut the host overhead per
// kernel.
func launchOverhead(prog advice.Program) (fix, code string) {
	return prog.Pick("Cut the host overhead: torch.compile (fusion, CUDA graphs with mode=\"reduce-overhead\"), larger batches, fewer small operations (see launch-bound).",
			"Cut the host overhead: torch.compile (fusion, CUDA graphs with mode=\"reduce-overhead\"), larger batches of inputs, fewer small operations (see launch-bound).",
			"Cut the host work between launches: capture the launches in a CUDA graph, fuse kernels, give each more work (see launch-bound)."),
		prog.Pick(`model = torch.compile(model, mode="reduce-overhead")`, `model = torch.compile(model, mode="reduce-overhead")`,
			`/* cudaStreamBeginCapture ... cudaStreamEndCapture; cudaGraphLaunch each iteration */`)
}

// fixFor points from the symptom to the cause that dominates the gaps, in
// the terms of the program (PyTorch training or inference, or CUDA).
func fixFor(prog advice.Program, top hostact.Cause, topName string, topNameNS int64, launching bool, s hostact.Split, total int64) (fix, code string) {
	if total == 0 {
		return "The idle time is made of gaps shorter than --min-gap: many small bubbles between kernels. " +
				"See launch-bound and sync-api; " + prog.Pick("CUDA graphs or torch.compile remove launch overhead.",
				"CUDA graphs or torch.compile remove launch overhead.", "CUDA graphs (stream capture) remove launch overhead."),
			prog.Pick(`model = torch.compile(model, mode="reduce-overhead")  # CUDA graphs remove per-kernel launch gaps`,
				`model = torch.compile(model, mode="reduce-overhead")  # CUDA graphs remove per-kernel launch gaps`,
				`cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);  /* launch the step's kernels */
cudaStreamEndCapture(stream, &graph); cudaGraphInstantiate(&exec, graph, 0);
cudaGraphLaunch(exec, stream);  /* each iteration: one launch */`)
	}
	share := units.Pct(float64(s[top]) / float64(total))
	switch top {
	case hostact.DataRange:
		return "Most idle gaps (" + share + ") are spent waiting for the next batch on the host (see dataloader-wait): " +
				prog.Pick("load data in DataLoader worker processes so batches are ready when the GPU needs them.",
					"prepare inputs ahead of the GPU (worker processes or a background thread building the next input's tensors).",
					"load the next batch on another thread while the GPU computes (double buffering)."),
			prog.Pick(`loader = DataLoader(dataset, batch_size=B, num_workers=N, pin_memory=True, persistent_workers=True)`,
				`# build the next inputs in a background thread or process while the GPU runs this one`,
				`/* a loader thread fills buffer (i+1)%2 while the GPU works on buffer i%2 */`)
	case hostact.FileRead:
		return "Most idle gaps (" + share + ") are file reads (" + topName + ") on the launching thread: the input " +
				"comes off storage while the GPU waits (see storage-read). " +
				prog.Pick("Read in DataLoader worker processes, keep a data set that fits in memory cached, or read larger contiguous chunks.",
					"Read the next inputs ahead on another thread or process, keep inputs that fit in memory cached, or read larger contiguous chunks.",
					"Read the next iteration's input on another thread (or with io_uring) while the GPU runs this one, or keep it cached in memory."),
			prog.Pick(`loader = DataLoader(dataset, batch_size=B, num_workers=N, pin_memory=True)  # the reads in workers`,
				`# read the next inputs in a background thread while the GPU runs this one`,
				`/* a reader thread fills buffer (i+1)%2 while the GPU works on buffer i%2 */`)
	case hostact.CopyCall:
		return "Most idle gaps (" + share + ") are host-to-device copies the host waits for: " +
				prog.Pick("copy from pinned memory with non_blocking=True, on a side stream, while the previous step computes (see sync-memcpy, copy-compute-serial).",
					"copy from pinned memory with non_blocking=True, on a side stream, while the previous input computes (see sync-memcpy, copy-compute-serial).",
					"copy from pinned host memory (cudaMallocHost or cudaHostRegister) with cudaMemcpyAsync on a second stream while the previous iteration computes (see sync-memcpy, copy-compute-serial)."),
			prog.Pick(`x = x.pin_memory().to("cuda", non_blocking=True)`, `x = x.pin_memory().to("cuda", non_blocking=True)`,
				`cudaMallocHost(&h_buf, bytes);                       /* once */
cudaMemcpyAsync(d_buf, h_buf, bytes, cudaMemcpyHostToDevice, copy_stream);`)
	case hostact.SyncCall:
		return "Most idle gaps (" + share + ") follow host synchronisation that drains the GPU queue " +
				prog.Pick("(torch.cuda.synchronize, .item(), .cpu()): synchronise less often (see sync-api).",
					"(torch.cuda.synchronize, .item(), .cpu()): synchronise less often (see sync-api).",
					"(cudaDeviceSynchronize, cudaStreamSynchronize, blocking cudaMemcpy): synchronise once per iteration, or wait on events (see sync-api)."),
			prog.Pick(`if step % 50 == 0:
    print(loss.item())  # read values back every N steps, not every step`, `# read results back once per input or batch, not after every operation`,
				`/* launch the iteration's kernels, then one cudaStreamSynchronize (or cudaEventSynchronize) per iteration */`)
	case hostact.AllocCall:
		return "Most idle gaps (" + share + ") are device memory allocation calls (" + topName + ") on the launching thread: " +
				prog.Pick("the caching allocator is off or emptied every step (torch.cuda.empty_cache(), PYTORCH_NO_CUDA_MEMORY_CACHING); allocate once and reuse (see alloc-churn).",
					"the caching allocator is off or emptied between inputs (torch.cuda.empty_cache(), PYTORCH_NO_CUDA_MEMORY_CACHING); allocate once and reuse (see alloc-churn).",
					"allocate device memory once outside the loop, or use the stream-ordered allocator (cudaMallocAsync) with a memory pool (see alloc-churn)."),
			prog.Pick(`# remove torch.cuda.empty_cache() from the loop; unset PYTORCH_NO_CUDA_MEMORY_CACHING`,
				`# remove torch.cuda.empty_cache() from the inference loop; unset PYTORCH_NO_CUDA_MEMORY_CACHING`,
				`cudaMallocAsync(&p, bytes, stream); /* ... */ cudaFreeAsync(p, stream);  /* pooled, no device-wide sync */`)
	case hostact.OSCall, hostact.OSWait:
		switch call := topName; {
		case timeline.IsMunmapLike(call):
			return "Most idle gaps (" + share + ") are " + call + " calls on the launching thread, releasing freed " +
					"host buffers: reuse batch buffers instead of freeing them each step (see munmap-stall).",
				prog.Pick(`buf = torch.empty(shape, dtype=dtype).pin_memory()  # allocate once, reuse every step`,
					`buf = torch.empty(shape, dtype=dtype).pin_memory()  # allocate once, reuse for every input`,
					`/* allocate the host buffers once (cudaMallocHost) and reuse them every iteration */`)
		case call == "ioctl":
			return "Most idle gaps (" + share + ") are ioctl calls on the launching thread: the CUDA driver at work, " +
					"typically cudaMalloc/cudaFree or context set-up inside the loop. Allocate device and pinned memory " +
					"once, outside the loop.",
				prog.Pick(`# allocate outside the loop and reuse; avoid torch.cuda.empty_cache() in the loop`,
					`# allocate outside the inference loop and reuse; avoid torch.cuda.empty_cache()`,
					`/* cudaMalloc / cudaMallocHost once before the loop */`)
		}
		return "Most idle gaps (" + share + ") are OS calls (" + topName + ") on the launching thread: the thread " +
				"that should launch the next work is waiting on the system. Move that work off the launching thread.",
			`# move blocking I/O and system calls off the thread that launches GPU work`
	case hostact.ReadWork:
		where := ""
		if topName != "" {
			where = fmt.Sprintf(", mostly in %q", units.Clip(topName, 60))
		}
		fix, code := prog.ReadBackWork()
		return "Most idle gaps (" + share + ") are host work on values just read back from the GPU (after .item() or .cpu()" + where +
			"): the read emptied the GPU's queue, so nothing runs while the host computes on them (see sync-api). " + fix, code
	case hostact.NamedRange:
		where := ""
		if topName != "" {
			where = fmt.Sprintf(" (mostly %q)", units.Clip(topName, 60))
		}
		if launching {
			fix, code := launchOverhead(prog)
			return "Most idle gaps (" + share + ") are host work inside a range that launches the GPU's work" + where +
				": the host takes longer between launches (Python, operator dispatch) than the kernels run. " + fix, code
		}
		return "Most idle gaps (" + share + ") are host work inside ranges" + where + " while the GPU has nothing to run: " +
				prog.Pick("move that work off the training loop's critical path: do it on the GPU, less often (every N steps), or in a background thread; data preparation belongs in DataLoader workers.",
					"move that work off the critical path (a background thread, overlapping it with the previous input's GPU work) or onto the GPU.",
					"move that work to another thread, overlap it with the GPU's work of the previous iteration, or port it to the GPU."),
			prog.Pick(`# e.g. accumulate metrics on the GPU and read them every N steps; prepare data in DataLoader workers`,
				`# overlap host pre/post-processing with GPU work: a background thread or a second process`,
				`/* run the host work of iteration i+1 while the GPU runs iteration i */`)
	case hostact.HostOp:
		what := "host operators"
		switch {
		case topName != "" && 10*topNameNS >= 9*s[top]:
			what = units.Clip(topName, 80)
		case topName != "":
			// The operator's own share: the operators around it hold
			// the rest.
			what = fmt.Sprintf("host operators, most in %s (%s of the idle gaps)", units.Clip(topName, 80), units.Pct(float64(topNameNS)/float64(total)))
		}
		if launching {
			fix, code := launchOverhead(prog)
			return "Most idle gaps (" + share + ") are host time inside " + what + ", which launches the GPU's work: " +
				"the host takes longer to dispatch and launch it than the kernels run. " + fix, code
		}
		return "Most idle gaps (" + share + ") are host work in " + what + " while the GPU waits: " +
				prog.Pick("move it off the training loop's critical path (DataLoader workers for data preparation) or onto the GPU, or overlap it with GPU work.",
					"this is host-side pre- or post-processing or Python overhead; run it on the GPU, batch several inputs per call, or overlap it with the previous input's GPU work (a background thread or process).",
					"move it to another thread or onto the GPU, or overlap it with the GPU's work."),
			prog.Pick(`# move per-step host preprocessing into Dataset.__getitem__ (DataLoader workers) or onto the GPU`,
				`# preprocess on the GPU (e.g. torchvision.transforms.v2 on CUDA tensors) or overlap it with GPU work`,
				`/* overlap host work with GPU work of the previous iteration */`)
	}
	return "Most idle gaps (" + share + ") are host work outside any range or CUDA call: " +
			prog.Pick("add torch.profiler.record_function or NVTX ranges around the loop's phases to see what it is.",
				"add torch.profiler.record_function or NVTX ranges around pre-processing, the model call and post-processing to see what it is.",
				"add NVTX ranges (nvtxRangePush/Pop) around the loop's phases and capture with nsys --trace=cuda,nvtx to see what it is."),
		prog.Pick(`with torch.profiler.record_function("get batch"):
    x, y = next(it)`, `with torch.profiler.record_function("preprocess"):
    inputs = processor(raw)`, `nvtxRangePushA("phase"); /* ... */ nvtxRangePop();`)
}

// idleTitle says how much of the step no kernel runs, and how much of that
// copies fill, so that it agrees with the GPU's busy time (copies count
// there).
func idleTitle(share float64, per, copyOnly int64) string {
	t := fmt.Sprintf("no kernel runs %s of each step (%s per step", units.Pct(share), units.Dur(per))
	if copyOnly > 0 {
		t += fmt.Sprintf("; copies alone run in %s of it", units.Dur(copyOnly))
	}
	return t + ")"
}
