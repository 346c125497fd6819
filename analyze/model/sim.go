package model

import (
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/timeline"
)

const (
	launchClass = timeline.APILaunch
	syncClass   = timeline.APISync
	htodKind    = timeline.CopyHtoD
	// packBytes is the size below which a host-to-device copy counts as
	// small: pack-copies stacks such copies into one.
	packBytes = 1 << 20
	// hostCopyMBps is the host's memory copy rate that stacking small
	// tensors into one pinned buffer costs.
	hostCopyMBps = 5_000
	// readWorkNS is the host time left after a read-back once its values
	// are computed on the GPU (dispatching that work).
	readWorkNS = 20_000
	// packGapNS is what host time a packed tensor still costs between
	// two (its share of the stacking pass's dispatch).
	packGapNS = 500
	// asyncCallNS is what an asynchronous copy call costs the host.
	asyncCallNS = 5_000
)

// GraphGapNS is the gap between kernels replayed from a CUDA graph (the
// launch-bound analyzer's figure, measured on an H200).
const GraphGapNS = 300

// graphedGapNS is the longest host time between two launches that a CUDA
// graph takes away: dispatch, not other host work (the launch-bound
// analyzer's MaxLaunchLagNS).
const graphedGapNS = 100_000

// costs is what one simulation changes in the graph: the fixes applied
// and the profiler's cost kept or removed.
type costs struct {
	profilerNS int64 // per recorded event, taken out of host time (0: kept)
	// hostKeep, when set, is the share of all host time kept: a profiled
	// host that ran slower throughout than the loop timed without it
	// (fitProfiler).
	hostKeep     float64
	noSync       bool  // synchronising calls and read-backs to pageable memory do not wait
	pinned       bool  // pageable host-to-device copies come from pinned memory
	copyStream   bool  // host-to-device copies run on their own stream, a step ahead
	workers      int   // >0: data waits served by a pool of this many producers
	reuseBuffers bool  // no OS memory calls (munmap) in steps
	persistent   bool  // the loader's workers kept across epochs: no restarts
	warm         int64 // with persistent: each data wait at most this (-1: as traced)
	keepCache    bool  // no device allocation calls in steps
	cudaGraph    bool  // launches replayed from a graph
	packCopies   bool  // small host-to-device copies packed into one pinned copy
	// cachedReadNS, when above 0, is the time of a file read served from
	// memory (cache-data): each read in a gap takes this instead.
	cachedReadNS int64
	issueCut     float64 // the share of the host's collective issue time that goes (fewer-collectives)
	pinnedGBps   float64
	pool         pool
}

// pool is the DataLoader model: producers building batches of batchNS
// each, handing them over in handoffNS, at most two a producer ahead
// (PyTorch's prefetch_factor). bytes is a batch's size (what the main
// thread copies to the GPU per fetch), which the replay's producers write.
type pool struct {
	batchNS, handoffNS int64
	bytes              int64
}

// run is the outcome of one simulation.
type run struct {
	stepNS int64
	path   index.Breakdown // the critical path of the last cycle, per bucket
}

// cycles is how many times the window is simulated back to back: enough
// for at least minSteps steps and three passes, so that queues (the GPU's
// backlog, the loader's) settle before the last passes are measured.
func (g *graph) cycles() int {
	const minSteps = 40
	r := 3
	for r*g.steps < minSteps && r < 40 {
		r++
	}
	return r
}

// simulate runs the graph with the given costs and returns the mean
// simulated step over the second half of the cycles.
func (g *graph) simulate(c *costs) run {
	n := len(g.nodes)
	lanes := g.threads + g.streams
	extra := 0
	if c.copyStream {
		extra = 1
	}
	sc := &g.scratch
	if len(sc.simS) < n {
		sc.simS, sc.simE, sc.done = make([]int64, n), make([]int64, n), make([]int32, n)
		sc.pred, sc.seg, sc.segBucket = make([]int32, 2*n), make([]int64, 2*n), make([]index.Bucket, 2*n)
	}
	simS, simE, done := sc.simS[:n], sc.simE[:n], sc.done[:n]
	ready := make([]int64, lanes+extra)
	busy := make([]int64, lanes+extra) // per stream, GPU time of the last cycle
	last := make([]int32, lanes+extra) // the lane's node processed last in this cycle, -1
	prevKind := make([]int8, lanes)    // 1 when the lane's previous call was a launch
	for l := range ready {
		ready[l] = g.lo
	}
	var fetch poolState
	if c.workers > 0 {
		fetch = newPoolState(c.workers, c.pool, g.lo)
	}
	R := g.cycles()
	ends := make([]int64, R)
	// binding predecessor of each point in the last cycle, for the
	// critical path: start points are 2n, end points 2n+1.
	var pred []int32
	var seg []int64
	var segBucket []index.Bucket
	cycleStart := g.lo
	base := sc.stamp
	sc.stamp += int32(R)
	for cyc := range R {
		stamp := base + int32(cyc+1)
		if cyc > 0 {
			cycleStart = ends[cyc-1]
		}
		lastCycle := cyc == R-1
		if lastCycle {
			pred, seg, segBucket = sc.pred[:2*n], sc.seg[:2*n], sc.segBucket[:2*n]
			for i := range pred {
				pred[i], seg[i], segBucket[i] = -1, 0, 0
			}
		}
		for l := range last {
			last[l] = -1
		}
		for _, st := range g.order {
			i := st.n
			nd := &g.nodes[i]
			switch st.phase {
			case 0: // a call starts after its thread's previous call and the host time between
				gap := c.gap(nd)
				if nd.gapData > 0 && c.workers > 0 && nd.lane == g.mainLane {
					other := gap - nd.gapData
					wait := fetch.take(ready[nd.lane])
					gap = max(0, other) + wait
				}
				if c.cudaGraph && nd.class == launchClass && prevKind[nd.lane] == 1 && nd.gap < graphedGapNS {
					gap = 0 // dispatch between two launches: the graph replays it on the GPU
				}
				simS[i] = ready[nd.lane] + gap
				from := int32(-1)
				if last[nd.lane] >= 0 {
					from = 2*last[nd.lane] + 1
				}
				if nd.anchor >= 0 && done[nd.anchor] == stamp {
					simS[i] = max(ready[nd.lane], simS[nd.anchor]+nd.offset)
					from, gap = 2*nd.anchor, simS[i]-simS[nd.anchor]
				}
				if lastCycle {
					pred[2*i], seg[2*i], segBucket[2*i] = from, gap, gapBucket(nd)
				}
			case 2: // a call returns after its own cost, or after the work it waits for
				dur, waits := c.call(nd)
				e := simS[i] + dur
				from, b := 2*i, callBucket(nd)
				if waits && nd.wait >= 0 && done[nd.wait] == stamp {
					if w := simE[nd.wait] + nd.ret; w > e {
						e, from, dur, b = w, 2*nd.wait+1, nd.ret, index.Sync
					}
				}
				simE[i] = e
				ready[nd.lane] = e
				last[nd.lane] = i
				if nd.class == launchClass {
					prevKind[nd.lane] = 1
				} else {
					prevKind[nd.lane] = 0
				}
				if lastCycle {
					pred[2*i+1], seg[2*i+1], segBucket[2*i+1] = from, dur, b
				}
			case 1: // GPU work starts when its stream, its launch and its event wait allow
				lane := nd.lane
				htod := nd.copy == htodKind
				if c.copyStream && htod {
					lane = int32(lanes)
				}
				s := ready[lane]
				from, gapSeg := int32(-1), int64(0)
				var graphGap int64 // the GPU's own gap before a graph's kernel: busy, not idle
				if last[lane] >= 0 {
					from = 2*last[lane] + 1
				}
				if nd.launch < 0 {
					// Work no call of the graph launched keeps its offset from
					// the main thread's call before it, or its place in the
					// cycle.
					t := cycleStart + nd.s - g.lo
					if nd.anchor >= 0 && done[nd.anchor] == stamp {
						t = simS[nd.anchor] + nd.offset
					}
					if t > s {
						s, from, gapSeg = t, -1, t-s
					}
				} else if c.cudaGraph && nd.copy == 0 {
					s += GraphGapNS
					gapSeg, graphGap = GraphGapNS, GraphGapNS
				}
				if nd.launch >= 0 && done[nd.launch] == stamp {
					lat := nd.lat
					if c.cudaGraph && nd.copy == 0 {
						lat = 0
					}
					if t := simS[nd.launch] + lat; t > s {
						s, from, gapSeg = t, 2*nd.launch, lat
					}
				}
				if nd.dep >= 0 && done[nd.dep] == stamp && !(c.copyStream && htod) {
					if t := simE[nd.dep]; t > s {
						s, from, gapSeg = t, 2*nd.dep+1, 0
					}
				}
				simS[i] = s
				dur := c.work(nd)
				simE[i] = s + dur
				if lastCycle {
					busy[lane] += dur + graphGap
				}
				ready[lane] = simE[i]
				last[lane] = i
				if lastCycle {
					pred[2*i], seg[2*i], segBucket[2*i] = from, gapSeg, index.Other
					pred[2*i+1], seg[2*i+1], segBucket[2*i+1] = 2*i, dur, workBucket(nd)
				}
			}
			done[i] = stamp
		}
		// The cycle ends when the main thread has done its host work to the
		// window's end: the loop's pace is the host's. Other threads and
		// the streams go on into the next cycle as they are.
		ready[g.mainLane] += g.tailOf(c, g.mainLane)
		ends[cyc] = ready[g.mainLane]
	}
	h := R / 2
	step := (ends[R-1] - ends[h-1]) / int64((R-h)*g.steps)
	// A stream busier than that sets the pace instead: the host would
	// block on it (a full launch queue, the allocator) however it syncs.
	for l := g.threads; l < len(busy); l++ {
		step = max(step, busy[l]/int64(g.steps))
	}
	return run{stepNS: step, path: g.criticalPath(pred, seg, segBucket, simE, ends[R-1])}
}

// criticalPath walks back from the point that ended the last cycle along
// each point's binding predecessor, adding up the time of each bucket.
func (g *graph) criticalPath(pred []int32, seg []int64, b []index.Bucket, simE []int64, end int64) index.Breakdown {
	var out index.Breakdown
	if len(pred) == 0 {
		return out
	}
	// The point that ended the cycle: the latest end of any node.
	at := int32(-1)
	var best int64 = -1
	for i := range g.nodes {
		if p := pred[2*i+1]; p >= 0 || seg[2*i+1] > 0 {
			if simE[i] > best {
				best, at = simE[i], int32(2*i+1)
			}
		}
	}
	out[index.Other] += max(0, end-best)
	for steps := 0; at >= 0 && steps < 4*len(g.nodes); steps++ { // a bound, not a count: the walk visits each point once
		out[b[at]] += seg[at]
		at = pred[at]
	}
	return out
}

// gap is the host time before call nd with the costs applied.
func (c *costs) gap(nd *node) int64 {
	gap := nd.gap - int64(nd.gapEvents)*c.profilerNS
	if c.reuseBuffers {
		gap -= nd.gapOS
	}
	if c.issueCut > 0 {
		gap -= int64(float64(nd.gapIssue) * c.issueCut)
	}
	if c.cachedReadNS > 0 && nd.gapRead > 0 {
		read, reads, disk := nd.gapRead, nd.gapReads, nd.gapDiskReads
		if c.workers > 0 {
			// The pool's fetches replace the reads in data ranges.
			read, disk = read-nd.gapReadData, disk-nd.gapDiskReadsData
		}
		gap -= max(0, read-int64(reads)*c.cachedReadNS) + int64(disk)*WakeNS
	}
	if c.noSync && nd.afterRead && nd.gapData == 0 {
		// The values read back are computed on the GPU and read every N
		// steps: the host work on them goes with the read.
		gap = min(gap, readWorkNS)
	}
	if c.packCopies && nd.packed && nd.gapData == 0 {
		gap = min(gap, packGapNS) // the tensors are stacked in one pass, not dispatched one by one
	}
	if c.persistent {
		gap -= nd.gapRestart
		if c.warm >= 0 {
			// Workers that keep up between restarts keep up once kept.
			gap -= max(0, nd.gapData-nd.gapRestart-c.warm)
		}
	}
	return c.scaled(max(0, gap))
}

// tailOf is thread l's host time after its last call to the window's end
// under the costs: the main thread's traced time, but where no-sync takes a
// read-back's work with it; none for the other threads, whose next cycle
// starts from their first call's gap or the main thread's call it follows
// (a thread that waited for the main thread's work does not wait out its
// traced tail first).
func (g *graph) tailOf(c *costs, l int32) int64 {
	switch {
	case l != g.mainLane:
		return 0
	case c.noSync && g.tailRead:
		return min(g.tail[l], readWorkNS)
	}
	return g.tail[l]
}

// lessProfiler is host time d with the profiler's cost of the events
// recorded in it taken out, eventNS each, down to 1 µs at least (or d).
func lessProfiler(d int64, events int32, eventNS int64) int64 {
	return max(min(d, 1_000), d-int64(events)*eventNS)
}

// scaled is host time d at the share of it the costs keep.
func (c *costs) scaled(d int64) int64 {
	if c.hostKeep <= 0 {
		return d
	}
	return int64(float64(d) * c.hostKeep)
}

// call is call nd's host time with the costs applied, and whether it still
// waits for the GPU work it waited for.
func (c *costs) call(nd *node) (int64, bool) {
	dur := nd.e - nd.s
	if nd.blocking {
		dur = nd.base
	}
	dur = c.scaled(lessProfiler(dur, nd.events, c.profilerNS))
	waits := nd.blocking
	switch {
	case nd.alloc && c.keepCache:
		return 0, false
	case c.noSync && (nd.class == syncClass || nd.readback):
		waits = false
	case c.packCopies && nd.packed && nd.class == syncClass:
		return 0, false // one copy, waited for by no one
	case c.packCopies && nd.packed:
		return nd.bytes * 1_000 / hostCopyMBps, false
	case c.pinned && nd.copy == htodKind && nd.pageable:
		return min(dur, asyncCallNS), false
	case c.pinned && nd.copyWait:
		return 0, false // a non-blocking copy is waited for by no one
	case c.cudaGraph && nd.class == launchClass:
		return 0, false
	}
	return dur, waits
}

// work is GPU work nd's time with the costs applied: a pageable
// host-to-device copy made from pinned memory runs at the pinned
// bandwidth, and so does a small copy packed with the others, and a
// read-back no-sync no longer waits for (a non-blocking copy into pinned
// memory, as the schedule makes it).
func (c *costs) work(nd *node) int64 {
	dur := nd.e - nd.s
	if c.noSync && nd.readback && c.pinnedGBps > 0 {
		return min(dur, int64(float64(nd.bytes)/c.pinnedGBps))
	}
	if nd.copy != htodKind || c.pinnedGBps <= 0 {
		return dur
	}
	packed := c.packCopies && nd.bytes < packBytes
	moved := c.pinned && nd.pageable
	if packed || moved {
		return min(dur, int64(float64(nd.bytes)/c.pinnedGBps))
	}
	return dur
}

// gapBucket is the bucket of the host time before call nd.
func gapBucket(nd *node) index.Bucket {
	switch {
	case nd.gapData*2 > nd.gap:
		return index.Data
	case nd.gapOS*2 > nd.gap:
		return index.OS
	}
	return index.Other
}

// callBucket is the bucket of call nd's own time.
func callBucket(nd *node) index.Bucket {
	switch {
	case nd.class.IsCopy():
		return index.Copy
	case nd.blocking:
		return index.Sync
	}
	return index.Other
}

// workBucket is the bucket of GPU work nd.
func workBucket(nd *node) index.Bucket {
	switch {
	case nd.comm:
		return index.Comm
	case nd.copy != 0:
		return index.Copy
	}
	return index.Compute
}
