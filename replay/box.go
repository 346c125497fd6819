package replay

import (
	"fmt"
	"math"
	"time"

	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
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
	// KernelNS is one launch-bound kernel's GPU time here, back to back in
	// a CUDA graph of the step's kernels, in ns: the replay's floor for
	// each of them, beside the trace's Launches.KernelNS.
	KernelNS int64 `json:"kernel_ns,omitempty"`
}

// kernelNote says when the shortest kernels this replay launches take
// longer here than the trace's launch-bound kernels did, and what that
// does to the cuda-graph variant.
func kernelNote(box *Box, l *Launches) string {
	if box == nil || l == nil || box.KernelNS <= 0 || l.KernelNS <= 0 || float64(box.KernelNS) <= (1+BoxTolerance)*float64(l.KernelNS) {
		return ""
	}
	x := float64(box.KernelNS) / float64(l.KernelNS)
	return fmt.Sprintf("each replayed launch-bound kernel takes %s here back to back in a CUDA graph, %.1fx the %s of the trace's %d kernels: "+
		"the launch phase's GPU time replays %.1fx the trace's, and a cuda-graph step bound by its kernels replays slower than a graph of the real kernels would run",
		units.Dur(box.KernelNS), x, units.Dur(l.KernelNS), l.Kernels, x)
}

// BoxReps is how many times each kind of copy is timed.
const BoxReps = 3

// BoxTolerance is the relative difference between the box's and the
// trace's bandwidth above which the report says they differ.
const BoxTolerance = 0.20

// measureBox times the plan's host-to-device copies from pageable and from
// pinned memory on the compute stream. It returns nil when the plan copies
// nothing to the device.
func (r *rig) measureBox() (*Box, error) {
	var idx []int
	var biggest, total int64
	for i, c := range r.p.Step.Copies {
		if c.Dir == timeline.CopyHtoD {
			idx = append(idx, i)
			biggest = max(biggest, c.Bytes)
			total += c.Bytes
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	ex := r.ex
	pinned, err := ex.AllocPinned(biggest)
	if err != nil {
		return nil, err
	}
	defer ex.FreePinned(pinned)
	pageable := make([]byte, biggest)
	fill(pageable, 1)
	fill(pinned, 2)
	rate := func(src []byte, isPinned bool) (float64, error) {
		var runs []int64
		for range BoxReps {
			var el time.Duration
			for _, i := range idx {
				n := r.p.Step.Copies[i].Bytes
				t, err := ex.Record(r.compute)
				if err != nil {
					return 0, err
				}
				errCopy := ex.CopyHtoD(r.compute, r.dev[0][i], src[:n], isPinned)
				u, errRec := ex.Record(r.compute)
				if errCopy == nil && errRec == nil {
					errCopy = ex.Sync(r.compute)
				}
				if errCopy == nil && errRec == nil {
					var d time.Duration
					d, errCopy = ex.Elapsed(t, u)
					el += d
				}
				ex.Release(t)
				if errRec == nil {
					ex.Release(u)
				}
				if errCopy != nil {
					return 0, errCopy
				}
				if errRec != nil {
					return 0, errRec
				}
			}
			runs = append(runs, el.Nanoseconds())
		}
		m := median(runs)
		if m <= 0 {
			return 0, fmt.Errorf("copies of %d bytes took no measurable time", total)
		}
		return float64(total) / float64(m), nil
	}
	b := &Box{Bytes: total}
	if b.PageableGBps, err = rate(pageable, false); err != nil {
		return nil, err
	}
	if b.PinnedGBps, err = rate(pinned, true); err != nil {
		return nil, err
	}
	return b, nil
}

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
