package replay

import (
	"fmt"
	"math"
	"slices"

	"github.com/traceaudit/traceaudit/internal/units"
)

// Box is what the machine that replays measured before the variants: the
// host-to-device copy bandwidth at the plan's copy sizes, what its pageable
// and pinned copies reach, to set beside the trace's (TraceGBps), and the
// building blocks of the replayed host phases and launches.
type Box struct {
	// PageableGBps and PinnedGBps are bytes over GPU time (CUDA events) of
	// copies of the plan's sizes from pageable and from pinned memory,
	// median of BoxReps runs, in GB/s (0 when the plan copies nothing to
	// the device).
	PageableGBps float64 `json:"pageable_gbps"`
	PinnedGBps   float64 `json:"pinned_gbps"`
	// Bytes is the size copied per run (the plan's host-to-device copies
	// together).
	Bytes int64 `json:"bytes"`
	// BuildNS is one batch built here the way the observed loop builds it
	// (memory traffic only: warm or fresh pages, or a worker's shared
	// memory), the part of the observed data phase replayed as memory
	// traffic; UnmapNS is the main thread's munmap of it (0: never
	// unmapped). Both best of 2, in ns.
	BuildNS int64 `json:"build_ns,omitempty"`
	UnmapNS int64 `json:"unmap_ns,omitempty"`
	// BuildWarmNS is the same batch built here into warm pages, where the
	// observed loop builds it into fresh ones (best of 2, in ns): what the
	// reuse-buffers variant's data phase keeps of the build.
	BuildWarmNS int64 `json:"build_warm_ns,omitempty"`
	// KernelNS is one replayed launch-bound kernel's GPU time here, back
	// to back in a CUDA graph of the step's kernels, in ns: what each of
	// them counts for in the replayed GPU time, beside the trace's
	// Launches.KernelNS.
	KernelNS int64 `json:"kernel_ns,omitempty"`
	// KernelFloorNS is one empty kernel's GPU time here, back to back in
	// the same graph, in ns: what any kernel costs on this GPU at the
	// least. All of it but KernelGapNS is taken out of each replayed
	// kernel's spin (the trace's kernel duration already holds it).
	KernelFloorNS int64 `json:"kernel_floor_ns,omitempty"`
	// KernelGapNS is the part of KernelFloorNS taken as the GPU's gap
	// between kernels in a graph, which no kernel duration holds
	// (GraphGapShare of it), in ns: KernelNS is about the trace's kernel
	// duration plus it.
	KernelGapNS int64 `json:"kernel_gap_ns,omitempty"`
}

// kernelBusy is a replayed launch-bound kernel's time as a profiler would
// show it: back to back, less the gap between kernels.
func (box *Box) kernelBusy() int64 { return max(box.KernelNS-box.KernelGapNS, 0) }

// kernelNote says when the shortest kernels this replay launches take
// longer here than the trace's launch-bound kernels did, and what that
// does to the cuda-graph variant.
func kernelNote(box *Box, l *Launches) string {
	if box == nil || l == nil || box.KernelNS <= 0 || l.KernelNS <= 0 || float64(box.kernelBusy()) <= (1+BoxTolerance)*float64(l.KernelNS) {
		return ""
	}
	busy := box.kernelBusy()
	x := float64(busy) / float64(l.KernelNS)
	why := ""
	if floor := box.KernelFloorNS - box.KernelGapNS; box.KernelFloorNS > 0 && floor >= l.KernelNS {
		why = fmt.Sprintf(" (an empty kernel takes %s here: the trace's kernels are shorter than any kernel this GPU runs)", units.Dur(floor))
	}
	return fmt.Sprintf("each replayed launch-bound kernel takes %s here (back to back in a CUDA graph, less the gap between kernels), %.1fx the %s of the trace's %d kernels%s: "+
		"the launch phase's GPU time replays %.1fx the trace's, and a cuda-graph step bound by its kernels replays slower than a graph of the real kernels would run",
		units.Dur(busy), x, units.Dur(l.KernelNS), l.Kernels, why, x)
}

// reuseNote says, where a variant reuses the batch buffers of a loop that
// builds its batches into fresh pages, what the variant's gain rests on:
// this machine's and this build's cost of fresh pages, which need not be
// PyTorch's.
func reuseNote(box *Box, vs []Variant) string {
	if box == nil || box.BuildNS <= 0 || box.BuildWarmNS <= 0 || !slices.ContainsFunc(vs, func(v Variant) bool { return v.Plan.ReuseBuffers }) {
		return ""
	}
	return fmt.Sprintf("reuse-buffers: a batch built here took %s into fresh pages and %s into reused ones, so the variant gains %s a step "+
		"of the data phase, and the munmap: this machine's cost of fresh pages under this replay's build, not necessarily PyTorch's "+
		"(calibration run 12, an H200, 64 MiB with one CPU thread, the median of 16 builds: PyTorch's fill_ and add_ took 35.8 to 42.8 ms fresh and "+
		"16.3 to 19.8 ms reused, this build 39.8 to 41.8 and 16.8 to 20.3 ms; the munmap pair's replayed speedup came out at 0.89 to 1.15 "+
		"of the real one in seven of eight replays, 1.24 in one made while the box's pageable copies ran at 0.59 of their speed around the "+
		"real runs, its fixed step at 1.08 to 1.22 of the real one)",
		units.Dur(box.BuildNS), units.Dur(box.BuildWarmNS), units.Dur(max(box.BuildNS-box.BuildWarmNS, 0)))
}

// graphNote says, where a variant captured the launch-bound kernels into a
// CUDA graph, what each replayed kernel takes there and what of it is a
// model: the GPU's gap between graph kernels, which a trace of kernels
// launched one by one cannot show, taken as GraphGapShare of this GPU's
// empty-kernel floor.
func graphNote(box *Box, l *Launches, vs []Variant) string {
	if box == nil || l == nil || box.KernelNS <= 0 || box.KernelFloorNS <= 0 || !slices.ContainsFunc(vs, func(v Variant) bool { return v.Plan.CUDAGraph }) {
		return ""
	}
	return fmt.Sprintf("cuda-graph: each of the %d replayed kernels takes %s back to back here: the trace's %s plus the GPU's gap between "+
		"kernels in a graph, which a trace of kernels launched one by one cannot show, taken as %s (%.0f %% of the %s an empty kernel takes "+
		"back to back in a graph here: the share measured on an H200, where PyTorch's graph of 800 elementwise kernels of 928 ns ran 1.20 µs "+
		"a kernel); where the kernels bound the step, the cuda-graph step is as right as that gap",
		l.Kernels, units.Dur(box.KernelNS), units.Dur(l.KernelNS), units.Dur(box.KernelGapNS), 100*GraphGapShare, units.Dur(box.KernelFloorNS))
}

// BoxReps is how many times each kind of copy is timed.
const BoxReps = 3

// BoxTolerance is the relative difference between the box's and the
// trace's bandwidth above which the report says they differ.
const BoxTolerance = 0.20

// bandwidthNotes compares the box's bandwidth with the trace's for each
// kind of copy the trace made, and says where they differ by more than
// BoxTolerance, and what that does to the replay.
func bandwidthNotes(box *Box, tr TraceGBps) []string {
	if box == nil {
		return nil
	}
	var out []string
	for _, k := range []struct {
		kind       string
		here, then float64
	}{{"pageable", box.PageableGBps, tr.Pageable}, {"pinned", box.PinnedGBps, tr.Pinned}} {
		if k.then <= 0 || k.here <= 0 {
			continue
		}
		d := k.here/k.then - 1
		if math.Abs(d) <= BoxTolerance {
			continue
		}
		way := "faster"
		if d < 0 {
			way = "slower"
		}
		out = append(out, fmt.Sprintf("%s copies run %.0f %% %s on this box (%.1f GB/s) than in the trace (%.1f GB/s): "+
			"replayed copy times, and the speedups of fixes that change copies, differ from the trace's machine by as much",
			k.kind, 100*math.Abs(d), way, k.here, k.then))
	}
	return out
}
