// Package model is the step model: the steady steps of one trace as a
// dependency graph of host calls and GPU work, run by a discrete-event
// simulator as observed and once per fix (design.md, "The step model").
//
// The graph holds, per host thread of the main process that launches GPU
// work, its API calls in order with the host time between them (split
// into data-loading, OS memory calls and other work), and per GPU stream
// its work in order. Edges: program order on a thread and on a stream; a
// launch to the work it queued; a blocking call (synchronisation, a
// blocking or pageable copy, a freeing call) to the GPU work it waited
// for; and one stream's work to another's where the trace shows it
// starting the moment the other's ended (an event wait).
//
// Simulating the unchanged graph must give back the trace's mean steady
// step: that ratio is Model.Fidelity, the model's self-check. Each fix is
// a transform of the graph's costs, and its estimate is the simulated
// step with it. Cost: O(n log n) to build for the n events of the steady
// steps, O(n) per simulation.
package model

import (
	"cmp"
	"slices"
	"sort"
	"strings"

	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/internal/hugepage"
	"github.com/traceaudit/traceaudit/timeline"
)

// joinNS is how close one stream's work must start after another's ended
// for the model to read an event wait between them.
const joinNS = 3_000

// queuedNS is how soon after its stream's previous work ended a piece of
// work launched while that work ran must start to count as queued behind it.
const queuedNS = 50_000

// anchorGapNS is the wait after which another thread's call is taken to
// follow the main thread.
const anchorGapNS = 1_000_000

// node is one host call or one piece of GPU work of the graph.
type node struct {
	ev     int32
	gpu    bool
	lane   int32 // host thread or GPU stream, dense
	s, e   int64 // observed start and end
	class  timeline.APIClass
	copy   timeline.CopyKind
	bytes  int64
	events int32 // profiler events recorded in the call (the call itself: 1)

	// A host call.
	gap              int64 // host time since the thread's previous call ended
	gapData, gapOS   int64 // of which in data-loading ranges, in OS memory calls
	gapRestart       int64 // of which the loader starting again at an epoch boundary
	gapRead          int64 // of which in file reads (index.Index.MainReads)
	gapReadData      int64 // of which in file reads inside data-loading ranges
	gapReads         int32 // file reads that start in the gap
	gapDiskReads     int32 // of which served by the disk (index.DiskReadNS or more)
	gapDiskReadsData int32 // of which inside data-loading ranges
	gapIssue         int64 // of which issuing collectives (Options.Issue)
	gapEvents        int32 // profiler events recorded in the gap
	gapEventsData    int32 // of which inside data-loading ranges
	blocking         bool  // returns only when the GPU work wait has ended
	wait             int32 // that GPU work's node, or -1
	ret              int64 // from the waited work's end to the call's return
	base             int64 // the call's own cost when it does not wait
	pageable, pinned bool  // a copy call with pageable or pinned host memory
	alloc            bool  // a device allocation or freeing call
	readback         bool  // a device-to-host copy to pageable memory (.item(), .cpu()): its call, its wait or the copy
	// afterRead marks a call right after a read-back: the host time before
	// it processes what was read (a metric on the host).
	afterRead bool
	// packed marks a small pageable host-to-device copy call, or the sync
	// right after one: one tensor copied at a time.
	packed bool
	// copyWait marks a sync right after a pageable host-to-device copy:
	// the copy's own wait (PyTorch synchronises the stream after a copy
	// from pageable memory), which a non-blocking copy from pinned memory
	// does not make.
	copyWait bool

	// GPU work.
	launch int32 // the launching call's node, or -1
	lat    int64 // from the launching call's start to the work's start
	dep    int32 // other-stream work this waits for, or -1

	// A call of another thread than the main one, after a long wait: it
	// follows the main thread's call anchor by offset.
	anchor int32
	offset int64
	comm   bool
}

// graph is the steady window's nodes in processing order (see order).
type graph struct {
	nodes   []node
	order   []step // processing order: every dependency comes first
	threads int
	streams int
	// laneFirst and laneLast hold each lane's first and last node, -1 if
	// none (threads first, then streams at index threads+k).
	laneFirst, laneLast []int32
	// tail is, per thread, the host time after its last call to the
	// window's end; tailRead holds when the main thread's last call read
	// back and no data range lies in its tail (no-sync takes it, as it
	// takes a read's gap).
	tail     []int64
	tailRead bool
	mainLane int32 // the main thread's lane, -1 when it launches nothing
	lo, hi   int64 // the window
	steps    int
	// stepNS is the simulated unchanged step (the profiler's cost taken
	// out), once simulated: the pace the loader's model reads for workers
	// running.
	stepNS    int64
	profiled  bool
	htodLanes map[int64]int32 // per device, the copy engine lane (appended)
	// scratch is what simulate reuses from one run to the next.
	scratch scratch
}

// scratch holds simulate's per-node buffers: a model simulates its graph
// a dozen times or more (each fix, each pool size), and clearing fresh
// buffers was a sixth of its time. done's stamps grow across runs, so that
// it never needs clearing.
type scratch struct {
	simS, simE []int64
	done       []int32
	stamp      int32
	pred       []int32
	seg        []int64
	segBucket  []index.Bucket
}

// step is one processing event: a node's start (calls), its end (calls),
// or the whole node (GPU work).
type step struct {
	n     int32
	phase uint8 // 0 call start, 1 GPU work, 2 call end
	t     int64
}

// window picks the longest run of consecutive steady steps (apart by at
// most a tenth of a step), at most maxWindowSteps of it: the model
// simulates one stretch of the loop without the pauses left out of it.
func window(ix *index.Index) (lo, hi int64, n int) {
	best, bestN := 0, 0
	for i := 0; i < len(ix.Steady); {
		j := i + 1
		for j < len(ix.Steady) && ix.Steady[j].Start-ix.Steady[j-1].End <= ix.Steady[j-1].Dur()/10 {
			j++
		}
		if j-i > bestN {
			best, bestN = i, j-i
		}
		i = j
	}
	if bestN == 0 {
		return 0, 0, 0
	}
	if bestN > maxWindowSteps && len(ix.Restarts()) == 0 {
		// The middle of a long run: the loop repeats, and simulating
		// thousands of steps a dozen times costs more than the analysis.
		best += (bestN - maxWindowSteps) / 2
		bestN = maxWindowSteps
	}
	return ix.Steady[best].Start, ix.Steady[best+bestN-1].End, bestN
}

// maxWindowSteps is the most steps the model simulates: as many as the
// longest stall period read (32 workers), which the window, simulated
// back to back, then holds whole. A window with epoch restarts keeps all
// its steps, so that it holds whole epochs.
const maxWindowSteps = 32

// launchesIn reports whether one of track t's API calls that launched GPU
// work starts in [lo, hi) (index.Calls.AnyIn, without listing the track's
// calls outside the window). Cost: O(log n + the events in the window).
func launchesIn(tl *timeline.Timeline, t timeline.TrackID, lo, hi int64) bool {
	evs := tl.Tracks[t].Events
	k := sort.Search(len(evs), func(k int) bool { return tl.Events[evs[k]].Start >= lo })
	for ; k < len(evs) && tl.Events[evs[k]].Start < hi; k++ {
		if e := &tl.Events[evs[k]]; e.Kind == timeline.KindAPI && e.Link >= 0 {
			return true
		}
	}
	return false
}

// inWindow counts the API calls on the threads and the device work that
// start in [lo, hi): about the graph's nodes.
func inWindow(ix *index.Index, threads []timeline.TrackID, lo, hi int64) int {
	tl := ix.TL
	from := func(evs []int32, t int64) int {
		return sort.Search(len(evs), func(k int) bool { return tl.Events[evs[k]].Start >= t })
	}
	n := from(ix.DeviceWork, hi) - from(ix.DeviceWork, lo)
	for _, t := range threads {
		evs := tl.Tracks[t].Events
		for _, i := range evs[from(evs, lo):from(evs, hi)] {
			if tl.Events[i].Kind == timeline.KindAPI {
				n++
			}
		}
	}
	return n
}

// build makes the graph of the steady window [lo, hi).
func build(ix *index.Index, lo, hi int64, steps int, issue map[timeline.TrackID]ivl.Set) *graph {
	tl := ix.TL
	g := &graph{lo: lo, hi: hi, steps: steps, mainLane: -1, htodLanes: map[int64]int32{},
		profiled: tl.Observed.CanAnnotations && tl.Observed.HostOps}
	pid := tl.Tracks[ix.Main].PID

	// Host threads of the main process that launch GPU work in the window.
	laneOf := map[timeline.TrackID]int32{}
	var threads []timeline.TrackID
	for t := range tl.Tracks {
		tr := &tl.Tracks[t]
		if tr.Kind != timeline.TrackHost || tr.PID != pid {
			continue
		}
		if launchesIn(tl, timeline.TrackID(t), lo, hi) {
			threads = append(threads, timeline.TrackID(t))
		}
	}
	for i, t := range threads {
		laneOf[t] = int32(i)
		if ix.IsMain(t) {
			g.mainLane = int32(i)
		}
	}
	g.threads = len(threads)
	// Sized for the window's events, not the trace's: a window is a few
	// steps of a trace that may hold hundreds.
	room := inWindow(ix, threads, lo, hi)
	g.nodes = hugepage.Make[node](0, room) // huge pages: fresh memory faults in 2 MB at a time
	nodeOf := make(map[int32]int32, room)

	restarts := ix.Restarts()
	readsInData := ix.MainReads.Intersect(ix.MainData)
	var allIssue ivl.Set
	for _, sp := range issue {
		allIssue = allIssue.Union(sp)
	}

	// Calls, thread by thread, with the host time between them.
	g.tail = make([]int64, len(threads))
	for li, t := range threads {
		evs := tl.Tracks[t].Events
		k := sort.Search(len(evs), func(k int) bool { return tl.Events[evs[k]].Start >= lo })
		prevEnd := lo
		var events, dataEvents int32 // recorded events since the previous call, and of them in data ranges
		var lastCall int32 = -1
		isMain := ix.IsMain(t)
		for ; k < len(evs); k++ {
			i := evs[k]
			e := &tl.Events[i]
			if e.Start >= hi {
				break
			}
			if e.Kind != timeline.KindAPI {
				if e.Kind == timeline.KindOp || e.Kind == timeline.KindRange || e.Kind == timeline.KindOS {
					if lastCall >= 0 && e.Start < g.nodes[lastCall].e {
						g.nodes[lastCall].events++
					} else {
						events++
						if isMain && ix.MainData.Contains(e.Start) {
							dataEvents++
						}
					}
				}
				continue
			}
			if e.End > hi || e.Start < prevEnd && e.Link < 0 {
				continue // past the window, or nested in the previous call (a driver call under a runtime one)
			}
			// A launch that overlaps the previous call keeps its edge to
			// its work, with no host time before it.
			n := node{ev: i, lane: int32(li), s: e.Start, e: e.End, class: e.API, wait: -1, launch: -1, dep: -1, anchor: -1,
				gap: max(0, e.Start-prevEnd), gapEvents: events, gapEventsData: dataEvents, events: 1}
			if sp, ok := issue[t]; ok && !isMain {
				n.gapIssue = sp.Covered(prevEnd, e.Start)
			}
			if isMain {
				// The main thread waits in backward() while the autograd
				// thread issues the gradients' collectives: their issue
				// time on any thread is the main thread's too.
				n.gapIssue = allIssue.Covered(prevEnd, e.Start)
				n.gapData = ix.MainData.Covered(prevEnd, e.Start)
				n.gapOS = ix.MainOSCalls.Covered(prevEnd, e.Start)
				if len(ix.MainReadStarts) > 0 {
					n.gapRead = ix.MainReads.Covered(prevEnd, e.Start)
					n.gapReadData = readsInData.Covered(prevEnd, e.Start)
					n.gapReads = int32(ix.MainReadsIn(prevEnd, e.Start))
					n.gapDiskReads, n.gapDiskReadsData = diskReads(ix, prevEnd, e.Start)
				}
				for _, r := range restarts {
					n.gapRestart += max(0, min(e.Start, r.End)-max(prevEnd, r.Start))
				}
			}
			name := tl.Name(e.Name)
			n.alloc = e.API == timeline.APIAlloc
			if n.alloc && strings.Contains(strings.ToLower(name), "free") {
				n.blocking = true // cudaFree synchronises the device
			}
			if e.API == timeline.APISync {
				n.blocking = true
			}
			if e.API.IsCopy() && e.Link >= 0 {
				w := &tl.Events[e.Link]
				n.copy, n.bytes = w.Copy, w.Bytes
				host := w.Src
				if w.Copy == timeline.CopyDtoH {
					host = w.Dst
				}
				n.pageable = host == timeline.MemPageable
				n.pinned = host == timeline.MemPinned
				if e.API == timeline.APIMemcpy || n.pageable || w.Copy == timeline.CopyDtoH && !n.pinned {
					n.blocking = true
				}
				// A read-back: .item(), .cpu(), .numpy() into pageable memory.
				n.readback = index.ReadBack(w)
			}
			n.packed = n.copy == timeline.CopyHtoD && n.pageable && n.bytes < packBytes
			if e.API == timeline.APISync && lastCall >= 0 && e.Start-g.nodes[lastCall].e < index.CopyWaitNS {
				// A sync right after a copy call is that copy's own wait.
				pc := &g.nodes[lastCall]
				n.readback = pc.readback
				n.packed = pc.packed
				n.copyWait = pc.copy == timeline.CopyHtoD && pc.pageable
			}
			n.afterRead = lastCall >= 0 && g.nodes[lastCall].readback && !n.readback
			nodeOf[i] = int32(len(g.nodes))
			lastCall = int32(len(g.nodes))
			g.nodes = append(g.nodes, n)
			prevEnd, events, dataEvents = max(prevEnd, e.End), 0, 0
		}
		g.tail[li] = max(0, hi-prevEnd)
		if isMain {
			g.tailRead = lastCall >= 0 && g.nodes[lastCall].readback && ix.MainData.Covered(prevEnd, hi) == 0
		}
	}

	// GPU work on the devices that a call of the window launched, wherever
	// it ran, unlaunched work that started in the window and the work
	// carried into it that its end lacks (carriedIn): each cycle of the
	// simulation then holds one window's work. Work starts after the call
	// that launched it, so none before lo matters, and none a window's
	// length past hi (a GPU that far behind makes the model unfaithful:
	// lagGrowth).
	streamOf := map[timeline.TrackID]int32{}
	first := sort.Search(len(ix.DeviceWork), func(k int) bool { return tl.Events[ix.DeviceWork[k]].Start >= lo })
	carried := carriedIn(ix, nodeOf, first, lo, hi)
	for _, w := range ix.DeviceWork[first:] {
		e := &tl.Events[w]
		if e.Start >= hi+(hi-lo) {
			break
		}
		_, launched := nodeOf[e.Link]
		if e.Link >= 0 && !launched && tl.Events[e.Link].Start < lo && !carried[w] {
			continue // the previous cycle's work: launched before the window
		}
		if !launched && (e.Start < lo || e.Start >= hi) {
			continue
		}
		st, ok := streamOf[e.Track]
		if !ok {
			st = int32(g.threads + len(streamOf))
			streamOf[e.Track] = st
		}
		n := node{ev: w, gpu: true, lane: st, s: e.Start, e: e.End, copy: e.Copy, bytes: e.Bytes, wait: -1, launch: -1, dep: -1, anchor: -1,
			comm: e.Has(timeline.FlagComm), pageable: e.Copy == timeline.CopyHtoD && e.Src == timeline.MemPageable,
			readback: index.ReadBack(e)}
		if e.Link >= 0 {
			if c, ok := nodeOf[e.Link]; ok {
				n.launch = c
			}
		}
		g.nodes = append(g.nodes, n)
	}
	g.streams = len(streamOf)
	g.link(ix)
	g.sortOrder()
	return g
}

// carriedIn is the work launched before the window that runs in it which
// the window keeps as its own, unlaunched (the main thread's calls pace
// it). In a periodic loop the work the GPU carries into the window from
// the previous one matches the work launched in it that runs past its end,
// and the window drops the former. Where the trace ends with the host
// done and the GPU behind it, nothing runs past the end, and the window's
// own calls launch less work than its steps ran: it keeps as much of the
// carried work, the latest first, as the end lacks.
func carriedIn(ix *index.Index, nodeOf map[int32]int32, first int, lo, hi int64) map[int32]bool {
	tl := ix.TL
	var in, out int64
	var before []int32
	for _, w := range ix.DeviceWork[first:] {
		e := &tl.Events[w]
		if e.Start >= hi+(hi-lo) {
			break
		}
		_, launched := nodeOf[e.Link]
		switch {
		case launched && e.Start >= hi:
			out += e.End - e.Start
		case !launched && e.Link >= 0 && tl.Events[e.Link].Start < lo && e.Start < hi:
			in += e.End - e.Start
			before = append(before, w)
		}
	}
	short := in - out
	if short*carriedShare < hi-lo {
		return nil
	}
	keep := map[int32]bool{}
	for k := len(before) - 1; k >= 0 && short > 0; k-- {
		e := &tl.Events[before[k]]
		keep[before[k]] = true
		short -= e.End - e.Start
	}
	return keep
}

// carriedShare is the share of the window (1/carriedShare) by which the
// work carried into it must exceed the work it carries out for carriedIn
// to keep any: below it, the loop is periodic and its window whole.
const carriedShare = 20

// link fills the edges that need every node: the stream order and gaps,
// event waits, launch latencies and what each blocking call waited for.
func (g *graph) link(ix *index.Index) {
	tl := ix.TL
	lanes := g.threads + g.streams
	g.laneFirst = slices.Repeat([]int32{-1}, lanes)
	g.laneLast = slices.Repeat([]int32{-1}, lanes)
	byLane := make([][]int32, lanes)
	perLane := make([]int, lanes)
	for i := range g.nodes {
		perLane[g.nodes[i].lane]++
	}
	for l := range byLane {
		byLane[l] = make([]int32, 0, perLane[l])
	}
	for i := range g.nodes {
		byLane[g.nodes[i].lane] = append(byLane[g.nodes[i].lane], int32(i))
	}
	for l, ns := range byLane {
		if len(ns) == 0 {
			continue
		}
		slices.SortStableFunc(ns, func(a, b int32) int { return cmp.Compare(g.nodes[a].s, g.nodes[b].s) })
		g.laneFirst[l], g.laneLast[l] = ns[0], ns[len(ns)-1]
	}

	// Calls of other threads after a wait of anchorGapNS or more follow
	// the main thread: such a thread (autograd's, a pin thread) waits for
	// the main thread's work, not for a fixed time. So does GPU work no
	// call of the graph launched.
	if g.mainLane >= 0 {
		mains := byLane[g.mainLane]
		for l := g.threads; l < lanes; l++ {
			for _, n := range byLane[l] {
				nd := &g.nodes[n]
				if nd.launch >= 0 {
					continue
				}
				j := sort.Search(len(mains), func(j int) bool { return g.nodes[mains[j]].s > nd.s })
				if j > 0 {
					nd.anchor, nd.offset = mains[j-1], nd.s-g.nodes[mains[j-1]].s
				}
			}
		}
		for l := range g.threads {
			if int32(l) == g.mainLane {
				continue
			}
			for _, n := range byLane[l] {
				nd := &g.nodes[n]
				if nd.gap < anchorGapNS {
					continue
				}
				j := sort.Search(len(mains), func(j int) bool { return g.nodes[mains[j]].s > nd.s })
				if j > 0 {
					nd.anchor, nd.offset = mains[j-1], nd.s-g.nodes[mains[j-1]].s
				}
			}
		}
	}

	// GPU work by end, per device, to find what a start joins.
	type ended struct {
		e int64
		n int32
	}
	byDev := map[int64][]ended{}
	for l := g.threads; l < lanes; l++ {
		for _, n := range byLane[l] {
			d := tl.Tracks[tl.Events[g.nodes[n].ev].Track].Device
			byDev[d] = append(byDev[d], ended{g.nodes[n].e, n})
		}
	}
	for d := range byDev {
		slices.SortFunc(byDev[d], func(a, b ended) int { return cmp.Compare(a.e, b.e) })
	}
	var lats []int64
	for l := g.threads; l < lanes; l++ {
		var prevEnd int64 = g.lo
		for k, n := range byLane[l] {
			nd := &g.nodes[n]
			if k > 0 {
				prevEnd = g.nodes[byLane[l][k-1]].e
			}
			// Launched while its stream was busy and started soon after:
			// queued behind that work, whatever the gap (a copy engine's
			// start after a kernel takes several µs).
			queued := nd.launch >= 0 && g.nodes[nd.launch].s < prevEnd && nd.s-prevEnd <= queuedNS
			if k > 0 && (nd.s-prevEnd <= joinNS || queued) {
				continue // the stream's own order holds it
			}
			d := tl.Tracks[tl.Events[nd.ev].Track].Device
			es := byDev[d]
			j := sort.Search(len(es), func(j int) bool { return es[j].e > nd.s })
			if j > 0 && nd.s-es[j-1].e <= joinNS && g.nodes[es[j-1].n].lane != nd.lane &&
				(nd.launch < 0 || nd.s-g.nodes[nd.launch].s > 20_000) {
				nd.dep = es[j-1].n
				continue
			}
			if nd.launch >= 0 {
				nd.lat = max(0, nd.s-g.nodes[nd.launch].s)
				lats = append(lats, nd.lat)
			}
		}
	}
	// Work its stream or an event held back starts, once free, at the
	// launch latency the idle starts show (their tenth percentile), never
	// later after its launch than it did.
	defLat := quantile(lats, 0.1, 5_000)
	for i := range g.nodes {
		if nd := &g.nodes[i]; nd.gpu && nd.launch >= 0 && nd.lat == 0 {
			nd.lat = min(defLat, max(0, nd.s-g.nodes[nd.launch].s))
		}
	}

	// Blocking calls: the GPU work each waited for. A copy call waits for
	// its own copy; a synchronising call for the latest-ending work
	// launched before it that ended by its return.
	var byLaunch []int32
	gpuNode := map[int32]int32{}
	for i := range g.nodes {
		if g.nodes[i].gpu {
			gpuNode[g.nodes[i].ev] = int32(i)
			if g.nodes[i].launch >= 0 {
				byLaunch = append(byLaunch, int32(i))
			}
		}
	}
	slices.SortFunc(byLaunch, func(a, b int32) int { return cmp.Compare(g.nodes[g.nodes[a].launch].s, g.nodes[g.nodes[b].launch].s) })
	var rets []int64
	for i := range g.nodes {
		nd := &g.nodes[i]
		if nd.gpu || !nd.blocking {
			continue
		}
		nd.wait = -1
		if nd.class.IsCopy() {
			if w, ok := gpuNode[tl.Events[nd.ev].Link]; ok {
				nd.wait = w
			}
		} else {
			j := sort.Search(len(byLaunch), func(j int) bool { return g.nodes[g.nodes[byLaunch[j]].launch].s >= nd.s })
			var best int64 = -1
			for k := j - 1; k >= 0 && k >= j-4096; k-- {
				w := &g.nodes[byLaunch[k]]
				if w.e <= nd.e && w.e > best {
					best, nd.wait = w.e, byLaunch[k]
				}
			}
		}
		nd.base = nd.e - nd.s
		if nd.wait >= 0 {
			if we := g.nodes[nd.wait].e; we > nd.s {
				nd.ret = nd.e - we
				nd.base = max(0, min(nd.ret, nd.e-nd.s))
				rets = append(rets, nd.ret)
			}
		}
	}
	defRet := quantile(rets, 0.5, 2_000)
	for i := range g.nodes {
		if nd := &g.nodes[i]; !nd.gpu && nd.blocking && nd.wait >= 0 && g.nodes[nd.wait].e <= nd.s {
			nd.ret = min(defRet, nd.base)
		}
	}
}

// sortOrder orders the processing steps so that every dependency is
// processed first: a call starts before the work it launched starts, and
// work ends before the call that waits for it returns.
func (g *graph) sortOrder() {
	n := len(g.nodes)
	for i := range g.nodes {
		if !g.nodes[i].gpu {
			n++ // a call has a start and an end
		}
	}
	g.order = slices.Grow(g.order[:0], n)
	for i := range g.nodes {
		nd := &g.nodes[i]
		if nd.gpu {
			g.order = append(g.order, step{int32(i), 1, nd.s})
		} else {
			g.order = append(g.order, step{int32(i), 0, nd.s}, step{int32(i), 2, nd.e})
		}
	}
	// By time, then phase, then node: the order a stable sort by time and
	// phase leaves the steps in, appended as they are by node.
	slices.SortFunc(g.order, func(a, b step) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if c := cmp.Compare(a.phase, b.phase); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})
}

// quantile is the q-quantile of xs (sorted in place), or def for none.
func quantile(xs []int64, q float64, def int64) int64 {
	if len(xs) == 0 {
		return def
	}
	slices.Sort(xs)
	return xs[int(q*float64(len(xs)-1)+0.5)]
}

// diskReads counts the main thread's disk reads that start in [lo, hi),
// and those of them inside data-loading ranges.
func diskReads(ix *index.Index, lo, hi int64) (all, inData int32) {
	ts := ix.MainDiskReadStarts
	a, _ := slices.BinarySearch(ts, lo)
	for _, t := range ts[a:] {
		if t >= hi {
			break
		}
		all++
		if ix.MainData.Contains(t) {
			inData++
		}
	}
	return all, inData
}
