// Package launchbound defines the launch-bound analyzer: many short
// kernels, each launched by its own API call, with the GPU idle between
// them while the host launches.
package launchbound

import (
	"fmt"
	"slices"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/fix"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/advice"
	"github.com/traceaudit/traceaudit/internal/hugepage"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// Thresholds of design.md.
const (
	MinKernelsPerStep = 20
	MaxMedianNS       = 20_000
	// MaxLaunchLagNS: a gap counts only when the next kernel's launch call
	// began within this long after the GPU ran dry (the host was busy
	// dispatching and launching, not away doing something else).
	MaxLaunchLagNS = 100_000
	// GraphGapNS is the gap that remains between kernels replayed from a
	// CUDA graph: the residual of the fix, as measured on an H200
	// (docs/calibration.md).
	GraphGapNS = 300
)

// Analyzer is launch-bound.
var Analyzer = &analyze.Analyzer{
	ID:    "launch-bound",
	Title: "launch-bound: many short kernels, the GPU waits for launches",
	Doc: `launch-bound applies when steady steps run at least 20 kernels each with a
median kernel time under 20 µs, each launched by its own API call (kernels
replayed from CUDA graphs, launched by cudaGraphLaunch or hipGraphLaunch, do
not count). It counts the idle time between consecutive such kernels when
the next kernel's launch call had not returned before the previous kernel
ended and began no later than 100 µs after it: the GPU outran a host that
was busy dispatching and launching. The threshold is a few dozen kernels
per step, not hundreds, so that eager inference with a few dozen µs-long
kernels per step and the GPU mostly idle is caught; the title says how much
of the GPU's idle time the launch gaps are.
Wasted time: that idle time, where no other cause (copy, sync, OS, data)
claims it. The estimate keeps about 2 µs per gap, the spacing of kernels
replayed from a CUDA graph. Cost: O(n log n).`,
	Requires:   []*analyze.Analyzer{index.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.10, Error: 0.30},
	VerifyWith: []string{"cuda-graph"},
	Observable: func(p *analyze.Pass) (bool, string) {
		if !p.Timeline.Observed.APICalls {
			return false, "the trace has no host CUDA API calls, so launches cannot be linked to kernels"
		}
		return index.RequireKernels(p)
	},
	Run: run,
}

// Detail is the typed form of a launch-bound finding's detail map: its
// typed fix (what the replay needs to launch the same kernels at the same
// pace) and the figures beside it.
type Detail struct {
	fix.Launches
	// MedianKernelNS is the individually launched kernels' median
	// duration.
	MedianKernelNS int64 `detail:"median_kernel_ns"`
	// LaunchGaps is the number of idle gaps counted.
	LaunchGaps int `detail:"launch_gaps"`
	// LaunchCallNS is the median duration of the launch calls themselves.
	LaunchCallNS int64 `detail:"launch_call_ns"`
	// GraphKernels counts the steady kernels replayed from CUDA graphs
	// (not counted as launches).
	GraphKernels int `detail:"graph_kernels"`
	// ShareOfIdle is the launch gaps' share of the GPU's idle time.
	ShareOfIdle float64 `detail:"share_of_idle"`
}

// DetailOf reads f's detail; ok is false when a key is missing.
func DetailOf(f *analyze.Finding) (d Detail, ok bool) { return d, analyze.DecodeDetail(f, &d) }

// IntervalTailX bounds the launch intervals LaunchIntervalMeanNS averages:
// up to this many times their median.
const IntervalTailX = 10

// meanUpTo is the mean of the values of v no greater than limit (0 when
// there are none).
func meanUpTo(v []int64, limit int64) int64 {
	var sum, n int64
	for _, x := range v {
		if x <= limit {
			sum += x
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[(len(v)-1)/2]
}

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	// ks are the short-kernel candidates: kernels of steady steps, each
	// launched by its own call (graph replays excluded).
	ks := hugepage.Make[int32](0, ix.Count[timeline.KindKernel]) // huge pages: fresh memory faults in 2 MB at a time
	durs := hugepage.Make[int64](0, ix.Count[timeline.KindKernel])
	defer hugepage.Free(ks) // temporaries: their pages go back at the end
	defer hugepage.Free(durs)
	graph := 0
	steady := ix.SteadySet.Cursor() // events come in order of start
	for _, i := range ix.DeviceWork {
		e := &tl.Events[i]
		if e.Kind != timeline.KindKernel || e.Has(timeline.FlagComm) || !steady.Contains(e.Start) {
			continue
		}
		if e.Has(timeline.FlagGraph) {
			graph++
			continue
		}
		if e.Link < 0 || tl.Events[e.Link].API != timeline.APILaunch {
			continue
		}
		ks = append(ks, i)
		durs = append(durs, e.Dur())
	}
	steps := max(len(ix.Steady), 1)
	if len(ks)/steps < MinKernelsPerStep {
		return nil, nil
	}
	var kernelNS int64
	for _, d := range durs {
		kernelNS += d
	}
	med := median(durs)
	if med >= MaxMedianNS {
		return nil, nil
	}
	// The host's time per launch: from one launch call's start to the next
	// one's, median over consecutive launches (the gaps between steps fall
	// in the tail). The medians reuse durs' memory.
	calls := durs[:0]
	for _, i := range ks {
		calls = append(calls, tl.Events[tl.Events[i].Link].Dur())
	}
	callMed := median(calls)
	intervals := calls[:0]
	for j, i := range ks[1:] {
		launch := &tl.Events[tl.Events[i].Link]
		prev := &tl.Events[tl.Events[ks[j]].Link]
		if d := launch.Start - prev.Start; d > 0 {
			intervals = append(intervals, d)
		}
	}
	intervalMed := median(intervals)
	intervalMean := meanUpTo(intervals, IntervalTailX*intervalMed)
	other := ix.Buckets[index.Other]
	var total int64
	var gaps int
	evidence := analyze.NewTop(analyze.MaxEvidence)
	prevEnd := tl.Events[ks[0]].End
	for _, i := range ks[1:] {
		e := &tl.Events[i]
		launch := &tl.Events[e.Link]
		if e.Start > prevEnd && launch.End > prevEnd && launch.Start-prevEnd <= MaxLaunchLagNS {
			w := other.Covered(prevEnd, e.Start)
			if gapStart := prevEnd; w > 0 {
				total += w
				gaps++
				if evidence.Wants(w, gapStart) {
					evidence.Add(analyze.Candidate{Weight: w, Evidence: analyze.Evidence{
						StartNS: prevEnd, EndNS: e.Start, Track: ix.Label(launch.Track)}, Describe: func() string {
						return fmt.Sprintf("GPU idle %s waiting for the launch of %s (%s)", units.Dur(e.Start-gapStart), units.Clip(tl.Name(e.Name), 60), units.Dur(e.Dur()))
					}})
				}
			}
		}
		prevEnd = max(prevEnd, e.End)
	}
	if total == 0 {
		return nil, nil
	}
	per, share := ix.PerStep(total)
	// Idle: the steady steps less the kernels, |S \ K| = |S| - |S ∩ K|.
	idle, _ := ix.PerStep(ix.SteadySet.Len() - ix.SteadySet.OverlapLen(ix.Kernels))
	residual := int64(gaps/steps) * GraphGapNS
	f := analyze.Finding{
		Title: fmt.Sprintf("launch-bound: %d kernels per step, median %s; the GPU waits for launches %s of each step (%s of its idle time)",
			len(ks)/steps, units.Dur(med), units.Pct(share), units.Pct(float64(per)/float64(max(idle, 1)))),
		WastedNS:         per,
		Share:            share,
		EstimatedSpeedup: ix.Speedup(per, residual, share),
		Bound:            fmt.Sprintf("kernels replayed from a CUDA graph still leave about %s between them: %s per step stays", units.Dur(GraphGapNS), units.Dur(min(residual, per))),
		Evidence:         evidence.Evidence(),
		Detail: analyze.DetailMap(Detail{Launches: fix.Launches{KernelsPerStep: len(ks) / steps,
			KernelNSPerStep: kernelNS / int64(steps), LaunchIntervalNS: intervalMed, LaunchIntervalMeanNS: intervalMean},
			MedianKernelNS: med, LaunchGaps: gaps, LaunchCallNS: callMed,
			GraphKernels: graph, ShareOfIdle: float64(per) / float64(max(idle, 1))}),
	}
	f.Fix, f.Code = fixText(advice.Of(ix), graph > 0)
	p.AddFinding(f)
	return nil, nil
}

// fixText writes the advice; graphs says the step already replays CUDA graphs
// for some of its kernels.
func fixText(prog advice.Program, graphs bool) (fix, code string) {
	fix = "The kernels are shorter than it takes the host to launch them, so the GPU drains its queue and waits. "
	if graphs {
		fix += "The step already replays CUDA graphs; the kernels launched one by one outside them are what the GPU waits for: " +
			"bring them into the captured region, fuse them, or give each more work (larger batches)."
		return fix, prog.Pick(`# widen the captured region (torch.cuda.graphs / torch.compile) to the eager ops between graph replays`,
			`# widen the captured region (torch.cuda.graphs / torch.compile) to the eager ops between graph replays`,
			`/* capture the remaining launches into the graph as well (cudaStreamBeginCapture ... cudaStreamEndCapture) */`)
	}
	fix += prog.Pick("Capture the step in a CUDA graph (torch.compile(mode=\"reduce-overhead\") or torch.cuda.graphs), fuse small "+
		"operations (torch.compile), or give each kernel more work (larger batches).",
		"Replay the forward pass as a CUDA graph (torch.compile(mode=\"reduce-overhead\"), torch.cuda.graphs, or the serving engine's CUDA graph mode "+
			"instead of eager mode), fuse small operations (torch.compile), or batch more inputs per step.",
		"Capture the iteration's launches into a CUDA graph (cudaStreamBeginCapture/cudaStreamEndCapture, cudaGraphInstantiate) and launch it "+
			"with one cudaGraphLaunch, fuse small kernels, or give each kernel more work.")
	code = prog.Pick(`model = torch.compile(model, mode="reduce-overhead")   # fuses ops and replays the step as a CUDA graph`,
		`model = torch.compile(model, mode="reduce-overhead")   # fuses ops and replays the forward pass as a CUDA graph`,
		`cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
/* launch the iteration's kernels on s */
cudaStreamEndCapture(s, &graph);
cudaGraphInstantiate(&exec, graph, 0);
for (int i = 0; i < n; i++) cudaGraphLaunch(exec, s);`)
	return fix, code
}
