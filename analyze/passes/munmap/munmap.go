// Package munmap defines the munmap-stall analyzer: host memory released
// to the OS (munmap, madvise, brk) on threads that feed the GPU, while the
// GPU has nothing to run.
package munmap

import (
	"fmt"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/fix"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/advice"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/hostact"
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
nsys records only the calls a library makes through libc's exported
functions, not the munmap that glibc's free() makes inside libc for an
allocation of 32 MiB or more (its largest mmap threshold): where the
threads that feed the GPU copy pageable buffers that large each step, have
the time to write them afresh, and no munmap shows, the analyzer cannot
tell fresh batches from reused ones and says so.
Wasted time: those calls' time while the GPU runs neither kernels nor copies.
Cost: O(n log n).`,
	Requires:   []*analyze.Analyzer{index.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.05, Error: 0.15},
	VerifyWith: []string{"reuse-buffers"},
	Observable: func(p *analyze.Pass) (bool, string) {
		if o := p.Timeline.Observed; !o.OSCalls {
			if !o.CanOSCalls {
				return false, hostact.NoOSCallsProfiler
			}
			return false, hostact.NoOSCalls
		}
		if why := hiddenMunmap(p); why != "" {
			return false, why
		}
		return true, ""
	},
	Run: run,
}

// Detail is the typed form of a munmap-stall finding's detail map: its
// typed fix (CallsPerStep) and the calls' mean duration.
type Detail struct {
	fix.Munmap
	// MeanCallNS is their mean duration in nanoseconds.
	MeanCallNS int64 `detail:"mean_call_ns"`
}

// DetailOf reads f's detail; ok is false when a key is missing.
func DetailOf(f *analyze.Finding) (d Detail, ok bool) { return d, analyze.DecodeDetail(f, &d) }

// GlibcMmapMax is glibc's largest mmap threshold on 64-bit (32 MiB): an
// allocation this large always gets a mapping of its own, unmapped by
// free() with a call inside libc that nsys's OS runtime trace never sees.
const GlibcMmapMax = 32 << 20

// writeGBps is the fastest one thread writes a new batch, in GB/s (bytes
// per ns), page faults included: a few GB/s, 10 at most.
const writeGBps = 10

// hiddenMunmap is why munmap stalls cannot be judged in a trace with OS
// calls: the threads that feed the GPU copy pageable buffers of
// GlibcMmapMax or more to the device in steady steps, and no munmap-like
// call of theirs shows ("" when one does, when no copy is that large, or
// when the step leaves no time to write such a buffer afresh): glibc
// frees such a buffer with munmap, yet a trace can record none of it.
func hiddenMunmap(p *analyze.Pass) string {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	feed := hostact.Feeders(tl, ix)
	var biggest int64
	for i := range tl.Events {
		e := &tl.Events[i]
		if !ix.InSteady(e.Start) {
			continue
		}
		if e.Kind == timeline.KindOS && feed[e.Track] && timeline.IsMunmapLike(tl.Name(e.Name)) {
			return ""
		}
		if index.HostCopy(e) && e.Copy == timeline.CopyHtoD && index.PageableSide(e) && ix.OnDevices(e) {
			biggest = max(biggest, e.Bytes)
		}
	}
	if biggest < GlibcMmapMax || len(ix.Steady) == 0 {
		return ""
	}
	// A batch written afresh each step needs the host's time to write it:
	// at 10 GB/s at most on one thread. A step whose time outside its copies
	// is shorter copies a buffer it reuses.
	rest := ix.SteadyNS/int64(len(ix.Steady)) - ix.MeanBreakdown()[index.Copy]
	if rest*writeGBps < biggest {
		return ""
	}
	return fmt.Sprintf("nsys records munmap only where a library calls it through libc, not inside glibc's free(), which unmaps "+
		"every allocation of 32 MiB or more; this trace copies pageable buffers of %s to the GPU each step and shows no munmap "+
		"on the threads that feed it. If each batch is a new tensor, its pages are unmapped after the copy and faulted in again "+
		"as the next batch is written (time inside the data phase): check with traceaudit replay --variants reuse-buffers, or "+
		"strace -f -T -e trace=munmap on the training process; allocate the batch once and copy into it to avoid both",
		units.Bytes(biggest))
}

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	feeders := hostact.Feeders(tl, ix)
	var calls []int32
	var sum int64
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind != timeline.KindOS || !feeders[e.Track] || !timeline.IsMunmapLike(tl.Name(e.Name)) || !ix.InSteady(e.Start) {
			continue
		}
		calls = append(calls, int32(i))
		sum += e.Dur()
	}
	if len(calls) == 0 {
		return nil, nil
	}
	callsPerStep := float64(len(calls)) / float64(max(len(ix.Steady), 1))
	meanNS := sum / int64(len(calls))
	wasted, cands := hostact.Stalls(tl, ix, calls, ix.Work, func(e *timeline.Event, w int64) string {
		return fmt.Sprintf("%s for %s, %s of it with the GPU idle", tl.Name(e.Name), units.Dur(e.Dur()), units.Dur(w))
	})
	total := wasted.Len()
	if total == 0 {
		return nil, nil
	}
	per, share := ix.PerStep(total)
	f := analyze.Finding{
		Title: fmt.Sprintf("munmap stalls: %.1f calls per step, %s of each step with the GPU idle (%s per step)",
			callsPerStep, units.Pct(share), units.Dur(per)),
		WastedNS:         per,
		Share:            share,
		EstimatedSpeedup: ix.Speedup(per, 0, share),
		Bound:            "none: buffers allocated once are never unmapped",
		Evidence:         analyze.TopEvidence(cands, analyze.MaxEvidence),
		Detail:           analyze.DetailMap(Detail{Munmap: fix.Munmap{CallsPerStep: callsPerStep}, MeanCallNS: meanNS}),
		Fix: "Each step frees large pageable host buffers (the batch, or the pinned-memory thread's staging copies) and glibc " +
			"returns them to the OS with munmap, which the launching thread waits for. Allocate batch buffers once and reuse them " +
			"(a preallocated pinned buffer that each batch is copied into). For buffers under 32 MiB, glibc's mmap threshold " +
			"(MALLOC_MMAP_THRESHOLD_, at most 32 MiB on 64-bit) can keep freed memory in the process instead.",
	}
	if advice.Of(ix) == advice.CUDA {
		f.Fix = "Each iteration frees large host buffers and glibc returns them to the OS with munmap, which the launching thread " +
			"waits for. Allocate the buffers once and reuse them (pinned with cudaMallocHost, which also speeds up the copies), or raise " +
			"glibc's mmap threshold (mallopt(M_MMAP_THRESHOLD, ...), at most 32 MiB on 64-bit) so freed memory stays in the process."
		f.Code = `float *h_buf;
cudaMallocHost((void **)&h_buf, bytes);    /* once, before the loop */
for (int i = 0; i < n; i++) { fill(h_buf); cudaMemcpyAsync(d_buf, h_buf, bytes, cudaMemcpyHostToDevice, s); }`
	} else {
		f.Code = `# allocate the staging buffer once and reuse it every step
staging = torch.empty(batch_shape, dtype=torch.float32).pin_memory()
for batch in loader:
    staging.copy_(batch)                          # no new allocation, nothing to munmap
    x = staging.to("cuda", non_blocking=True)
# (a real loop double-buffers staging or waits on an event before reusing it)`
	}
	p.AddFinding(f)
	return nil, nil
}
