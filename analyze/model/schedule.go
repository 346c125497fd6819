package model

import "github.com/traceaudit/traceaudit/timeline"

// Schedule is the step graph of the model's window with one transform's
// costs applied, written as a program: per host thread its calls in order,
// each with the host time before it, the GPU work it queues and the work
// it waits for. The replay's graph engine runs it with real kernels,
// copies and waits, so that what it measures is this model's step on a
// real GPU (docs/replay.md).
type Schedule struct {
	// Name is the transform ("observed" for the graph as traced, the
	// profiler's cost removed).
	Name string `json:"name"`
	// Steps is how many steps one pass of the window holds.
	Steps int `json:"steps"`
	// Main is the main thread's index in Threads: the loop's pace is its.
	Main    int      `json:"main"`
	Threads []Thread `json:"threads"`
	// Work is the GPU work of one pass; Streams how many streams it runs
	// on (Work.Stream below it).
	Work    []Work `json:"work"`
	Streams int    `json:"streams"`
	// Pool, when set, serves the main thread's data waits (Call.Fetch)
	// from producers that build batches, as DataLoader workers do.
	Pool *Pool `json:"pool,omitempty"`
	// StepNS is the model's simulated step with these costs.
	StepNS int64 `json:"step_ns"`
}

// Pool is a loader of Workers producers, each building a batch of Bytes
// in BatchNS and at most two batches ahead; handing one over costs
// HandoffNS.
type Pool struct {
	Workers   int   `json:"workers"`
	BatchNS   int64 `json:"batch_ns"`
	HandoffNS int64 `json:"handoff_ns"`
	Bytes     int64 `json:"bytes,omitempty"`
}

// Thread is one host thread's calls and its host time after the last one
// to the window's end.
type Thread struct {
	Calls  []Call `json:"calls"`
	TailNS int64  `json:"tail_ns"`
}

// CallKind is what a host call does on the GPU.
type CallKind uint8

// Call kinds.
const (
	// CallHost is host time only: a call the transform took away (its
	// HostNS is what is left of it), an allocation, a call that queues
	// nothing.
	CallHost CallKind = iota
	// CallLaunch queues Work (kernels, memsets, collectives).
	CallLaunch
	// CallCopy queues one copy (Work[0]); from pageable host memory it
	// blocks the host until the copy ends, as the CUDA driver does.
	CallCopy
	// CallSync waits for Wait to end.
	CallSync
)

// Call is one host call of a schedule.
type Call struct {
	// GapNS is the host time before the call, after the thread's previous
	// call returned; with Fetch, the main thread first takes a batch from
	// the Pool, and GapNS is the rest.
	GapNS int64 `json:"gap_ns"`
	Fetch bool  `json:"fetch,omitempty"`
	// Anchor, when 0 or more, is the main thread's call this one follows:
	// it starts OffsetNS after that call started (a thread that waits for
	// the main thread's work, as autograd's does).
	Anchor   int32    `json:"anchor"`
	OffsetNS int64    `json:"offset_ns,omitempty"`
	Kind     CallKind `json:"kind"`
	// HostNS is the call's own host time when it does not wait.
	HostNS int64 `json:"host_ns"`
	// Wait is the GPU work (an index into Schedule.Work) the call returns
	// after, -1 for none, and RetNS the traced time from that work's end
	// to the call's return.
	Wait  int32 `json:"wait"`
	RetNS int64 `json:"ret_ns,omitempty"`
	// Work is the GPU work the call queues, in order.
	Work []int32 `json:"work,omitempty"`
}

// WorkKind is what a piece of GPU work is.
type WorkKind uint8

// Work kinds.
const (
	WorkKernel WorkKind = iota
	WorkHtoD
	WorkDtoH
)

// Work is one piece of GPU work of a schedule.
type Work struct {
	Stream int32    `json:"stream"`
	Kind   WorkKind `json:"kind"`
	// DurNS is its GPU time in the trace (a copy's, at the traced
	// bandwidth; the replay copies Bytes at the box's).
	DurNS int64 `json:"dur_ns"`
	Bytes int64 `json:"bytes,omitempty"`
	// Pinned says a copy's host side is page-locked: its call returns at
	// once.
	Pinned bool `json:"pinned,omitempty"`
	// Fresh says a pageable device-to-host copy wrote into memory fresh
	// from the OS, its pages faulted in as the copy ran (a new tensor of
	// .cpu() that glibc maps anew): it ran at under a third of the
	// bandwidth of the window's fastest such copy (markFresh).
	Fresh bool `json:"fresh,omitempty"`
	// After, when 0 or more, is work on another stream this starts after
	// (an event wait).
	After int32 `json:"after"`
	// LatNS is the traced time from its call's start to its start where
	// its stream was idle (the model's launch latency); for work no call
	// launched, its traced offset from the call it follows.
	LatNS int64 `json:"lat_ns,omitempty"`
}

// Observed names the schedule of the graph as traced.
const Observed = "observed"

// keptGraph is what a model keeps to write schedules (Options.KeepSchedules).
type keptGraph struct {
	g     *graph
	costs map[string]costs
	steps map[string]int64
}

// Schedule returns the named transform's schedule (Observed for the
// graph as traced, without the profiler's cost), or false where the model
// did not simulate it, was built without Options.KeepSchedules, or the
// costs hold one no schedule can express (cuda-graph, alone or in all: a
// captured graph is not a sequence of calls).
func (m *Model) Schedule(name string) (*Schedule, bool) {
	if !m.HasSchedule(name) {
		return nil, false
	}
	c := m.keep.costs[name]
	s := m.keep.g.schedule(&c)
	s.Name, s.StepNS = name, m.keep.steps[name]
	return s, true
}

// HasSchedule reports whether Schedule(name) writes one, without writing
// it.
func (m *Model) HasSchedule(name string) bool {
	if m == nil || m.keep == nil {
		return false
	}
	c, ok := m.keep.costs[name]
	return ok && !c.cudaGraph
}

// schedule writes the graph with costs c applied as a program.
func (g *graph) schedule(c *costs) *Schedule {
	s := &Schedule{Steps: g.steps, Threads: make([]Thread, g.threads), Streams: g.streams}
	if c.workers > 0 {
		s.Pool = &Pool{Workers: c.workers, BatchNS: c.pool.batchNS, HandoffNS: c.pool.handoffNS, Bytes: c.pool.bytes}
	}
	copyStream := int32(-1)
	if c.copyStream {
		copyStream = int32(g.streams)
		s.Streams++
	}
	// Calls, per thread in program order (build appends them so).
	// slot is, per node, a call's index among its thread's calls or a
	// piece of GPU work's index in s.Work.
	slot := make([]int32, len(g.nodes))
	for i := range g.nodes {
		nd := &g.nodes[i]
		if nd.gpu {
			continue
		}
		th := &s.Threads[nd.lane]
		slot[i] = int32(len(th.Calls))
		gap := c.gap(nd)
		cl := Call{Anchor: -1, Wait: -1}
		if nd.gapData > 0 && c.workers > 0 && nd.lane == g.mainLane {
			cl.Fetch, gap = true, max(0, gap-nd.gapData)
		}
		cl.GapNS = gap
		if nd.anchor >= 0 {
			cl.Anchor, cl.OffsetNS = -2-nd.anchor, nd.offset // resolved below
		}
		dur, waits := c.call(nd)
		cl.HostNS = dur
		switch {
		case nd.class == launchClass:
			cl.Kind = CallLaunch
		case nd.class.IsCopy() && nd.copy != timeline.CopyUnknown && !(c.packCopies && nd.packed && dur == 0):
			cl.Kind = CallCopy
		case waits && nd.wait >= 0:
			cl.Kind = CallSync
		}
		if waits && nd.wait >= 0 {
			cl.Wait, cl.RetNS = -2-nd.wait, nd.ret // a node; resolved below
		}
		th.Calls = append(th.Calls, cl)
	}
	for l := range g.threads {
		s.Threads[l].TailNS = g.tailOf(c, int32(l)) // as the simulation has it
	}
	if g.mainLane >= 0 {
		s.Main = int(g.mainLane)
	}
	// GPU work, each queued by its launching call (work no call of the
	// window launched: by the main thread's call it follows).
	for i := range g.nodes {
		nd := &g.nodes[i]
		if !nd.gpu {
			continue
		}
		w := Work{Stream: nd.lane - int32(g.threads), DurNS: c.work(nd), Bytes: nd.bytes, After: -1, LatNS: nd.lat}
		if nd.launch < 0 {
			w.LatNS = nd.offset
		}
		switch nd.copy {
		case timeline.CopyHtoD:
			w.Kind = WorkHtoD
		case timeline.CopyDtoH:
			w.Kind = WorkDtoH
		}
		if w.Kind == WorkHtoD && copyStream >= 0 {
			w.Stream = copyStream
		}
		slot[i] = int32(len(s.Work))
		s.Work = append(s.Work, w)
	}
	// Each call queues its work in the order the work started.
	for i := range g.nodes {
		nd := &g.nodes[i]
		if !nd.gpu {
			continue
		}
		w := &s.Work[slot[i]]
		if nd.dep >= 0 && !(c.copyStream && nd.copy == htodKind) {
			w.After = slot[nd.dep]
		}
		by := nd.launch
		if by < 0 {
			by = nd.anchor
		}
		if by < 0 {
			by = g.laneFirst[g.mainLane]
		}
		if by < 0 {
			continue
		}
		bn := &g.nodes[by]
		cl := &s.Threads[bn.lane].Calls[slot[by]]
		cl.Work = append(cl.Work, slot[i])
		if w.Kind != WorkKernel && cl.Kind == CallCopy {
			w.Pinned = bn.pinned || cl.Wait == -1 && bn.blocking
		}
		if cl.Kind == CallHost && nd.launch >= 0 {
			cl.Kind = CallLaunch // a call the graph does not class as a launch, which queued work
		}
	}
	s.markFresh()
	if c.packCopies {
		s.pack()
	}
	for l := range s.Threads {
		for k := range s.Threads[l].Calls {
			cl := &s.Threads[l].Calls[k]
			if cl.Anchor <= -2 {
				cl.Anchor = slot[-2-cl.Anchor]
			}
			if cl.Wait <= -2 {
				cl.Wait = slot[-2-cl.Wait]
			}
		}
	}
	return s
}

// freshBytes is the least size of a copy markFresh judges: a smaller
// one's time is its call's, not its pages'.
const freshBytes = 1 << 20

// markFresh sets Work.Fresh on the pageable device-to-host copies of
// freshBytes or more that ran at under a third of the bandwidth of the
// fastest of them, where there are two or more.
func (s *Schedule) markFresh() {
	var fastest float64
	n := 0
	judged := func(w *Work) bool {
		return w.Kind == WorkDtoH && !w.Pinned && w.Bytes >= freshBytes && w.DurNS > 0
	}
	for i := range s.Work {
		if w := &s.Work[i]; judged(w) {
			fastest = max(fastest, float64(w.Bytes)/float64(w.DurNS))
			n++
		}
	}
	if n < 2 {
		return
	}
	for i := range s.Work {
		if w := &s.Work[i]; judged(w) && 3*float64(w.Bytes)/float64(w.DurNS) < fastest {
			w.Fresh = true
		}
	}
}

// pack makes each run of small host-to-device copies on a thread, packed
// by pack-copies (pinned, none waited for), one copy of their bytes at the
// run's last call: the stacked buffer's one non-blocking copy.
func (s *Schedule) pack() {
	for l := range s.Threads {
		calls := s.Threads[l].Calls
		run := int32(-1) // the run's copy so far
		for k := range calls {
			cl := &calls[k]
			if cl.Kind == CallHost && len(cl.Work) == 0 && cl.Wait == -1 {
				continue // host time only (a packed copy's sync, now nothing): the run goes on
			}
			if cl.Kind != CallCopy || len(cl.Work) != 1 || s.Work[cl.Work[0]].Kind != WorkHtoD ||
				!s.Work[cl.Work[0]].Pinned || cl.Wait != -1 || s.Work[cl.Work[0]].Bytes >= packBytes {
				run = -1
				continue
			}
			w := cl.Work[0]
			if run >= 0 {
				// The run's copy so far moves into this one, the last yet.
				prev := &s.Work[run]
				s.Work[w].Bytes += prev.Bytes
				s.Work[w].DurNS += prev.DurNS
				prev.Bytes, prev.DurNS = 0, 0
				for j := k - 1; j >= 0; j-- {
					if pc := &calls[j]; len(pc.Work) == 1 && pc.Work[0] == run {
						pc.Work, pc.Kind = nil, CallHost
						break
					}
				}
			}
			run = w
		}
	}
}
