// Package index computes, once per run, what every analyzer needs: the
// main thread, the steps and the steady state, the GPU busy intervals of the
// devices the main process uses, the main thread's copy, sync, OS and
// data-loading intervals, and the "two-clock" split of each step into
// compute, comm, copy, sync, os, data and other time (design.md).
//
// Cost: O(n log n) in the number of events (sorting the interval lists);
// per-step queries are binary searches.
package index

import (
	"math"
	"slices"
	"sync"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/internal/hugepage"
	"github.com/traceaudit/traceaudit/timeline"
)

// Analyzer computes the *Index. It reports nothing.
var Analyzer = &analyze.Analyzer{
	ID:    "index",
	Title: "shared indexes",
	Doc: `index finds the main thread, the steps and steady state, and builds the
busy-interval sets and per-step two-clock split that the detectors share.
Cost: O(n log n) in events.`,
	Run: func(p *analyze.Pass) (any, error) { return New(p.Timeline, p.Config), nil },
}

// Bucket is one class of the two-clock split.
type Bucket int

// Buckets in priority order: a nanosecond belongs to the first that holds.
const (
	Compute Bucket = iota // a compute kernel runs
	Comm                  // a communication kernel runs, and no compute kernel
	Copy                  // a copy runs on the GPU, or the main thread is in a copy call
	Sync                  // the main thread is in a synchronising call
	OS                    // the main thread is in an OS memory call (munmap, madvise, ...)
	Data                  // the main thread is inside a data-loading range
	Other                 // anything else
	NumBuckets
)

var bucketNames = [NumBuckets]string{"compute", "comm", "copy", "sync", "os", "data", "other"}

func (b Bucket) String() string { return bucketNames[b] }

// Breakdown is time per bucket, in nanoseconds.
type Breakdown [NumBuckets]int64

// Total is the sum over buckets.
func (b Breakdown) Total() int64 {
	var t int64
	for _, v := range b {
		t += v
	}
	return t
}

// Step is one training step [Start, End).
type Step struct {
	Start, End int64
	// Name is the range that defines the step ("ProfilerStep#12", "get
	// batch") or "" for a whole-window step.
	Name string
	// Startup marks the first step when it is excluded as start-up.
	Startup bool
	// Teardown marks the last step when it is excluded as the loop's end.
	Teardown bool
	// Paused marks a step left out because the main thread paused in it
	// for a second or more (getc, sleep): not steady work.
	Paused    bool
	Breakdown Breakdown
}

// Dur is the step's length in nanoseconds.
func (s Step) Dur() int64 { return s.End - s.Start }

// Index is the shared result.
type Index struct {
	TL *timeline.Timeline
	// Main is the main thread's track when HasMain; a trace without host
	// CUDA calls or ranges has none.
	Main    timeline.TrackID
	HasMain bool
	// Devices are the GPUs the main process launches work on (all GPUs
	// when no launch can be linked).
	Devices map[int64]bool

	// Steps are all steps found, in time order; Steady excludes start-up.
	Steps  []Step
	Steady []Step
	// Startup is the excluded start-up step, if any.
	Startup *Step
	// Teardown is the excluded last step, if any: with steps from repeated
	// ranges, a last cycle that lacks a range every other cycle has, or
	// one longer than StartupFactor times every other.
	Teardown *Step
	// Source says how steps were found: "step-range", "ProfilerStep",
	// "repeated range \"get batch\"" or "window", with " (GPU-paced)"
	// when the steps were re-cut by the GPU work each launched.
	Source string
	// GPULag is, when steps are GPU-paced, how far the GPU ran behind the
	// host: the median lag of a step's GPU work behind its host range, as
	// a share of the median host step (0: not paced).
	GPULag float64
	// PreWindowNS is the time cut from the start of the first step, where
	// the main thread waited for GPU work queued before the window.
	PreWindowNS int64
	// LoopOnly says the window step was narrowed to the run of repeated
	// GPU work (the loop), leaving out one-time work before and after it.
	LoopOnly bool
	// PausedSteps counts steps left out of the steady state because the
	// main thread paused in them for a second or more (getc, sleep).
	PausedSteps int
	// NotSteady, when set, says why the window is not a steady loop (a
	// CUDA graph capture, one-time start-up, no repeated step with GPU
	// work, a pause) and what to capture instead. Findings are then at
	// most info, with an estimated speedup of 1.
	NotSteady string
	// PyTorch says the trace comes from a PyTorch program (a Kineto trace,
	// Python or PyTorch threads, ATen operators or kernels); advice is
	// written in CUDA terms otherwise.
	PyTorch bool
	// Training says the steps run a backward pass or an optimizer step;
	// a PyTorch trace without them is inference.
	Training bool
	// SteadyNS is the summed length of the steady steps.
	SteadyNS int64
	// SteadySet is the union of the steady steps' windows.
	SteadySet ivl.Set

	// Kernels, Comm, AnyKernel, Copies and Work are busy sets on Devices:
	// compute kernels, communication kernels (timeline.FlagComm: never
	// compute), both, GPU copies, and all GPU work (kernels, copies,
	// memsets).
	Kernels, Comm, AnyKernel, Copies, Work ivl.Set
	// MainCopyCalls, MainSyncCalls, MainOSCalls and MainData are the main
	// thread's copy calls (the part while their transfer runs),
	// synchronising calls (with the waits inside copy calls before and
	// after their transfer), OS memory calls and data-loading ranges.
	MainCopyCalls, MainSyncCalls, MainOSCalls, MainData ivl.Set
	// MainReads are the main thread's file reads (timeline.IsFileRead),
	// and MainReadStarts their start times in order, to count them;
	// MainDiskReadStarts those of the reads that took DiskReadNS or more.
	MainReads          ivl.Set
	MainReadStarts     []int64
	MainDiskReadStarts []int64
	// Buckets are the disjoint sets of the two-clock split, over the whole
	// trace except Other, which is within the steady steps only.
	Buckets [NumBuckets]ivl.Set
	// Count is the number of events of each kind, to size slices.
	Count [timeline.NumKinds]int
	// DeviceWork lists the GPU work (kernels, copies, memsets) on Devices
	// as indices in TL.Events, in the timeline's order: analyzers that
	// look at GPU work walk it instead of every event.
	DeviceWork []int32
	// KernelStreams are the GPU tracks that run kernels (any device).
	KernelStreams map[timeline.TrackID]bool

	labels []string
	// bestPinned is the best pinned host copy's bandwidth (GB/s), 0: none.
	bestPinned float64
	// dataName caches IsDataRange per range name: 0 unknown, 1 yes, 2 no;
	// libName IsLibraryRange the same way.
	dataName, libName []uint8
	// launches is the GPU work the main process launched.
	launches launchTable
	// onDevice says, per track, whether it lies on one of Devices.
	onDevice []bool
	// launchCalls keeps LaunchCalls of the threads New looked at.
	launchCalls map[timeline.TrackID]Calls
	cfg         *analyze.Config
}

// New builds the index of tl.
func New(tl *timeline.Timeline, cfg *analyze.Config) *Index {
	ix := &Index{TL: tl, cfg: cfg, KernelStreams: map[timeline.TrackID]bool{}, dataName: make([]uint8, tl.NumNames()),
		launchCalls: map[timeline.TrackID]Calls{}}
	// Phases that need nothing of each other run at once (each writes its
	// own fields): the program's kind, the main thread and its steps, and
	// the counts and caches; then the busy sets and the launch table.
	var wg sync.WaitGroup
	var p picked
	wg.Go(func() { ix.PyTorch, ix.Training = program(tl) })
	wg.Go(func() { p = ix.findMain(cfg) })
	for i := range tl.Events {
		e := &tl.Events[i]
		ix.Count[e.Kind]++
		if e.Kind == timeline.KindRange {
			ix.IsData(e) // fills the cache: analyzers running at once only read it
		}
	}
	ix.labels = make([]string, len(tl.Tracks))
	for t := range tl.Tracks {
		ix.labels[t] = tl.Tracks[t].Label()
	}
	wg.Wait()
	ix.findDevices()
	wg.Go(func() { ix.launches = ix.mainLaunches() })
	ix.buildSets()
	wg.Wait()
	ix.findSteps(p)
	ix.split()
	return ix
}

// SteadyCovered is the length of s inside the steady steps.
func (ix *Index) SteadyCovered(s ivl.Set) int64 { return s.OverlapLen(ix.SteadySet) }

// InSteady reports whether instant t lies in a steady step.
func (ix *Index) InSteady(t int64) bool { return ix.SteadySet.Contains(t) }

// PerStep turns a total over the steady steps into the per-step figure and
// the share of the steady window.
func (ix *Index) PerStep(total int64) (perStep int64, share float64) {
	if n := len(ix.Steady); n > 0 {
		perStep = total / int64(n)
	}
	if ix.SteadyNS > 0 {
		share = float64(total) / float64(ix.SteadyNS)
	}
	return perStep, share
}

// MeanBreakdown is the mean split of a steady step.
func (ix *Index) MeanBreakdown() Breakdown {
	var b Breakdown
	if len(ix.Steady) == 0 {
		return b
	}
	for _, s := range ix.Steady {
		for k := range b {
			b[k] += s.Breakdown[k]
		}
	}
	for k := range b {
		b[k] /= int64(len(ix.Steady))
	}
	return b
}

// MedianStepNS is the median steady step length (the mean of the two
// middle steps for an even count).
func (ix *Index) MedianStepNS() int64 {
	d := make([]int64, len(ix.Steady))
	for i, s := range ix.Steady {
		d[i] = s.Dur()
	}
	return median(d)
}

// MeanStepNS is the mean steady step length.
func (ix *Index) MeanStepNS() int64 {
	if len(ix.Steady) == 0 {
		return 0
	}
	return ix.SteadyNS / int64(len(ix.Steady))
}

// StepStderrNS is the standard error of the mean steady step: the steady
// steps' sample standard deviation over the square root of their count (0
// with fewer than two). It says how well the trace's steps pin down its
// mean step, and every figure per step with it (a loop whose batches
// arrive in bursts needs many steps to pin its mean down).
func (ix *Index) StepStderrNS() int64 {
	n := len(ix.Steady)
	if n < 2 {
		return 0
	}
	mean := float64(ix.SteadyNS) / float64(n)
	var ss float64
	for _, s := range ix.Steady {
		d := float64(s.Dur()) - mean
		ss += d * d
	}
	return int64(math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n)))
}

// Label is the report name of a track (made once, in New: evidence asks
// often).
func (ix *Index) Label(t timeline.TrackID) string { return ix.labels[t] }

// IsMain reports whether track t is the main thread.
func (ix *Index) IsMain(t timeline.TrackID) bool { return ix.HasMain && t == ix.Main }

// OnDevices reports whether event e runs on one of the analysed devices.
func (ix *Index) OnDevices(e *timeline.Event) bool { return ix.onDevice[e.Track] }

// findDevices collects the GPUs that the main thread's process launches
// work on, and which tracks lie on them.
func (ix *Index) findDevices() {
	tl := ix.TL
	ix.Devices = map[int64]bool{}
	if ix.HasMain {
		pid := tl.Tracks[ix.Main].PID
		launched := make([]bool, len(tl.Tracks))
		for i := range tl.Events {
			e := &tl.Events[i]
			if !launched[e.Track] && e.Kind.IsGPUWork() && e.Link >= 0 && tl.TrackOf(e.Link).PID == pid {
				launched[e.Track] = true
			}
		}
		for t, ok := range launched {
			if ok {
				ix.Devices[tl.Tracks[t].Device] = true
			}
		}
	}
	if len(ix.Devices) == 0 {
		for _, t := range tl.Tracks {
			if t.Kind == timeline.TrackGPU {
				ix.Devices[t.Device] = true
			}
		}
	}
	ix.onDevice = make([]bool, len(tl.Tracks))
	for t := range tl.Tracks {
		ix.onDevice[t] = ix.Devices[tl.Tracks[t].Device]
	}
}

// buildSets builds the busy sets, the streams that run kernels, the best
// pinned copy bandwidth, and the main thread's interval sets.
func (ix *Index) buildSets() {
	tl := ix.TL
	nk, nc, nm := ix.Count[timeline.KindKernel], ix.Count[timeline.KindMemcpy], ix.Count[timeline.KindMemset]
	k, c, w := hugepage.Make[ivl.Interval](0, nk), hugepage.Make[ivl.Interval](0, nc), hugepage.Make[ivl.Interval](0, nk+nc+nm)
	kernelStream := make([]bool, len(tl.Tracks))
	ix.DeviceWork = hugepage.Make[int32](0, nk+nc+nm)
	var comm []ivl.Interval
	for i := range tl.Events {
		e := &tl.Events[i]
		if !e.Kind.IsGPUWork() {
			continue
		}
		if e.Kind == timeline.KindKernel {
			kernelStream[e.Track] = true
		}
		if HostCopy(e) && PinnedSide(e) && e.Bytes >= PinnedRefMinBytes && e.Dur() > 0 {
			ix.bestPinned = max(ix.bestPinned, float64(e.Bytes)/float64(e.Dur()))
		}
		if !ix.OnDevices(e) {
			continue
		}
		ix.DeviceWork = append(ix.DeviceWork, int32(i))
		iv := ivl.Interval{Start: e.Start, End: e.End}
		w = append(w, iv)
		switch {
		case e.Kind == timeline.KindKernel && e.Has(timeline.FlagComm):
			comm = append(comm, iv)
		case e.Kind == timeline.KindKernel:
			k = append(k, iv)
		case e.Kind == timeline.KindMemcpy:
			c = append(c, iv)
		}
	}
	for t, ok := range kernelStream {
		if ok {
			ix.KernelStreams[timeline.TrackID(t)] = true
		}
	}
	var main []int32
	if ix.HasMain {
		main = tl.Tracks[ix.Main].Events
	}
	// Counted first, so that each set is allocated once: a set grown by
	// appends leaves its smaller copies behind, resident (no collection
	// runs during an analysis).
	var ncc, nsc, noc, ndr int
	for _, i := range main {
		e := &tl.Events[i]
		switch e.Kind {
		case timeline.KindAPI:
			switch {
			case e.API.IsCopy():
				ncc++
				nsc += 2
			case e.API == timeline.APISync:
				nsc++
			}
		case timeline.KindOS:
			noc++
		case timeline.KindRange:
			ndr++
		}
	}
	room := func(n int) []ivl.Interval {
		if n == 0 {
			return nil
		}
		return hugepage.Make[ivl.Interval](0, n)
	}
	cc, sc, oc, dr := room(ncc), room(nsc), room(noc), room(ndr)
	var rd []ivl.Interval
	for _, i := range main {
		e := &tl.Events[i]
		iv := ivl.Interval{Start: e.Start, End: e.End}
		switch e.Kind {
		case timeline.KindAPI:
			switch {
			case e.API.IsCopy():
				copyPart, waits := SplitCopyCall(tl, e)
				cc = append(cc, copyPart)
				sc = append(sc, waits...)
			case e.API == timeline.APISync:
				sc = append(sc, iv)
			}
		case timeline.KindOS:
			name := tl.Name(e.Name)
			if IsMemoryOSCall(name) {
				oc = append(oc, iv)
			}
			if timeline.IsFileRead(name) {
				rd = append(rd, iv)
				ix.MainReadStarts = append(ix.MainReadStarts, e.Start)
				if e.Dur() >= DiskReadNS {
					ix.MainDiskReadStarts = append(ix.MainDiskReadStarts, e.Start)
				}
			}
		case timeline.KindRange:
			if ix.IsData(e) {
				dr = append(dr, iv)
			}
		}
	}
	ix.Kernels, ix.Comm, ix.Copies, ix.Work = ivl.Union(k), ivl.Union(comm), ivl.Union(c), ivl.Union(w)
	ix.AnyKernel = ix.Kernels.Union(ix.Comm)
	ix.MainCopyCalls, ix.MainSyncCalls = ivl.Union(cc), ivl.Union(sc)
	ix.MainOSCalls, ix.MainData = ivl.Union(oc), ivl.Union(dr)
	ix.MainReads = ivl.Union(rd)
	slices.Sort(ix.MainReadStarts)
	slices.Sort(ix.MainDiskReadStarts)
}

// DiskReadNS is the least time of a file read served by the disk: a batch
// sample of up to a few hundred KB comes from the page cache in tens of µs
// (5 GB/s and more on one thread), from an NVMe disk in 100 µs and more.
const DiskReadNS = 100_000

// MainReadsIn counts the main thread's file reads that start in [lo, hi).
func (ix *Index) MainReadsIn(lo, hi int64) int { return countIn(ix.MainReadStarts, lo, hi) }

// MainDiskReadsIn counts the main thread's disk reads (DiskReadNS or
// more) that start in [lo, hi).
func (ix *Index) MainDiskReadsIn(lo, hi int64) int { return countIn(ix.MainDiskReadStarts, lo, hi) }

// countIn counts the times of sorted ts in [lo, hi).
func countIn(ts []int64, lo, hi int64) int {
	a, _ := slices.BinarySearch(ts, lo)
	b, _ := slices.BinarySearch(ts, hi)
	return b - a
}

// CopyWaitNS is how soon after a copy call a sync counts as that copy's
// own wait (PyTorch's .cpu() is cudaMemcpyAsync, then
// cudaStreamSynchronize).
const CopyWaitNS = 50_000

// ReadsBack reports whether API call e reads back: a copy of device memory
// into host memory not known to be pinned (ReadBack), or a sync within
// CopyWaitNS of the thread's previous call prev when that call read back
// (prevRead): the sync is that copy's own wait.
func ReadsBack(tl *timeline.Timeline, e, prev *timeline.Event, prevRead bool) bool {
	if e.API.IsCopy() && e.Link >= 0 {
		return ReadBack(&tl.Events[e.Link])
	}
	return e.API == timeline.APISync && prevRead && prev != nil && e.Start-prev.End < CopyWaitNS
}

// ReadBack reports whether device work w copies device memory back into
// host memory that is not known to be pinned: a value or tensor read back
// (.item(), .cpu(), .numpy()), which the host then waits for.
func ReadBack(w *timeline.Event) bool {
	return w.Copy == timeline.CopyDtoH && w.Dst != timeline.MemPinned
}

// SplitCopyCall divides a copy call's host time into the part while its
// transfer runs (copy) and the rest (waits: for queued work before the
// transfer starts, for completion after it ends). A call whose transfer
// the trace did not record is all copy.
func SplitCopyCall(tl *timeline.Timeline, e *timeline.Event) (copyPart ivl.Interval, waits []ivl.Interval) {
	copyPart = ivl.Interval{Start: e.Start, End: e.End}
	if e.Link < 0 {
		return copyPart, nil
	}
	x := &tl.Events[e.Link]
	lo, hi := max(e.Start, x.Start), min(e.End, x.End)
	if hi <= lo {
		return ivl.Interval{}, []ivl.Interval{copyPart}
	}
	if lo > e.Start {
		waits = append(waits, ivl.Interval{Start: e.Start, End: lo})
	}
	if hi < e.End {
		waits = append(waits, ivl.Interval{Start: hi, End: e.End})
	}
	return ivl.Interval{Start: lo, End: hi}, waits
}

// split computes the disjoint bucket sets and each step's breakdown.
func (ix *Index) split() {
	b := &ix.Buckets
	// Each bucket is its set less the earlier buckets' sets; Other is the
	// steady steps less all of them.
	copy(b[:], ivl.Layers(ix.Kernels, ix.Comm, ix.Copies.Union(ix.MainCopyCalls), ix.MainSyncCalls,
		ix.MainOSCalls, ix.MainData, ix.SteadySet))
	fill := func(s *Step) {
		rest := s.Dur()
		for k := Compute; k < Other; k++ {
			s.Breakdown[k] = b[k].Covered(s.Start, s.End)
			rest -= s.Breakdown[k]
		}
		s.Breakdown[Other] = rest
	}
	for i := range ix.Steps {
		fill(&ix.Steps[i])
	}
	for i := range ix.Steady {
		fill(&ix.Steady[i])
	}
	for _, s := range []*Step{ix.Startup, ix.Teardown} {
		if s != nil {
			fill(s)
		}
	}
}

// HostCopy reports whether e is a copy between host and device.
func HostCopy(e *timeline.Event) bool {
	return e.Kind == timeline.KindMemcpy && (e.Copy == timeline.CopyHtoD || e.Copy == timeline.CopyDtoH)
}

// PageableSide reports whether a host copy's host memory is pageable.
func PageableSide(e *timeline.Event) bool {
	return (e.Copy == timeline.CopyHtoD && e.Src == timeline.MemPageable) ||
		(e.Copy == timeline.CopyDtoH && e.Dst == timeline.MemPageable)
}

// PinnedSide reports whether a host copy's host memory is pinned.
func PinnedSide(e *timeline.Event) bool {
	return (e.Copy == timeline.CopyHtoD && e.Src == timeline.MemPinned) ||
		(e.Copy == timeline.CopyDtoH && e.Dst == timeline.MemPinned)
}

// PinnedRefMinBytes is the smallest pinned copy whose bandwidth can serve
// as the reference (1 MiB: smaller copies are latency-bound).
const PinnedRefMinBytes = 1 << 20

// PinnedReference is the bandwidth, in GB/s, that pinned copies reach: the
// trace's best pinned host copy of 1 MiB or more, else fallback (the
// --pinned-gbps setting). fromTrace says which.
func (ix *Index) PinnedReference(fallback float64) (gbps float64, fromTrace bool) {
	if ix.bestPinned > 0 {
		return ix.bestPinned, true
	}
	return fallback, false
}

// IsData is IsDataRange with the run's config, evaluated once per name
// (New evaluates every range's name, so that later calls only read the
// cache and analyzers may call it at once).
func (ix *Index) IsData(e *timeline.Event) bool {
	if e.Kind != timeline.KindRange || e.Range == timeline.RangeStep {
		return false
	}
	if int(e.Name) >= len(ix.dataName) {
		return IsDataRange(ix.TL, e, ix.cfg)
	}
	switch ix.dataName[e.Name] {
	case 1:
		return true
	case 2:
		return false
	}
	ok := IsDataRange(ix.TL, e, ix.cfg)
	ix.dataName[e.Name] = 2
	if ok {
		ix.dataName[e.Name] = 1
	}
	return ok
}

// RequireKernels is an Observable check for analyzers that need GPU kernels.
func RequireKernels(p *analyze.Pass) (bool, string) {
	if ix := p.ResultOf[Analyzer].(*Index); len(ix.AnyKernel) == 0 {
		return false, "the trace has no GPU kernels (capture CUDA activity: nsys --trace=cuda, or ProfilerActivity.CUDA)"
	}
	return true, ""
}
