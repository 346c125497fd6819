package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/timeline"
)

// ProfilerEventNS is the host time torch.profiler adds per event it
// records, as the model takes it out of a profiled trace: the middle of
// the range docs/step-model.md gives.
const ProfilerEventNS = 1_500

// Band is how far the simulated step of the unchanged graph may lie from
// the trace's for the model's estimates to be used.
const (
	FidelityLo = 0.9
	FidelityHi = 1.1
)

// Transform names: the fixes the model simulates, named as the replay's
// variants.
const (
	Pinned            = "pinned"
	PinnedCopyStream  = "pinned-copy-stream"
	PackCopies        = "pack-copies"
	PrefetchWorkers   = "prefetch-workers"
	PersistentWorkers = "persistent-workers"
	NoSync            = "no-sync"
	KeepCache         = "keep-cache"
	ReuseBuffers      = "reuse-buffers"
	CUDAGraph         = "cuda-graph"
	CacheData         = "cache-data"
	FewerCollectives  = "fewer-collectives"
	All               = "all"
	maxWorkers        = 32
	workersWithinBest = 1.05
	// workerHeadroom is how much slower than the main thread's own build
	// a worker process is taken to build a batch when the pool is sized:
	// the trace shows the main thread's build only, and workers that
	// build at once contend for memory and cores (docs/step-model.md).
	workerHeadroom = 2
)

// Options are what the model needs beyond the index.
type Options struct {
	// ProfilerEventNS is the cost per recorded event taken out of a
	// profiled trace's host time (0: ProfilerEventNS; negative: none).
	ProfilerEventNS int64
	// UnprofiledStepNS, when set, is the loop's mean step without the
	// profiler as timed (torch.profiler's or Nsight Systems', whose cost
	// falls on the calls it intercepts): the cost per event is the one
	// whose removal simulates that step (fitProfiler).
	UnprofiledStepNS int64
	// PinnedGBps is the pinned copy bandwidth, in GB/s, where neither the
	// trace nor its GPU's link gives one (index.Index.Pinned).
	PinnedGBps float64
	// RunningWorkers is how many DataLoader workers the trace shows
	// already running (0: the main thread builds each batch, or the trace
	// does not count them).
	RunningWorkers int
	// RunningUnknown says workers run but the trace does not count them:
	// the model takes assumedWorkers as running, and sizes the pool of
	// prefetch-workers as a multiple of them (Fix.WorkersFactor).
	RunningUnknown bool
	// LoaderPaced says the main thread waits for batches that DataLoader
	// workers make (a dataloader-wait finding where workers run): their
	// pace bounds the fixes of everything else.
	LoaderPaced bool
	// FindingOf names, per transform, the finding whose fix it is: the
	// transforms planned. Only those that also apply to the step are
	// simulated, and all composes them.
	FindingOf map[string]string
	// Issue is, per host thread, the time that issues the step's
	// collectives (comm.IssueTime), and IssueCut the share of it that
	// fewer, larger collectives save (fewer-collectives: 1 - n'/n).
	Issue    map[timeline.TrackID]ivl.Set
	IssueCut float64
	// KeepSchedules keeps the window's graph and each simulation's costs,
	// so that Model.Schedule can write them for the replay.
	KeepSchedules bool
}

// Fix is one transform's simulated step.
type Fix struct {
	// Name is the transform, as the replay's variant is named.
	Name string `json:"name"`
	// StepNS is the simulated step with the fix, the profiler's cost
	// removed; Speedup is Model.StepNS over it.
	StepNS  int64   `json:"step_ns"`
	Speedup float64 `json:"speedup"`
	// Finding is the ID of the finding the fix answers ("" for none).
	Finding string `json:"finding"`
	// Workers is prefetch-workers' pool size: the smallest within 5 % of
	// the best simulated step.
	Workers int `json:"workers,omitempty"`
	// WorkersFactor is, where the trace does not count the workers that
	// run (Options.RunningUnknown), the pool as a multiple of them, and
	// Workers is 0.
	WorkersFactor float64 `json:"workers_factor,omitempty"`
	// Path is the simulated step's critical path with the fix.
	Path CriticalPath `json:"-"`
}

// CriticalPath is the share of the simulated step each bucket holds on
// its critical path.
type CriticalPath struct {
	Compute float64 `json:"compute"`
	Comm    float64 `json:"comm"`
	Copy    float64 `json:"copy"`
	Sync    float64 `json:"sync"`
	OS      float64 `json:"os"`
	Data    float64 `json:"data"`
	Other   float64 `json:"other"`
}

// Model is the analyze document's "model": the simulated steady step and
// each fix's.
type Model struct {
	// Fidelity is the simulated step of the unchanged graph, the
	// profiler's cost kept, over the trace's mean steady step.
	Fidelity float64 `json:"fidelity"`
	// StepNS is the simulated step with the profiler's cost removed;
	// ProfilerNS the host time per step removed for it.
	StepNS     int64 `json:"step_ns"`
	ProfilerNS int64 `json:"profiler_ns"`
	// EventNS is the profiler's cost per recorded event taken out (0 for
	// a trace of no profiler that records events). HostShare, when set,
	// is the share of all host time taken out instead: a given unprofiled
	// step that no cost per event reaches (Options.UnprofiledStepNS).
	EventNS      int64        `json:"profiler_event_ns"`
	HostShare    float64      `json:"profiler_host_share,omitempty"`
	CriticalPath CriticalPath `json:"critical_path"`
	// Fixes are the transforms planned that apply to this step, then all.
	Fixes []Fix `json:"fixes"`
	// Why says, when Fidelity is outside the band, what the model could
	// not reproduce; estimates then come from the bounds.
	Why string `json:"why,omitempty"`
	// keep is what Schedule needs (Options.KeepSchedules), else nil.
	keep *keptGraph
}

// Faithful reports whether the model reproduces the trace closely enough
// for its estimates to stand.
func (m *Model) Faithful() bool {
	return m != nil && m.Fidelity >= FidelityLo && m.Fidelity <= FidelityHi
}

// Fix returns the named transform's result.
func (m *Model) Fix(name string) (Fix, bool) {
	if m == nil {
		return Fix{}, false
	}
	for _, f := range m.Fixes {
		if f.Name == name {
			return f, true
		}
	}
	return Fix{}, false
}

// Build simulates the steady steps of ix and each planned fix that applies. It
// returns nil when the trace has no steady steps with a main thread that
// launches GPU work.
func Build(ix *index.Index, o Options) *Model {
	if ix.NotSteady != "" || !ix.HasMain || len(ix.Steady) == 0 {
		return nil
	}
	lo, hi, steps := window(ix)
	if steps == 0 || hi <= lo {
		return nil
	}
	g := build(ix, lo, hi, steps, o.Issue)
	if g.mainLane < 0 || len(g.nodes) == 0 {
		return nil
	}
	pin := ix.Pinned(o.PinnedGBps).GBps
	prof := int64(0)
	if g.profiled {
		prof = o.ProfilerEventNS
		if prof == 0 {
			prof = ProfilerEventNS
		}
		prof = max(prof, 0)
	}
	keep := 0.0
	if o.UnprofiledStepNS > 0 {
		prof, keep = g.fitProfiler(o.UnprofiledStepNS, pin)
	}
	observed := (hi - lo) / int64(steps)
	kept := g.simulate(&costs{pinnedGBps: pin})
	base := g.simulate(&costs{pinnedGBps: pin, profilerNS: prof, hostKeep: keep})
	m := &Model{
		Fidelity:     round3(float64(kept.stepNS) / float64(observed)),
		StepNS:       base.stepNS,
		ProfilerNS:   g.removed(prof, keep) / int64(steps),
		EventNS:      prof,
		HostShare:    hostShare(keep),
		CriticalPath: shares(base.path),
		Fixes:        []Fix{},
	}
	if !m.Faithful() {
		m.Why = fmt.Sprintf("the simulated step (%s) is %.2fx the trace's mean steady step (%s)", millis(kept.stepNS), m.Fidelity, millis(observed))
		if lag := g.lagGrowth(); lag > (hi-lo)/20 {
			m.Why += fmt.Sprintf(": the GPU ends %s behind the host's last step, so the steps are not periodic; capture more steps", millis(lag))
		} else {
			m.Why += ": the trace holds dependencies the model does not see (waits between threads or processes)"
		}
	}
	if o.KeepSchedules {
		m.keep = &keptGraph{g: g, costs: map[string]costs{Observed: {pinnedGBps: pin, profilerNS: prof, hostKeep: keep}},
			steps: map[string]int64{Observed: base.stepNS}}
	}
	g.stepNS = base.stepNS
	fixes := g.transforms(o, ix)
	// Where the loader's workers set the loop's pace, a fix of the main
	// thread's own work leaves them as they are: they deliver a batch per
	// traced step at most, as a pool of the workers running (2 where the
	// trace does not count them) whose batches take that long each.
	paced := costs{pinnedGBps: pin, profilerNS: prof, hostKeep: keep}
	if o.LoaderPaced {
		w := max(o.RunningWorkers, assumedWorkers)
		paced.workers, paced.pool = w, g.loader(w, ix, &paced)
	}
	running := o.running()
	all := paced
	own := make([]costs, 0, len(fixes)) // each fix's costs, as simulated
	for _, t := range fixes {
		c := paced
		if t.name == PrefetchWorkers || t.name == PersistentWorkers {
			c.workers, c.pool = 0, pool{} // the loader's own fixes
		}
		t.set(&c)
		t.set(&all)
		f := Fix{Name: t.name, Finding: o.FindingOf[t.name]}
		if t.name == PrefetchWorkers {
			n, _ := g.bestWorkers(c, running)
			c.workers, all.workers = n, n
			f.Workers, f.WorkersFactor = o.poolSize(n)
		}
		r := g.simulate(&c)
		f.StepNS, f.Path = r.stepNS, shares(r.path)
		m.Fixes = append(m.Fixes, f)
		m.kept(t.name, c, r.stepNS)
		own = append(own, c)
	}
	if len(fixes) > 0 {
		if all.workers > 0 {
			// The other fixes shorten the rest of the step: the pool that
			// keeps up with it may need more producers.
			all.workers, _ = g.bestWorkers(all, running)
		}
		r := g.simulate(&all)
		if best := slices.MinFunc(m.Fixes, func(a, b Fix) int { return cmp.Compare(a.StepNS, b.StepNS) }); r.stepNS > best.StepNS {
			// A fix that lengthens the step with the others (a CUDA graph's
			// gap between kernels once the GPU sets the pace) is left out.
			all, r = g.greedyAll(fixes, own, m.Fixes)
		}
		m.kept(All, all, r.stepNS)
		f := Fix{Name: All, StepNS: r.stepNS, Finding: o.FindingOf[All], Path: shares(r.path)}
		if all.workers > 0 {
			f.Workers, f.WorkersFactor = o.poolSize(all.workers)
		}
		m.Fixes = append(m.Fixes, f)
	}
	for i := range m.Fixes {
		f := &m.Fixes[i]
		f.StepNS = max(f.StepNS, 1)
		f.Speedup = round3(math.Max(1, float64(m.StepNS)/float64(f.StepNS)))
	}
	return m
}

// greedyAll composes the fixes in the order of their own gain, each kept
// only where it does not lengthen the step of those before it; costs are
// what each fix's own simulation used (the pool size prefetch-workers
// chose).
func (g *graph) greedyAll(fixes []transform, own []costs, results []Fix) (costs, run) {
	order := make([]int, len(fixes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(results[a].StepNS, results[b].StepNS) })
	var cur costs
	var curR run
	for k, i := range order {
		c := cur
		if k == 0 {
			c = own[i]
		} else {
			fixes[i].set(&c)
			if results[i].Name == PrefetchWorkers {
				c.workers = own[i].workers
			}
		}
		r := g.simulate(&c)
		if k == 0 || r.stepNS <= curR.stepNS {
			cur, curR = c, r
		}
	}
	return cur, curR
}

// kept records a simulation's costs for Schedule, where the model keeps
// them.
func (m *Model) kept(name string, c costs, step int64) {
	if m.keep != nil {
		m.keep.costs[name], m.keep.steps[name] = c, step
	}
}

// assumedWorkers is how many workers the loader's model takes as running
// where the trace shows workers but does not count them.
const assumedWorkers = 2

// running is how many workers the loader's model takes as running.
func (o Options) running() int {
	if o.RunningUnknown {
		return max(o.RunningWorkers, assumedWorkers)
	}
	return o.RunningWorkers
}

// poolSize is a pool of n producers as a fix gives it: n, or where the
// trace does not count the workers running, n over those the model takes
// as running, to a tenth.
func (o Options) poolSize(n int) (workers int, factor float64) {
	if !o.RunningUnknown {
		return n, 0
	}
	return 0, math.Round(float64(n)/float64(o.running())*10) / 10
}

// transform is one fix the model can apply.
type transform struct {
	name string
	set  func(*costs)
}

// transforms lists the fixes that apply to the graph's step, in a fixed
// order.
func (g *graph) transforms(o Options, ix *index.Index) []transform {
	var pageable, htod, small, syncs, allocs, launches int
	var data, osTime, restart, htodBytes, reads, issue int64
	for i := range g.nodes {
		nd := &g.nodes[i]
		if nd.gpu {
			continue
		}
		switch {
		case nd.copy == htodKind:
			htod++
			if nd.lane == g.mainLane {
				htodBytes += nd.bytes
			}
			if nd.pageable {
				pageable++
			}
			if nd.bytes < packBytes {
				small++
			}
		case nd.class == syncClass || nd.readback:
			syncs++
		case nd.alloc:
			allocs++
		case nd.class == launchClass:
			launches++
		}
		issue += nd.gapIssue
		if nd.lane == g.mainLane {
			data += nd.gapData
			osTime += nd.gapOS
			restart += nd.gapRestart
			reads += int64(nd.gapReads)
		}
	}
	cached := cachedRead(htodBytes, reads)
	per := func(n int) float64 { return float64(n) / float64(g.steps) }
	var out []transform
	add := func(ok bool, name string, set func(*costs)) {
		if _, planned := o.FindingOf[name]; ok && planned {
			out = append(out, transform{name, set})
		}
	}
	add(pageable > 0, Pinned, func(c *costs) { c.pinned = true })
	// The copy stream alone: the overlap's gain; with pinned (in all) the
	// copies also run at the pinned bandwidth.
	add(htod > 0, PinnedCopyStream, func(c *costs) { c.copyStream = true })
	add(per(small) >= 16, PackCopies, func(c *costs) { c.packCopies = true })
	// The loader's fix as its advice writes it: workers and pin_memory.
	add(data > 0, PrefetchWorkers, func(c *costs) { c.pool, c.pinned = g.loader(o.running(), ix, c), true })
	warm := g.warmFetch()
	add(restart > 0, PersistentWorkers, func(c *costs) { c.persistent, c.warm = true, warm })
	add(syncs > 0, NoSync, func(c *costs) { c.noSync = true })
	add(allocs > 0, KeepCache, func(c *costs) { c.keepCache = true })
	add(osTime > 0, ReuseBuffers, func(c *costs) { c.reuseBuffers = true })
	add(reads > 0, CacheData, func(c *costs) { c.cachedReadNS = cached })
	add(issue > 0 && o.IssueCut > 0, FewerCollectives, func(c *costs) { c.issueCut = o.IssueCut })
	add(per(launches) >= 20, CUDAGraph, func(c *costs) { c.cudaGraph = true })
	return out
}

// Reads served from memory (cache-data): a call's own cost, and the
// bandwidth of one thread reading from the page cache (docs/step-model.md).
const (
	readCallNS    = 5_000
	cacheReadGBps = 5
)

// WakeNS is the host time a thread loses after each read that waited on
// the disk, which cache-data also takes away: it slept, and wakes on a
// cold core with cold caches, so the work that follows runs slower
// (measured on the H200 box, docs/step-model.md).
const WakeNS = 45_000

// cachedRead is the time of one file read served from memory. Nsight
// Systems records no read sizes: a read is taken to bring its share of the
// bytes the main thread copies to the GPU in the window (the batch it
// reads is the batch it copies), and none where it copies nothing.
func cachedRead(htodBytes, reads int64) int64 {
	if reads == 0 {
		return CachedReadNS(0)
	}
	return CachedReadNS(htodBytes / reads)
}

// CachedReadNS is the time of one file read of the given size served from
// memory, as cache-data has it (the replay's variant takes the same).
func CachedReadNS(bytes int64) int64 { return readCallNS + bytes/cacheReadGBps }

// warmFetch is, for a loader that restarts at epoch boundaries, the data
// wait of a fetch from workers kept alive: the shortest fetch outside the
// restarts where the waits between them average under a tenth of a step
// (the workers keep up once warm), else -1 (only the restarts go).
func (g *graph) warmFetch() int64 {
	var sum, least int64 = 0, -1
	for i := range g.nodes {
		nd := &g.nodes[i]
		if nd.gpu || nd.lane != g.mainLane || nd.gapData == 0 || nd.gapRestart > 0 {
			continue
		}
		sum += nd.gapData
		if least < 0 || nd.gapData < least {
			least = nd.gapData
		}
	}
	if least < 0 {
		return 0
	}
	if sum*10 >= g.hi-g.lo {
		return -1
	}
	return least
}

// loader is the DataLoader model the trace implies. With W workers
// running, a batch takes about W mean steps to build (design.md), steps
// as the model simulates them unchanged, without the profiler (the
// workers run unprofiled); with none, the main thread's data time per
// fetch, less the profiler's cost
// of the events recorded in it (c's), is one batch's build: the workers
// that take it over run unprofiled. Handing a batch over costs the
// shortest fetch the trace shows with workers, and 2 % of a batch's build
// (at least 50 µs) without.
func (g *graph) loader(running int, ix *index.Index, c *costs) pool {
	var fetches []int64
	var copied int64
	for i := range g.nodes {
		nd := &g.nodes[i]
		if nd.gpu || nd.lane != g.mainLane {
			continue
		}
		if nd.gapData > 0 {
			fetches = append(fetches, c.scaled(lessProfiler(nd.gapData, nd.gapEventsData, c.profilerNS)))
		}
		if nd.copy == htodKind {
			copied += nd.bytes
		}
	}
	if len(fetches) == 0 {
		return pool{}
	}
	bytes := copied / int64(len(fetches))
	slices.Sort(fetches)
	var sum int64
	for _, f := range fetches {
		sum += f
	}
	mean := sum / int64(len(fetches))
	if running > 0 {
		perFetch := g.stepNS * int64(g.steps) / int64(len(fetches))
		return pool{batchNS: int64(running) * perFetch, handoffNS: fetches[0], bytes: bytes}
	}
	return pool{batchNS: mean, handoffNS: max(mean/50, min(mean, 50_000)), bytes: bytes}
}

// bestWorkers simulates pools of more workers than are running and returns
// the smallest whose step is within 5 % of the best, and its step. Where
// no workers run, the trace timed the main thread's build alone, and the
// pool is sized for workers workerHeadroom times slower.
func (g *graph) bestWorkers(c costs, running int) (int, int64) {
	if running == 0 {
		c.pool.batchNS *= workerHeadroom
	}
	var sizes []int
	for _, n := range []int{1, 2, 3, 4, 6, 8, 12, 16, 24, maxWorkers} {
		if n > running {
			sizes = append(sizes, n)
		}
	}
	if len(sizes) == 0 {
		return running, g.simulate(&c).stepNS
	}
	// A pool of more producers never makes the simulated step longer:
	// the largest pool's step is the best, and the smallest size within
	// reach of it is found by bisection.
	c.workers = sizes[len(sizes)-1]
	best := g.simulate(&c).stepNS
	steps := make([]int64, len(sizes))
	steps[len(steps)-1] = best
	k := sort.Search(len(sizes)-1, func(k int) bool {
		c.workers = sizes[k]
		steps[k] = g.simulate(&c).stepNS
		return float64(steps[k]) <= float64(best)*workersWithinBest
	})
	return sizes[k], steps[k]
}

// lagGrowth is how far past the window's end the GPU work launched in it
// runs: in a periodic loop about as far as the previous window's work ran
// into it, so a long one says the GPU fell behind over the window.
func (g *graph) lagGrowth() int64 {
	var end int64
	for i := range g.nodes {
		if nd := &g.nodes[i]; nd.gpu && nd.launch >= 0 {
			end = max(end, nd.e)
		}
	}
	return max(0, end-g.hi)
}

// maxFitEventNS is the most per recorded event that fitProfiler takes out
// (the replay's bound on a profiler's cost per event, too).
const maxFitEventNS = 20_000

// fitProfiler is what the profiler cost a trace whose loop, timed without
// it, ran want a step: the cost per recorded event whose removal makes the
// simulated unchanged step want, found by bisection to 10 ns (0 where the
// step is that short already). Where no cost up to maxFitEventNS reaches
// it, the profiled host ran slower throughout, as the replay finds too
// (Plan.LessHostTime): the share of all host time kept instead, to a
// thousandth (the least kept: minHostKeep).
func (g *graph) fitProfiler(want int64, pin float64) (eventNS int64, keep float64) {
	step := func(prof int64, keep float64) int64 {
		return g.simulate(&costs{pinnedGBps: pin, profilerNS: prof, hostKeep: keep}).stepNS
	}
	if step(0, 0) <= want {
		return 0, 0
	}
	if step(maxFitEventNS, 0) <= want {
		lo, hi := int64(0), int64(maxFitEventNS)
		for hi-lo > 10 {
			mid := (lo + hi) / 2
			if step(mid, 0) > want {
				lo = mid
			} else {
				hi = mid
			}
		}
		return hi, 0
	}
	lo, hi := minHostKeep, 1.0
	if step(0, lo) > want {
		return 0, lo
	}
	for hi-lo > 0.001 {
		mid := (lo + hi) / 2
		if step(0, mid) > want {
			hi = mid
		} else {
			lo = mid
		}
	}
	return 0, lo
}

// minHostKeep is the least share of host time fitProfiler keeps.
const minHostKeep = 0.05

// hostShare is Model.HostShare for the share kept (0: none taken out).
func hostShare(keep float64) float64 {
	if keep <= 0 {
		return 0
	}
	return round3(1 - keep)
}

// removed is the host time the profiler's cost takes out of the window:
// prof for each recorded event, or the share 1 - keep of all host time.
func (g *graph) removed(prof int64, keep float64) int64 {
	if keep > 0 {
		c := costs{hostKeep: keep}
		var out int64
		for i := range g.nodes {
			if nd := &g.nodes[i]; !nd.gpu {
				dur := nd.e - nd.s
				if nd.blocking {
					dur = nd.base
				}
				out += nd.gap + dur - c.scaled(nd.gap) - c.scaled(dur)
			}
		}
		return out
	}
	if prof <= 0 {
		return 0
	}
	var out int64
	for i := range g.nodes {
		nd := &g.nodes[i]
		if nd.gpu {
			continue
		}
		out += min(nd.gap, int64(nd.gapEvents)*prof)
		dur := nd.e - nd.s
		if nd.blocking {
			dur = nd.base
		}
		out += dur - lessProfiler(dur, nd.events, prof)
	}
	return out
}

func shares(b index.Breakdown) CriticalPath {
	t := float64(b.Total())
	if t <= 0 {
		return CriticalPath{}
	}
	s := func(k index.Bucket) float64 { return round3(float64(b[k]) / t) }
	return CriticalPath{Compute: s(index.Compute), Comm: s(index.Comm), Copy: s(index.Copy), Sync: s(index.Sync),
		OS: s(index.OS), Data: s(index.Data), Other: s(index.Other)}
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func millis(ns int64) string { return fmt.Sprintf("%.3g ms", float64(ns)/1e6) }

// poolState is a DataLoader pool in one simulation: when each producer is
// free, and when each batch was taken.
type poolState struct {
	p        pool
	n        int
	free     []int64
	consumed []int64
}

func newPoolState(n int, p pool, t0 int64) poolState {
	free := make([]int64, n)
	for i := range free {
		free[i] = t0
	}
	return poolState{p: p, n: n, free: free}
}

// take is how long the main thread waits for the next batch when it asks
// at t: the batch is built by the first producer free, once the queue
// (two batches a producer) has room for it, and handed over.
func (ps *poolState) take(t int64) int64 {
	k := len(ps.consumed)
	j := 0
	for i, f := range ps.free {
		if f < ps.free[j] {
			j = i
		}
	}
	start := ps.free[j]
	if q := k - 2*ps.n; q >= 0 {
		start = max(start, ps.consumed[q])
	}
	ready := start + ps.p.batchNS
	ps.free[j] = ready
	got := max(t, ready) + ps.p.handoffNS
	ps.consumed = append(ps.consumed, got)
	return got - t
}
