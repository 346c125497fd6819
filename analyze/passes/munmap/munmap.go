// Package munmap defines the munmap-stall analyzer: host memory released
// to the OS (munmap, madvise, brk) on threads that feed the GPU, while the
// GPU has nothing to run.
package munmap

import (
	"fmt"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// Analyzer is munmap-stall.
var Analyzer = &analyze.Analyzer{
	ID:    "munmap-stall",
	Title: "munmap of freed host buffers stalls the threads that feed the GPU",
	Doc: `munmap-stall finds munmap (and madvise, brk/sbrk shrinking the heap) on a thread
that launches kernels or copies in steady steps. Large pageable batches are
allocated with mmap by glibc (above M_MMAP_THRESHOLD) and returned with munmap
when freed: the kernel unmaps and zeroes pages while the thread that should
launch the next work waits (pytorch/pytorch#91353).
Needs OS runtime calls (nsys --trace=osrt); Chrome traces never have them.
Wasted time: those calls' time while the GPU runs neither kernels nor copies.
Cost: O(n log n).`,
	Requires:   []*analyze.Analyzer{index.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.05, Error: 0.15},
	VerifyWith: []string{"reuse-buffers"},
	Observable: func(p *analyze.Pass) (bool, string) {
		if o := p.Timeline.Observed; !o.OSCalls {
			if !o.CanOSCalls {
				return false, "this trace's profiler does not record OS runtime calls (the PyTorch profiler never does): capture with nsys profile --trace=cuda,nvtx,osrt to see munmap"
			}
			return false, "the profile has no OS runtime calls: capture with nsys profile --trace=cuda,nvtx,osrt"
		}
		return true, ""
	},
	Run: run,
}

// Detail is the typed form of a munmap-stall finding's detail map.
type Detail struct {
	// CallsPerStep is the number of munmap-like calls per steady step.
	CallsPerStep float64 `detail:"calls_per_step"`
	// MeanCallNS is their mean duration in nanoseconds.
	MeanCallNS int64 `detail:"mean_call_ns"`
}

// DetailOf reads f's detail; ok is false when a key is missing.
func DetailOf(f *analyze.Finding) (d Detail, ok bool) { return d, analyze.DecodeDetail(f, &d) }

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	// Threads that launch kernels or copies in steady steps.
	feeders := map[timeline.TrackID]bool{}
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind == timeline.KindAPI && (e.API == timeline.APILaunch || e.API.IsCopy()) && ix.InSteady(e.Start) {
			feeders[e.Track] = true
		}
	}
	var calls []int32
	var spans []ivl.Interval
	var sum int64
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind != timeline.KindOS || !feeders[e.Track] || !timeline.IsMunmapLike(tl.Name(e.Name)) || !ix.InSteady(e.Start) {
			continue
		}
		calls = append(calls, int32(i))
		spans = append(spans, ivl.Interval{Start: e.Start, End: e.End})
		sum += e.Dur()
	}
	if len(calls) == 0 {
		return nil, nil
	}
	callsPerStep := float64(len(calls)) / float64(max(len(ix.Steady), 1))
	meanNS := sum / int64(len(calls))
	wasted := ivl.Union(spans).Subtract(ix.Work).Intersect(ix.SteadySet)
	total := wasted.Len()
	if total == 0 {
		return nil, nil
	}
	var cands []analyze.Candidate
	for _, i := range calls {
		e := &tl.Events[i]
		w := wasted.Covered(e.Start, e.End)
		cands = append(cands, analyze.Candidate{Weight: w, Evidence: analyze.Evidence{
			StartNS: e.Start, EndNS: e.End, Track: ix.Label(e.Track)}, Describe: func() string {
			return fmt.Sprintf("%s for %s, %s of it with the GPU idle", tl.Name(e.Name), units.Dur(e.Dur()), units.Dur(w))
		}})
	}
	per, share := ix.PerStep(total)
	f := analyze.Finding{
		Title: fmt.Sprintf("munmap stalls: %.1f calls per step, %s of each step with the GPU idle (%s per step)",
			callsPerStep, units.Pct(share), units.Dur(per)),
		WastedNS: per,
		Share:    share,
		Evidence: analyze.TopEvidence(cands, analyze.MaxEvidence),
		Detail:   analyze.DetailMap(Detail{CallsPerStep: callsPerStep, MeanCallNS: meanNS}),
		Fix: "Each step frees large pageable host buffers (the batch, or the pinned-memory thread's staging copies) and glibc " +
			"returns them to the OS with munmap, which the launching thread waits for. Allocate batch buffers once and reuse them " +
			"(a preallocated pinned buffer that each batch is copied into). For buffers under 32 MiB, glibc's mmap threshold " +
			"(MALLOC_MMAP_THRESHOLD_, at most 32 MiB on 64-bit) can keep freed memory in the process instead.",
		Code: `# allocate the staging buffer once and reuse it every step
staging = torch.empty(batch_shape, dtype=torch.float32).pin_memory()
for batch in loader:
    staging.copy_(batch)                          # no new allocation, nothing to munmap
    x = staging.to("cuda", non_blocking=True)
# (a real loop double-buffers staging or waits on an event before reusing it)`,
	}
	p.Report(f)
	return nil, nil
}
