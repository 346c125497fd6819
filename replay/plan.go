// Package replay turns a timeline and its findings into a plan (one
// steady-state step of the trace, reduced to the phases that decide its
// length) and runs that plan on a GPU: once as observed and once per fix,
// with real copies, streams, kernels, host work and munmap calls.
//
// The plan is pure data, what to run; Run returns what it measured of each
// variant, and NewResult sets the two side by side (Result). An Executor
// (package replay/cudaexec over the CUDA driver API, or a fake in tests)
// carries out GPU operations. Host phases run here: real CPU work of the
// observed length, real memory traffic building each batch, real
// mmap/munmap of batch-sized mappings, shared memory handed from producers
// to the main loop as a DataLoader worker's batches are.
package replay

import (
	"fmt"
	"sort"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/fix"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/timeline"
)

// MinCopyBytes: copies smaller than this are left out of the plan (they
// are latency-bound and do not decide the step).
const MinCopyBytes = 64 << 10

// MmapThreshold is the size from which glibc serves an allocation with its
// own mapping (M_MMAP_THRESHOLD's dynamic ceiling on 64-bit, 32 MiB): a
// batch tensor this large lives in fresh pages and is munmapped when freed.
const MmapThreshold = 32 << 20

// BuildGBps is the rate, in GB/s, above which a main-thread data phase is
// too short to have built the batch there (writing a batch into fresh pages
// runs at a few GB/s on one thread, 10 at most): such batches were made
// elsewhere (DataLoader workers) or reused.
const BuildGBps = 10

// Copy is one host-device transfer of a step.
type Copy struct {
	// Dir is timeline.CopyHtoD or timeline.CopyDtoH ("HtoD" or "DtoH" in
	// JSON).
	Dir timeline.CopyKind `json:"dir"`
	// Bytes is the size of the transfer.
	Bytes int64 `json:"bytes"`
	// Pageable says the host side is pageable memory (else pinned).
	Pageable bool `json:"pageable"`
	// SideStream says the trace ran it on a stream without kernels.
	SideStream bool `json:"side_stream"`
	// ObservedNS is its GPU time in the trace.
	ObservedNS int64 `json:"observed_ns"`
}

// Launches are the short kernels of a launch-bound step, each launched by
// its own call (the launch-bound finding's figures).
type Launches struct {
	// Kernels is the number of such kernels per step.
	Kernels int `json:"kernels"`
	// KernelNS is each kernel's duration (their mean).
	KernelNS int64 `json:"kernel_ns"`
	// IntervalNS is the host's time per launch in the trace: the mean
	// time from one launch call's start to the next one's, over intervals
	// up to 10 times their median (fix.Launches.LaunchIntervalMeanNS;
	// the median where a finding lacks it).
	IntervalNS int64 `json:"interval_ns"`
}

// Phases is the plan of one steady-state step, in nanoseconds per phase.
// The phases are disjoint: each nanosecond of the trace's mean steady step
// is replayed by one of them.
type Phases struct {
	// DataNS is the main thread's time producing or waiting for the next
	// batch (the data bucket), pinning excluded.
	DataNS int64 `json:"data_ns"`
	// OtherNS is host work while the GPU idles (the other and sync
	// buckets), without the launch phase and pinning.
	OtherNS int64 `json:"other_ns"`
	// ComputeNS is kernel time per step (the compute bucket), launch-bound
	// kernels included.
	ComputeNS int64 `json:"compute_ns"`
	// Copies are the step's host-device transfers in trace order.
	Copies []Copy `json:"copies"`
	// Munmaps is how many batch-sized mappings the main thread unmaps per
	// step where the trace shows munmap stalls (0 otherwise); MunmapBytes is
	// the size of each.
	Munmaps     int   `json:"munmaps"`
	MunmapBytes int64 `json:"munmap_bytes"`
	// Sync says the step drains the GPU queue (.item(),
	// torch.cuda.synchronize()): the observed replay waits for the GPU at
	// the end of every step.
	Sync bool `json:"sync"`
	// Batches says where each step's batch comes from: "main" (the main
	// thread builds it: its data phase is long enough to write it),
	// "workers" (DataLoader worker processes hand it over in shared memory:
	// the trace shows their multiprocessing iterator, or the main thread
	// unmapping batches it did not build), "reused" (the same buffer every
	// step: nothing rebuilds it), or "" when nothing is copied.
	Batches string `json:"batches"`
	// PinNS is the main thread's time per step copying batches into pinned
	// memory (aten::pin_memory in the trace): pinning on the main thread.
	PinNS int64 `json:"pin_ns"`
	// OSObserved says the trace recorded OS calls. Where the trace shows no
	// munmap stalls (Munmaps == 0), the main thread's munmap time is part
	// of OtherNS either way: no profiler records the munmap that glibc's
	// free() makes internally.
	OSObserved bool `json:"os_observed"`
	// Launches, when set, are the launch-bound kernels of the step.
	Launches *Launches `json:"launches,omitempty"`
	// PaceNS, when set, is the period at which the trace's DataLoader
	// workers delivered batches: the mean steady step, because the main
	// thread waited for them (a dataloader-wait finding, info included). A
	// loop that still waits for its batches runs at its producers' pace, so
	// fixes of the main thread's own work (pinning, a copy stream, reused
	// buffers) leave the step at that pace. 0: the trace's workers kept ahead
	// of the loop, or the main thread builds its batches.
	PaceNS int64 `json:"pace_ns,omitempty"`
	// SmallCopies, when set, are the step's small pageable host-to-device
	// copies, each waited for (a sync-api finding's): replayed one by one,
	// or packed into one (Setup.PackCopies).
	SmallCopies *SmallCopies `json:"small_copies,omitempty"`
	// Restart, when set, is the loader's start at each epoch boundary (a
	// dataloader-wait finding's): the main thread waits for it every
	// EverySteps steps, unless the workers persist.
	Restart *Restart `json:"restart,omitempty"`
	// Churn, when set, is the step's device memory allocated and freed
	// (an alloc-churn finding's): real allocation and free calls, unless
	// the cache is kept.
	Churn *Churn `json:"churn,omitempty"`
	// ReadWorkNS is the host work per step, in the other phase, right
	// after values read back to pageable memory (.cpu() then numpy: a
	// metric on the host), less ReadKeptNS a read: what no-sync, the
	// values computed on the GPU and read every SyncEvery steps, removes
	// (as the step model has it).
	ReadWorkNS int64 `json:"read_work_ns,omitempty"`
	// Reads, when set, are the main thread's file reads in the other
	// phase (a storage-read finding's): replayed there as host time, or,
	// served from memory (Setup.CacheData), at CachedNS each.
	Reads *Reads `json:"reads,omitempty"`
	// IssueSavedNS is the host time per step that issuing the step's
	// collectives as fewer, larger ones saves (a comm-small finding's
	// wasted time): fewer-collectives takes it from the other phase, and
	// what that phase does not hold from the launch intervals.
	IssueSavedNS int64 `json:"issue_saved_ns,omitempty"`
}

// Reads are a step's file reads on the main thread, in the other phase.
type Reads struct {
	// PerStep reads take OtherNS a step; from memory each takes CachedNS
	// (model.CachedReadNS of its share of the bytes).
	PerStep  int   `json:"per_step"`
	OtherNS  int64 `json:"other_ns"`
	CachedNS int64 `json:"cached_ns"`
	// DiskPerStep of them waited on the disk (index.DiskReadNS or more):
	// served from memory, each also spares the host model.WakeNS of
	// slower work after it.
	DiskPerStep int `json:"disk_per_step,omitempty"`
}

// savedNS is what serving the reads from memory takes off the other phase.
func (r *Reads) savedNS() int64 {
	if r == nil {
		return 0
	}
	return max(0, r.OtherNS-int64(r.PerStep)*r.CachedNS) + int64(r.DiskPerStep)*model.WakeNS
}

// ReadKeptNS is the host time no-sync leaves after each read-back: the
// dispatch of the work moved to the GPU (the step model's figure).
const ReadKeptNS = 20_000

// SmallCopies are many small pageable copies of a step, each waited for.
type SmallCopies struct {
	// Count copies of Bytes each; GapNS is the host time before each
	// (the dispatch of one tensor's copy: the sync-api finding's wasted
	// time, spread over the copies).
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
	GapNS int64 `json:"gap_ns"`
}

// Restart is the main thread's wait for the loader at an epoch boundary.
type Restart struct {
	// EverySteps is the steps of an epoch; StallNS the wait at its start.
	EverySteps int   `json:"every_steps"`
	StallNS    int64 `json:"stall_ns"`
	// WarmNS, when set, is the main thread's wait per step once the
	// workers persist: where its waits between restarts add up to under a
	// tenth of the steps, workers that keep up between restarts keep up
	// once kept, and each wait is the shortest of them (as the step model
	// has it; 0: the waits stay as traced).
	WarmNS int64 `json:"warm_ns,omitempty"`
}

// Churn is a step's device memory allocation and free calls.
type Churn struct {
	// Allocs is how many ChurnBytes allocations the step makes and frees;
	// IdleNS is the calls' time per step while no kernel ran in the trace,
	// which the replayed calls take at least.
	Allocs int   `json:"allocs"`
	IdleNS int64 `json:"idle_ns"`
}

// ChurnBytes is the size of each replayed allocation: the caching
// allocator's smallest segment (2 MiB), since the trace does not record
// the sizes of cudaMalloc calls.
const ChurnBytes = 2 << 20

// BatchBytes is the bytes copied host-to-device per step.
func (s *Phases) BatchBytes() int64 {
	var n int64
	for _, c := range s.Copies {
		if c.Dir == timeline.CopyHtoD {
			n += c.Bytes
		}
	}
	return n
}

// pageableHtoD says whether a host-to-device copy of the step reads
// pageable memory.
func (s *Phases) pageableHtoD() bool {
	for _, c := range s.Copies {
		if c.Dir == timeline.CopyHtoD && c.Pageable {
			return true
		}
	}
	return false
}

// LaunchComputeNS is the kernel time of the launch-bound kernels per step.
func (s *Phases) LaunchComputeNS() int64 {
	if s.Launches == nil {
		return 0
	}
	return int64(s.Launches.Kernels) * s.Launches.KernelNS
}

// TraceGBps are the trace's host-to-device copy bandwidths in GB/s: bytes
// over GPU time of the plan's copies, per host memory kind (0: none).
type TraceGBps struct {
	Pageable float64 `json:"pageable,omitempty"`
	Pinned   float64 `json:"pinned,omitempty"`
}

// Plan is the replay of one trace.
type Plan struct {
	File string `json:"file"`
	// ObservedStepNS is the trace's median steady step.
	ObservedStepNS int64 `json:"observed_step_ns"`
	// ObservedStepMeanNS is the trace's mean steady step: the step the plan
	// reproduces (its phases are mean buckets), so the one fidelity
	// compares with.
	ObservedStepMeanNS int64 `json:"observed_step_ns_mean"`
	// ObservedGPUNS is the trace's GPU time per steady step: kernel busy
	// time plus copy busy time, mean over steady steps.
	ObservedGPUNS int64     `json:"observed_gpu_ns"`
	TraceGBps     TraceGBps `json:"trace_gbps"`
	Step          Phases    `json:"step"`
	// Variants are observed first, then one per finding the replay can
	// fix, then all.
	Variants []Variant `json:"variants"`
	// HostEventsPerStep is how many CPU operators and CUDA API calls the
	// trace recorded on the main thread per steady step: each costs the
	// profiler a microsecond or more (ProfilerEventNS).
	HostEventsPerStep int `json:"host_events_per_step,omitempty"`
	// Profiler, when set, is the profiler's cost that LessProfiler took
	// out of the host phases.
	Profiler *Profiler `json:"profiler,omitempty"`
	// Spread, when set, says that the trace's steady steps spread too far
	// for their count: the mean step the plan reproduces is known to no
	// better than audit.LooseMean (spreadNote).
	Spread *audit.Spread `json:"-"`
	// GivenStepNS is the loop's mean step without the profiler as the user
	// gave it (replay --unprofiled-step), whether or not a profiler's cost
	// was taken out: a given step longer than the trace's says that the
	// traced run ran faster than the loop that was timed (givenStepNote).
	GivenStepNS int64 `json:"-"`
	// events are the main thread's recorded host events per step in the
	// host phases (hostEvents).
	events phaseEvents
	// workers is the prefetch-workers pool size (0: from Workers).
	workers int
	// fixIDs maps each fix variant to the ID of the finding it verifies
	// (FixFor).
	fixIDs map[string]string
	// model is the analysis's step model, whose schedules the graph
	// engine runs.
	model *model.Model
	// Engine is the engine the plan is run with: EngineGraph (traceaudit
	// replay's default: the step model's schedule of each variant that has
	// one, the others by phases) or EnginePhases ("" too).
	Engine string `json:"-"`
}

// Profiler is the profiler's own host cost taken out of a plan's host
// phases: the trace's recorded events there times the cost per event
// measured on the replaying machine.
type Profiler struct {
	// EventNS is the cost per recorded event, in ns; Source says how it
	// was obtained ("measured here with torch 2.11.0", "--profiler-cost").
	EventNS int64  `json:"event_ns"`
	Source  string `json:"source"`
	// DataEvents and IdleEvents are the main thread's recorded events per
	// step in the data phase and in the phases where the GPU idles (other
	// host work, syncs, OS calls; the launch phase of a launch-bound step).
	DataEvents int `json:"data_events"`
	IdleEvents int `json:"idle_events"`
	// RemovedNS is the host time per step taken out of the plan.
	RemovedNS int64 `json:"removed_ns"`
	// EventNSMin and EventNSMax, when set, are the least and the most
	// cost per event measured (between the probe's processes), and
	// RemovedMinNS and RemovedMaxNS the host time per step that each would
	// have taken out: how uncertain the unprofiled step is.
	EventNSMin   int64 `json:"event_ns_min,omitempty"`
	EventNSMax   int64 `json:"event_ns_max,omitempty"`
	RemovedMinNS int64 `json:"removed_min_ns,omitempty"`
	RemovedMaxNS int64 `json:"removed_max_ns,omitempty"`
	// UnprofiledStepNS, when set, is the loop's mean step without the
	// profiler as the user gave it (replay --unprofiled-step): EventNS is
	// then the trace's mean step less it, over the events recorded in the
	// host phases.
	UnprofiledStepNS int64 `json:"unprofiled_step_ns,omitempty"`
	// HostShare, when set, is the share of each host phase taken out
	// instead of a cost per event (LessHostTime; EventNS is then 0).
	HostShare float64 `json:"host_share,omitempty"`
}

// HostPhaseEvents is how many events the trace recorded on the main
// thread per step in the host phases that LessProfiler shortens.
func (p *Plan) HostPhaseEvents() int {
	n := p.events.data + p.events.idle
	if p.Step.Launches != nil {
		n += p.events.busy
	}
	return n
}

// phaseEvents counts recorded host events per step by phase: all, those
// that start in the data phase, where the GPU idles, and while it computes.
type phaseEvents struct{ total, data, idle, busy int }

// LessProfiler takes the profiler's own cost out of the plan's host
// phases: eventNS for each event the trace recorded on the main thread in
// the data phase and in the phases where the GPU idles. A launch-bound
// step's idle events are its launches' (each interval keeps at least its
// kernel's time); what they do not cover comes out of the other phase. No
// phase goes below zero. The trace's figures (observed step, GPU time)
// stay as they are: fidelity compares with them, and with the trace less
// the time taken out.
func (p *Plan) LessProfiler(eventNS int64, source string) {
	p.LessProfilerRange(eventNS, eventNS, eventNS, source)
}

// LessProfilerRange is LessProfiler at eventNS where the cost per event
// was measured anywhere from loNS to hiNS (between processes: a profiled
// process's own cost is as uncertain; below zero counts as zero).
// Profiler records the time that either end would have taken out, so that
// the report can say how uncertain the unprofiled step is.
func (p *Plan) LessProfilerRange(eventNS, loNS, hiNS int64, source string) {
	if eventNS <= 0 {
		return
	}
	orig := p.Step
	st, removed, n := lessProfiler(orig, p.events, eventNS)
	if orig.OtherNS > 0 {
		// The work after read-backs is other-phase time: it shrinks with it.
		st.ReadWorkNS = int64(float64(orig.ReadWorkNS) * float64(st.OtherNS) / float64(orig.OtherNS))
	}
	p.Step = st
	p.Profiler = &Profiler{EventNS: eventNS, Source: source, DataEvents: p.events.data,
		IdleEvents: n, RemovedNS: removed}
	// A process can measure less than nothing (profcost.Parse): the
	// least that can be taken out is nothing.
	if lo, hi := max(min(loNS, eventNS), 0), max(hiNS, eventNS); hi > lo {
		pr := p.Profiler
		pr.EventNSMin, pr.EventNSMax = lo, hi
		_, pr.RemovedMinNS, _ = lessProfiler(orig, p.events, lo)
		_, pr.RemovedMaxNS, _ = lessProfiler(orig, p.events, hi)
	}
}

// LessHostTime takes ns out of the plan's host phases in proportion to
// their length: the data phase, the other host work and a launch-bound
// step's launch intervals above their kernels (pinning is real copying,
// and stays). It honours a step measured without the profiler (replay
// --unprofiled-step) where the trace recorded too few events in those
// phases to carry the difference: an nsys export records no CPU
// operators, while nsys slows them too. No phase goes below zero; a
// difference larger than the phases takes them all.
func (p *Plan) LessHostTime(ns int64, source string) {
	st := &p.Step
	var kernels, above int64 // launches, and each interval's host time above its kernel
	if l := st.Launches; l != nil {
		kernels, above = int64(l.Kernels), max(l.IntervalNS-l.KernelNS, 0)
	}
	host := st.DataNS + st.OtherNS + kernels*above
	if ns <= 0 || host <= 0 {
		return
	}
	f := min(float64(ns)/float64(host), 1)
	cut := func(v int64) int64 { return int64(float64(v) * f) }
	data, other, per := cut(st.DataNS), cut(st.OtherNS), cut(above)
	st.DataNS -= data
	st.OtherNS -= other
	st.ReadWorkNS -= cut(st.ReadWorkNS)
	if per > 0 {
		l := *st.Launches
		l.IntervalNS -= per
		st.Launches = &l
	}
	took := per * kernels
	p.Profiler = &Profiler{Source: source, DataEvents: p.events.data, IdleEvents: p.HostPhaseEvents() - p.events.data,
		RemovedNS: data + other + took, HostShare: f}
}

// lessProfiler is st with eventNS taken out for each event of ev in its
// host phases (LessProfiler), the time taken out per step, and the events
// it was taken out for.
func lessProfiler(st Phases, ev phaseEvents, eventNS int64) (Phases, int64, int) {
	if st.Launches != nil {
		l := *st.Launches
		st.Launches = &l
	}
	data := min(int64(ev.data)*eventNS, st.DataNS)
	st.DataNS -= data
	n := ev.idle
	if st.Launches != nil {
		// The launch phase sets a launch-bound step's length whether or
		// not the GPU runs the last kernel when the next call starts.
		n += ev.busy
	}
	idle := int64(n) * eventNS
	var took int64
	if l := st.Launches; l != nil && l.Kernels > 0 {
		per := min(idle/int64(l.Kernels), l.IntervalNS-l.KernelNS)
		l.IntervalNS -= per
		took = per * int64(l.Kernels)
	}
	rest := min(idle-took, st.OtherNS)
	st.OtherNS -= rest
	return st, data + took + rest, n
}

// prefetchWorkers is the prefetch-workers pool size: the dataloader-wait
// finding's recommendation where there is one, else design.md's formula.
// Where the trace's own workers set the pace (PaceNS), each of them took
// Feeders × the pace per batch (design.md: with W workers running, t_batch
// ≈ W × the mean step), and the pool is at least what keeps up with that:
// ceil(t_batch / max(step - t_data, step / 20)) + 1.
func (p *Plan) prefetchWorkers() int {
	n := p.workers
	if n <= 0 {
		n = Workers(&p.Step, p.ObservedStepNS)
	}
	if pace := p.Step.PaceNS; pace > 0 {
		step := p.ObservedStepMeanNS
		rest := max(step-p.Step.DataNS, step/20, 1)
		batch := int64(Feeders) * pace
		n = max(n, int((batch+rest-1)/rest)+1)
	}
	return n
}

// Build makes the plan of a trace from its analysis by analyzers (the
// suite, analyze/suite.Default, which the caller hands in): each fix
// variant verifies the finding of the analyzer whose VerifyWith names it
// (FixFor), and the plan reads what it needs from the typed fixes (package
// fix) of those findings: the munmap calls of reuse-buffers' finding, the
// launches of cuda-graph's, the workers of prefetch-workers'.
func Build(r *audit.Analysis, analyzers []*analyze.Analyzer) (*Plan, error) {
	ix, tl := r.Index, r.Timeline
	if ix == nil || tl == nil {
		return nil, fmt.Errorf("the report of %s has no timeline", r.File)
	}
	if len(ix.Steady) == 0 {
		return nil, fmt.Errorf("no steady steps to replay")
	}
	if len(ix.AnyKernel) == 0 {
		return nil, fmt.Errorf("no GPU kernels to replay")
	}
	p := &Plan{File: r.File, ObservedStepNS: r.Steps.MedianNS, ObservedStepMeanNS: ix.SteadyNS / int64(len(ix.Steady)),
		fixIDs: fixIDs(analyzers), model: r.Model}
	if sp := r.Steps.Precision(); sp.Loose() {
		p.Spread = &sp
	}
	n := int64(len(ix.Steady))
	p.ObservedGPUNS = (ix.SteadyCovered(ix.AnyKernel) + ix.SteadyCovered(ix.Copies)) / n
	b := ix.MeanBreakdown()
	st := &p.Step
	// Communication kernels occupy the GPU like compute on one rank's
	// replay: they replay as GPU time.
	st.DataNS, st.OtherNS, st.ComputeNS = b[index.Data], b[index.Other], b[index.Compute]+b[index.Comm]
	// Sync waits emerge from the replay itself (the host waits for the
	// spin kernel); the sync bucket's time without kernels is host work.
	st.OtherNS += b[index.Sync]
	st.OSObserved = tl.Observed.OSCalls
	rep := representative(ix)
	st.Copies = copiesIn(tl, ix, rep)
	st.Sync = syncsIn(tl, ix, rep)
	mf := fixFinding(r, ReuseBuffers, analyze.SeverityWarning)
	st.Batches = batchesOf(tl, ix, st, mf != nil)
	if f := mf; f != nil {
		var d fix.Munmap
		analyze.DecodeDetail(f, &d)
		st.Munmaps = max(1, int(d.CallsPerStep+0.5))
		st.MunmapBytes = max(st.BatchBytes()/int64(st.Munmaps), 1<<20)
		// The munmap time itself is replayed by real munmap calls.
	} else {
		st.OtherNS += b[index.OS]
	}
	pinData, pinOther := pinning(tl, ix)
	st.PinNS = pinData + pinOther
	st.DataNS = max(st.DataNS-pinData, 0)
	st.OtherNS = max(st.OtherNS-pinOther, 0)
	if f := fixFinding(r, CUDAGraph, analyze.SeverityInfo); f != nil {
		var d fix.Launches
		if analyze.DecodeDetail(f, &d) && d.KernelsPerStep > 0 {
			l := &Launches{Kernels: d.KernelsPerStep, KernelNS: d.KernelNSPerStep / int64(d.KernelsPerStep), IntervalNS: d.LaunchIntervalNS}
			if d.LaunchIntervalMeanNS > 0 {
				// The launches' whole pace: their slow tail is host time
				// of the launch phase, which a CUDA graph removes too.
				l.IntervalNS = d.LaunchIntervalMeanNS
			}
			l.KernelNS = min(max(l.KernelNS, 1), st.ComputeNS/int64(l.Kernels))
			l.IntervalNS = max(l.IntervalNS, l.KernelNS)
			st.Launches = l
			// The host time of the launch phase that the GPU spent idle
			// was other-bucket time: the paced launches replay it.
			st.OtherNS = max(st.OtherNS-int64(l.Kernels)*(l.IntervalNS-l.KernelNS), 0)
		}
	}
	if st.Batches == BatchesWorkers && fixFinding(r, PrefetchWorkers, analyze.SeverityInfo) != nil {
		st.PaceNS = p.ObservedStepMeanNS
	}
	planFixPhases(r, tl, ix, st)
	p.events = hostEvents(tl, ix)
	p.HostEventsPerStep = p.events.total
	p.TraceGBps = traceGBps(st.Copies)
	p.Variants = variants(r, p)
	return p, nil
}

// planFixPhases sets the phases that the pack-copies, persistent-workers
// and keep-cache variants remove, from their findings' typed fixes, and
// takes their time out of the host phases that held it (the small copies'
// waits out of the other phase, the restarts out of the data phase, the
// allocation calls' idle time out of the other phase): the replay makes
// that time with the real operations instead. It also measures what
// persistent workers, no-sync, cache-data and fewer-collectives leave or
// take of the phases that stay (Restart.WarmNS, ReadWorkNS, Reads,
// IssueSavedNS).
func planFixPhases(r *audit.Analysis, tl *timeline.Timeline, ix *index.Index, st *Phases) {
	steps := len(ix.Steady)
	if f := fixFinding(r, PackCopies, analyze.SeverityWarning); f != nil {
		var d fix.SmallCopies
		if analyze.DecodeDetail(f, &d) && d.PerStep >= 1 {
			n := int(d.PerStep + 0.5)
			st.SmallCopies = &SmallCopies{Count: n, Bytes: max(d.Bytes, 4), GapNS: f.WastedNS / int64(n)}
			st.OtherNS = max(st.OtherNS-f.WastedNS, 0)
		}
	}
	if f := fixFinding(r, PersistentWorkers, analyze.SeverityWarning); f != nil {
		var d fix.Restarts
		if analyze.DecodeDetail(f, &d) && d.RestartNS > 0 {
			every := d.EpochSteps
			if every <= 0 {
				every = steps // one restart in the window
			}
			rs := &Restart{EverySteps: max(every, 1), StallNS: d.RestartNS, WarmNS: warmWait(ix)}
			st.Restart = rs
			st.DataNS = max(st.DataNS-rs.StallNS/int64(rs.EverySteps), 0)
		}
	}
	if f := fixFinding(r, KeepCache, analyze.SeverityWarning); f != nil {
		var d fix.Churn
		if analyze.DecodeDetail(f, &d) && d.CallsPerStep >= 1 {
			st.Churn = &Churn{Allocs: max(int(d.CallsPerStep/2+0.5), 1), IdleNS: d.IdleNSPerStep}
			st.OtherNS = max(st.OtherNS-d.IdleNSPerStep, 0)
		}
	}
	if fixFinding(r, NoSync, analyze.SeverityInfo) != nil {
		st.ReadWorkNS = min(readWork(tl, ix), st.OtherNS)
	}
	if f := fixFinding(r, FewerCollectives, analyze.SeverityWarning); f != nil {
		st.IssueSavedNS = f.WastedNS
	}
	if f := fixFinding(r, CacheData, analyze.SeverityWarning); f != nil {
		var d fix.Reads
		n := inSteady(ix, ix.MainReadStarts) / max(steps, 1)
		disk := inSteady(ix, ix.MainDiskReadStarts) / max(steps, 1)
		if analyze.DecodeDetail(f, &d) && n >= 1 && d.ReadsPerStep >= 1 {
			other := ix.MainReads.Intersect(ix.Buckets[index.Other]).Intersect(ix.SteadySet).Len() / int64(steps)
			st.Reads = &Reads{PerStep: n, OtherNS: min(other, st.OtherNS),
				CachedNS: model.CachedReadNS(d.BytesPerStep / int64(max(d.ReadsPerStep, 1))), DiskPerStep: disk}
		}
	}
}

// inSteady counts the times of ts in the steady steps.
func inSteady(ix *index.Index, ts []int64) int {
	n := 0
	for _, t := range ts {
		if ix.InSteady(t) {
			n++
		}
	}
	return n
}

// readSyncNS is how soon after a read-back's copy call a sync counts as
// the read's own wait.
const readSyncNS = 50_000

// readWork is Phases.ReadWorkNS: per steady step, the other-bucket host
// time from the end of each read-back to pageable memory (its copy call, or
// the sync right after it) to the main thread's next call, less
// ReadKeptNS each.
func readWork(tl *timeline.Timeline, ix *index.Index) int64 {
	if !ix.HasMain || len(ix.Steady) == 0 {
		return 0
	}
	other := ix.Buckets[index.Other]
	var total int64
	evs := tl.Tracks[ix.Main].Events
	for k := 0; k < len(evs); k++ {
		e := &tl.Events[evs[k]]
		if e.Kind != timeline.KindAPI || !e.API.IsCopy() || e.Link < 0 || !ix.InSteady(e.Start) {
			continue
		}
		if w := &tl.Events[e.Link]; w.Copy != timeline.CopyDtoH || w.Dst != timeline.MemPageable {
			continue
		}
		end, j := e.End, k+1
		for ; j < len(evs); j++ {
			n := &tl.Events[evs[j]]
			if n.Kind != timeline.KindAPI || n.Start < end {
				continue
			}
			if n.API == timeline.APISync && n.Start-end < readSyncNS {
				end = n.End // the read's own wait
				continue
			}
			break
		}
		if j < len(evs) {
			total += max(0, other.Covered(end, tl.Events[evs[j]].Start)-ReadKeptNS)
		}
	}
	return total / int64(len(ix.Steady))
}

// warmWait is Restart.WarmNS: the shortest data wait of the steady steps
// without a restart, where those waits add up to under a tenth of the
// steps (0 otherwise, or without such steps).
func warmWait(ix *index.Index) int64 {
	restart := map[int]bool{}
	for _, r := range ix.Restarts() {
		restart[r.Step] = true
	}
	var sum, least int64 = 0, -1
	for k, w := range ix.PerSteady(ix.Buckets[index.Data].Covered) {
		if restart[k] {
			continue
		}
		sum += w
		if least < 0 || w < least {
			least = w
		}
	}
	if least <= 0 || sum*10 >= ix.SteadyNS {
		return 0
	}
	return least
}

// Where batches come from (Step.Batches).
const (
	BatchesMain    = "main"
	BatchesWorkers = "workers"
	BatchesReused  = "reused"
)

// batchesOf says where the step's batches come from. munmaps says the
// main thread unmaps batch-sized memory each step. What the trace shows of
// DataLoader workers comes first: their iterator on the main thread
// (_MultiProcessingDataLoaderIter.__next__), or the threads and processes
// PyTorch names for them (pt_data_pin, pt_data_worker). Only then does the
// data phase's length decide: a main thread waiting long for slow workers
// would otherwise look like one building its batches.
func batchesOf(tl *timeline.Timeline, ix *index.Index, st *Phases, munmaps bool) string {
	if st.BatchBytes() == 0 {
		return ""
	}
	if workersInTrace(tl, ix) {
		return BatchesWorkers
	}
	if st.DataNS*BuildGBps >= st.BatchBytes() {
		return BatchesMain
	}
	if munmaps {
		return BatchesWorkers
	}
	return BatchesReused
}

// workerThreads are the names PyTorch gives the DataLoader's pin-memory
// thread and its worker processes' threads.
var workerThreads = []string{"pt_data_pin", "pt_data_worker"}

// workersInTrace says whether the trace shows DataLoader workers: their
// iterator in the main thread's data ranges, or a thread of theirs.
func workersInTrace(tl *timeline.Timeline, ix *index.Index) bool {
	if ix.HasMain {
		for _, i := range tl.Tracks[ix.Main].Events {
			e := &tl.Events[i]
			if ix.IsData(e) && strings.Contains(tl.Name(e.Name), "MultiProcessing") {
				return true
			}
		}
	}
	for i := range tl.Tracks {
		tr := &tl.Tracks[i]
		if tr.Kind != timeline.TrackHost || len(tr.Events) == 0 {
			continue
		}
		for _, n := range workerThreads {
			if strings.Contains(tr.Name, n) {
				return true
			}
		}
	}
	return false
}

// representative is the steady step whose length is the median.
func representative(ix *index.Index) index.Step {
	s := append([]index.Step(nil), ix.Steady...)
	sort.Slice(s, func(i, j int) bool { return s[i].Dur() < s[j].Dur() })
	return s[(len(s)-1)/2]
}

// copiesIn lists the host-device copies of at least MinCopyBytes that run
// in step s on the analysed devices.
func copiesIn(tl *timeline.Timeline, ix *index.Index, s index.Step) []Copy {
	var out []Copy
	for i := range tl.Events {
		e := &tl.Events[i]
		if !index.HostCopy(e) || e.Bytes < MinCopyBytes || !ix.OnDevices(e) || e.Start < s.Start || e.Start >= s.End {
			continue
		}
		out = append(out, Copy{Dir: e.Copy, Bytes: e.Bytes, Pageable: !index.PinnedSide(e),
			SideStream: !ix.KernelStreams[e.Track], ObservedNS: e.Dur()})
	}
	return out
}

// syncsIn reports whether the main thread synchronises with the GPU in s.
func syncsIn(tl *timeline.Timeline, ix *index.Index, s index.Step) bool {
	if !ix.HasMain {
		return false
	}
	for _, i := range tl.Tracks[ix.Main].Events {
		e := &tl.Events[i]
		if e.Kind == timeline.KindAPI && e.API == timeline.APISync && e.Start >= s.Start && e.Start < s.End {
			return true
		}
	}
	return false
}

// pinNames are the PyTorch operators that copy a tensor into pinned memory.
var pinNames = map[string]bool{"aten::pin_memory": true, "aten::_pin_memory": true}

// pinning is the main thread's time per steady step inside pin_memory
// operators, split into the part the data bucket holds and the part the
// other bucket holds.
func pinning(tl *timeline.Timeline, ix *index.Index) (data, other int64) {
	if !ix.HasMain {
		return 0, 0
	}
	var spans []ivl.Interval
	for _, i := range tl.Tracks[ix.Main].Events {
		e := &tl.Events[i]
		if e.Kind == timeline.KindOp && pinNames[tl.Name(e.Name)] {
			spans = append(spans, ivl.Interval{Start: e.Start, End: e.End})
		}
	}
	if len(spans) == 0 {
		return 0, 0
	}
	pin := ivl.Union(spans).Intersect(ix.SteadySet)
	n := int64(len(ix.Steady))
	return pin.OverlapLen(ix.Buckets[index.Data]) / n, pin.OverlapLen(ix.Buckets[index.Other]) / n
}

// hostEvents counts the CPU operators and CUDA API calls recorded on the
// main thread per steady step: all of them, those that start in the data
// phase, those that start where the GPU idles (the other, sync and OS
// buckets) and those that start while it computes. Events that start while
// the GPU computes cost the profiler's time there too, but the GPU's work,
// not the host's, sets the step's length then, unless the step is
// launch-bound (LessProfiler).
func hostEvents(tl *timeline.Timeline, ix *index.Index) phaseEvents {
	if !ix.HasMain || len(ix.Steady) == 0 {
		return phaseEvents{}
	}
	var n phaseEvents
	data := ix.Buckets[index.Data].Cursor()
	idle := [...]ivl.Cursor{ix.Buckets[index.Other].Cursor(), ix.Buckets[index.Sync].Cursor(), ix.Buckets[index.OS].Cursor()}
	busy := [...]ivl.Cursor{ix.Buckets[index.Compute].Cursor(), ix.Buckets[index.Comm].Cursor()}
	for _, i := range tl.Tracks[ix.Main].Events {
		e := &tl.Events[i]
		if (e.Kind != timeline.KindOp && e.Kind != timeline.KindAPI) || !ix.InSteady(e.Start) {
			continue
		}
		n.total++
		if data.Contains(e.Start) {
			n.data++
			continue
		}
		switch {
		case idle[0].Contains(e.Start) || idle[1].Contains(e.Start) || idle[2].Contains(e.Start):
			n.idle++
		case busy[0].Contains(e.Start) || busy[1].Contains(e.Start):
			n.busy++
		}
	}
	k := len(ix.Steady)
	return phaseEvents{total: n.total / k, data: n.data / k, idle: n.idle / k, busy: n.busy / k}
}

// traceGBps is bytes over GPU time of the host-to-device copies, by kind.
func traceGBps(copies []Copy) TraceGBps {
	var pb, pt, qb, qt int64
	for _, c := range copies {
		if c.Dir != timeline.CopyHtoD || c.ObservedNS <= 0 {
			continue
		}
		if c.Pageable {
			pb, pt = pb+c.Bytes, pt+c.ObservedNS
		} else {
			qb, qt = qb+c.Bytes, qt+c.ObservedNS
		}
	}
	var g TraceGBps
	if pt > 0 {
		g.Pageable = float64(pb) / float64(pt)
	}
	if qt > 0 {
		g.Pinned = float64(qb) / float64(qt)
	}
	return g
}

// fixFinding is the first finding at or above min whose fix is the
// variant named name (audit.TransformOf), or nil.
func fixFinding(r *audit.Analysis, name string, min analyze.Severity) *analyze.Finding {
	for i := range r.Findings {
		if f := &r.Findings[i]; f.Severity >= min && audit.TransformOf(f) == name {
			return f
		}
	}
	return nil
}

// Workers is the prefetch pool size: design.md's formula from the step's
// data wait. The run caps it at the CPU count of the machine it runs on.
func Workers(st *Phases, stepNS int64) int { return fix.Workers(st.DataNS, stepNS) }
