package index

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// Thresholds of the not-steady checks.
const (
	// MinPauseNS is the shortest interactive or one-off pause (getc, a read
	// of standard input, a sleep) that takes a step out of the steady state.
	MinPauseNS = 1_000_000_000
	// StartupShare: a single-step window is start-up when one-time work
	// (lazy CUDA/cuDNN initialisation, module loading, JIT compilation,
	// warm-up phases) covers at least this share of it.
	StartupShare = 0.5
	// MinLazyCallNS is the shortest API call counted as one-time start-up
	// work: a launch, allocation or query that takes this long loads
	// modules or initialises the context.
	MinLazyCallNS = 1_000_000
	// CaptureShare: a window is a CUDA graph capture when capturing takes
	// at least this share of it, or when it records more launches into
	// graphs than kernels run.
	CaptureShare = 0.2
)

// steadiness checks that the steady steps are a steady loop, removing
// steps that hold an interactive or one-off pause, and returns why not
// (with what to capture instead), or "".
func (ix *Index) steadiness() string {
	if why := ix.dropPauses(); why != "" && len(ix.Steady) == 0 {
		return why + "; " + ix.captureAdvice()
	}
	if len(ix.Steady) == 0 {
		return "no step holds GPU work: " + ix.captureAdvice()
	}
	if why := ix.captureWhy(); why != "" {
		return why
	}
	if len(ix.Steady) > 1 {
		return ""
	}
	s := ix.Steady[0]
	if why := ix.startupWhy(s); why != "" {
		return why + "; " + ix.captureAdvice()
	}
	if _, _, ok := ix.gpuRepeats(s.Start, s.End); !ok {
		return "the window holds no repeated step with GPU work (its GPU work does not repeat: a one-off run, not a loop); " + ix.captureAdvice()
	}
	return ""
}

// captureAdvice says what to capture instead of a window that is not a
// steady loop.
func (ix *Index) captureAdvice() string {
	if ix.PyTorch {
		return "profile several iterations of the loop after warm-up, e.g. torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=2, active=3)) with prof.step() each iteration"
	}
	return "capture several iterations of the main loop after start-up, e.g. cudaProfilerStart()/cudaProfilerStop() around them and nsys profile --capture-range=cudaProfilerApi"
}

// pausePattern names calls that wait for a person or sleep: reads of
// standard input and sleeps.
var pausePattern = regexp.MustCompile(`^(getc|fgetc|getchar|_IO_getc|getline|getdelim|fgets|gets|scanf|__isoc99_scanf|fscanf|sleep|usleep|nanosleep|clock_nanosleep|pause|sigsuspend|sigwait|sigwaitinfo)$|^<built-in function (input|sleep)>$|^(builtins\.input|time\.sleep)$`)

// IsPause reports whether a host call or operator of that name waits for a
// person or sleeps (getc, scanf, Python's input(), sleep, nanosleep).
func IsPause(name string) bool { return pausePattern.MatchString(name) }

// dropPauses removes from Steady the steps in which the main thread spends
// MinPauseNS or more in one pause, and says what the longest was. A read
// (read, fread) that long counts as a pause when it happens once: a read of
// standard input, not a dataset read that every step makes.
func (ix *Index) dropPauses() string {
	if !ix.HasMain {
		return ""
	}
	tl := ix.TL
	var pauses []ivl.Interval
	var longest *timeline.Event
	var reads []*timeline.Event
	for _, i := range tl.Tracks[ix.Main].Events {
		e := &tl.Events[i]
		if e.Dur() < MinPauseNS || (e.Kind != timeline.KindOS && e.Kind != timeline.KindOp && e.Kind != timeline.KindAPI) {
			continue
		}
		name := tl.Name(e.Name)
		if name == "read" || name == "fread" {
			reads = append(reads, e)
			continue
		}
		if !IsPause(name) {
			continue
		}
		pauses = append(pauses, ivl.Interval{Start: e.Start, End: e.End})
		if longest == nil || e.Dur() > longest.Dur() {
			longest = e
		}
	}
	if len(reads) == 1 {
		e := reads[0]
		pauses = append(pauses, ivl.Interval{Start: e.Start, End: e.End})
		if longest == nil || e.Dur() > longest.Dur() {
			longest = e
		}
	}
	if longest == nil {
		return ""
	}
	set := ivl.Union(pauses)
	n := len(ix.Steady)
	paused := func(s Step) bool { return set.Covered(s.Start, s.End) > 0 }
	ix.Steady = slices.DeleteFunc(ix.Steady, paused)
	if len(ix.Steady) == n {
		return ""
	}
	for i := range ix.Steps {
		if !ix.Steps[i].Startup && !ix.Steps[i].Teardown && paused(ix.Steps[i]) {
			ix.Steps[i].Paused = true
		}
	}
	ix.PausedSteps = n - len(ix.Steady)
	return fmt.Sprintf("the window holds a %s pause in %s (waiting for input or sleeping), not steady work", units.Dur(longest.Dur()), tl.Name(longest.Name))
}

// captureWhy says whether the steady steps capture CUDA/HIP graphs rather
// than run them: capturing (cudaStreamBeginCapture to EndCapture, graph
// instantiation) takes CaptureShare of the window or more, or more launches
// are recorded into graphs than kernels run.
func (ix *Index) captureWhy() string {
	if !ix.HasMain {
		return ""
	}
	steady := ix.steadySet()
	spans, captured := ix.captures(steady)
	if len(spans) == 0 {
		return ""
	}
	capture := ivl.Union(spans).OverlapLen(steady)
	kernels := 0
	for _, i := range ix.DeviceWork {
		if e := &ix.TL.Events[i]; e.Kind == timeline.KindKernel && steady.Contains(e.Start) {
			kernels++
		}
	}
	if capture == 0 || (float64(capture) < CaptureShare*float64(steady.Len()) && captured <= kernels) {
		return ""
	}
	advice := "profile the steps that replay the graphs, after capture (a profiler schedule that starts after the warm-up iterations that capture)"
	if !ix.PyTorch {
		advice = "capture the iterations that launch the instantiated graphs (cudaGraphLaunch), after the capture"
	}
	return fmt.Sprintf("the window is a CUDA/HIP graph capture (%d launches recorded into graphs, %d kernels run, capturing takes %s of it), not the replay; %s",
		captured, kernels, units.Pct(float64(capture)/float64(max(steady.Len(), 1))), advice)
}

// captures returns, over the main process's threads, the spans of stream
// capture (BeginCapture to EndCapture) and graph instantiation, and how
// many launches in steady steps were recorded into graphs.
func (ix *Index) captures(steady ivl.Set) (spans []ivl.Interval, captured int) {
	tl := ix.TL
	pid := tl.Tracks[ix.Main].PID
	classes := make([]captureClass, tl.NumNames())
	for t := range tl.Tracks {
		if tr := &tl.Tracks[t]; tr.Kind == timeline.TrackHost && tr.PID == pid {
			s, n := captureSpans(tl, tr, steady, classes)
			spans, captured = append(spans, s...), captured+n
		}
	}
	return spans, captured
}

// captureClass is what an API call's name says about graph capture, found
// once per name (capUnknown: not yet looked at).
type captureClass uint8

const (
	capUnknown     captureClass = iota
	capBegin                    // ...BeginCapture, ...BeginCaptureToGraph
	capEnd                      // ...EndCapture
	capInstantiate              // ...GraphInstantiate...
	capGraphLaunch              // cudaGraphLaunch and the like: a replay
	capOther
)

// classify is the captureClass of an API call's name; classes caches it
// per name.
func classify(tl *timeline.Timeline, id timeline.NameID, classes []captureClass) captureClass {
	if int(id) < len(classes) && classes[id] != capUnknown {
		return classes[id]
	}
	name := timeline.BaseAPIName(tl.Name(id))
	c := capOther
	switch {
	case strings.HasSuffix(name, "BeginCapture") || strings.HasSuffix(name, "BeginCaptureToGraph"):
		c = capBegin
	case strings.HasSuffix(name, "EndCapture"):
		c = capEnd
	case strings.Contains(name, "GraphInstantiate"):
		c = capInstantiate
	case timeline.IsGraphLaunch(name):
		c = capGraphLaunch
	}
	if int(id) < len(classes) {
		classes[id] = c
	}
	return c
}

// captureSpans scans one thread's API calls for capture spans and the
// launches made inside them.
func captureSpans(tl *timeline.Timeline, tr *timeline.Track, steady ivl.Set, classes []captureClass) (spans []ivl.Interval, captured int) {
	begin := int64(-1)
	for _, i := range tr.Events {
		e := &tl.Events[i]
		if e.Kind != timeline.KindAPI {
			continue
		}
		switch c := classify(tl, e.Name, classes); {
		case c == capBegin:
			begin = e.Start
		case c == capEnd:
			if begin >= 0 {
				spans = append(spans, ivl.Interval{Start: begin, End: e.End})
			}
			begin = -1
		case c == capInstantiate:
			spans = append(spans, ivl.Interval{Start: e.Start, End: e.End})
		case begin >= 0 && e.API == timeline.APILaunch && c != capGraphLaunch && steady.Contains(e.Start):
			captured++
		}
	}
	return spans, captured
}

// startupPattern names ranges and operators of one-time work: warm-up
// phases, JIT compilation, autotuning, initialisation, module loading.
var startupPattern = regexp.MustCompile(`(?i)warm-?up|compil|nvrtc|autotun|(^|[^a-z])init|initiali[sz]|lazy.?load|module.?load|load.?library`)

// lazyAPIPattern names API calls that set up the context or load code.
var lazyAPIPattern = regexp.MustCompile(`^(cuInit|cuCtxCreate|cuDevicePrimaryCtxRetain|cudaSetDevice|cuModuleLoad.*|cuLibraryLoad.*|hipModuleLoad.*|cuModuleGetFunction|cuLibraryGetKernel|cudaGetDeviceProperties.*|hipGetDeviceProperties.*|cudaDeviceGetStreamPriorityRange|cudaStreamCreate.*|hipStreamCreate.*|cudaGetDeviceCount|hipGetDeviceCount|cudaDriverGetVersion|cudaRuntimeGetVersion)$`)

// startupWhy says whether one-time start-up work covers StartupShare of
// step s or more: on the main process's threads, ranges and operators
// named for warm-up, compilation or initialisation, context set-up and
// module-loading calls, and launches or allocations of MinLazyCallNS or
// more while no kernel runs (lazy module loading).
func (ix *Index) startupWhy(s Step) string {
	if !ix.HasMain {
		return ""
	}
	tl := ix.TL
	pid := tl.Tracks[ix.Main].PID
	kernels := ix.Kernels
	var spans []ivl.Interval
	byName := map[string][]ivl.Interval{}
	for t := range tl.Tracks {
		tr := &tl.Tracks[t]
		if tr.Kind != timeline.TrackHost || tr.PID != pid {
			continue
		}
		seen := map[timeline.NameID]bool{}
		for _, i := range tr.Events {
			e := &tl.Events[i]
			first := e.Kind == timeline.KindAPI && !seen[e.Name]
			seen[e.Name] = true
			if e.End <= s.Start || e.Start >= s.End || !ix.oneTime(e, first, kernels) {
				continue
			}
			iv := ivl.Interval{Start: max(e.Start, s.Start), End: min(e.End, s.End)}
			spans = append(spans, iv)
			name := timeline.BaseAPIName(tl.Name(e.Name))
			byName[name] = append(byName[name], iv)
		}
	}
	got := ivl.Union(spans).Covered(s.Start, s.End)
	if float64(got) < StartupShare*float64(s.Dur()) {
		return ""
	}
	type nt struct {
		name string
		ns   int64
	}
	var top []nt
	for n, v := range byName {
		top = append(top, nt{n, ivl.Union(v).Len()})
	}
	slices.SortFunc(top, func(a, b nt) int {
		if a.ns != b.ns {
			if a.ns > b.ns {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	var parts []string
	for i, x := range top {
		if i == 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", units.Clip(x.name, 60), units.Dur(x.ns)))
	}
	return fmt.Sprintf("the window is dominated by one-time start-up (%s of %s in initialisation, module loading, compilation or warm-up: %s)",
		units.Dur(got), units.Dur(s.Dur()), strings.Join(parts, ", "))
}

// oneTime reports whether host event e is one-time start-up work; first
// says whether e is its thread's first call of that name.
func (ix *Index) oneTime(e *timeline.Event, first bool, kernels ivl.Set) bool {
	tl := ix.TL
	switch e.Kind {
	case timeline.KindRange, timeline.KindOp:
		// Python frames (with_stack) are named by file and function, and
		// a file such as vllm/compilation/decorators.py runs every call.
		name := tl.Name(e.Name)
		return !strings.Contains(name, ".py(") && !strings.HasPrefix(name, "<built-in") && startupPattern.MatchString(name)
	case timeline.KindAPI:
		if e.Dur() < MinLazyCallNS || e.API == timeline.APISync || e.API.IsCopy() {
			return false
		}
		idle := kernels.Covered(e.Start, e.End) < e.Dur()/10
		switch {
		case lazyAPIPattern.MatchString(timeline.BaseAPIName(tl.Name(e.Name))):
			return true
		case e.API == timeline.APIAlloc:
			// The first allocation or free of a thread creates the context
			// (the cudaFree(0) idiom) or the allocator's pools; later ones
			// are allocator churn (alloc-churn), not start-up.
			return first && idle
		}
		// A launch or query that takes milliseconds while the GPU computes
		// nothing loads modules or initialises the context.
		return idle
	}
	return false
}

// gpuRepeats reports whether the GPU work in [lo, hi) on the analysed
// devices holds a block of consecutive items (kernels, copies, memsets, by
// name) repeated at least minRepeats times in a row, in start order over
// all streams or on one stream, and returns the span of the longest such
// run: from the start of the launch call of its first item to the end of
// its last item. Candidate block lengths are the most common distances
// between two runs of the same item. Cost: O(n).
func (ix *Index) gpuRepeats(lo, hi int64) (start, end int64, ok bool) {
	start, end, ok, _ = ix.repeatedRun(lo, hi)
	return start, end, ok
}

// loopRegion is the span of the run of repeated GPU work in [lo, hi) when
// its repeated block holds a kernel and the run holds at least half of the
// GPU's busy time there: the loop, without one-time set-up and read-back
// around it.
func (ix *Index) loopRegion(lo, hi int64) (start, end int64, ok bool) {
	start, end, ok, kernel := ix.repeatedRun(lo, hi)
	if !ok || !kernel || 2*ix.Work.Covered(start, end) < ix.Work.Covered(lo, hi) {
		return 0, 0, false
	}
	return start, end, true
}

// repeatedRun is gpuRepeats, also saying whether the repeated block holds
// a kernel.
func (ix *Index) repeatedRun(lo, hi int64) (start, end int64, ok, kernel bool) {
	tl := ix.TL
	var all []int32
	perStream := map[timeline.TrackID][]int32{}
	for _, i := range ix.DeviceWork {
		e := &tl.Events[i]
		if e.Start < lo || e.Start >= hi {
			continue
		}
		all = append(all, i)
		perStream[e.Track] = append(perStream[e.Track], i)
	}
	best := int64(-1)
	consider := func(items []int32) {
		from, to, p, found := repeats(tl, items)
		if !found {
			return
		}
		s, e := tl.Events[items[from]].Start, int64(0)
		if l := tl.Events[items[from]].Link; l >= 0 {
			s = min(s, tl.Events[l].Start)
		}
		for _, i := range items[from:to] {
			e = max(e, tl.Events[i].End)
		}
		if e-s > best {
			best, start, end, ok, kernel = e-s, max(s, lo), min(e, hi), true, false
			for _, i := range items[from : from+p] {
				kernel = kernel || tl.Events[i].Kind == timeline.KindKernel
			}
		}
	}
	consider(all)
	streams := make([]timeline.TrackID, 0, len(perStream))
	for t := range perStream {
		streams = append(streams, t)
	}
	slices.Sort(streams) // ties go to the lower track, whatever the map's order
	for _, t := range streams {
		consider(perStream[t])
	}
	return start, end, ok, kernel
}

// repeats finds in items (events in start order) the longest run in which
// a block of p items repeats at least minRepeats times in a row, for p
// among the 8 most common distances between equal names, and returns the
// run as positions [from, to) and the block length p.
func repeats(tl *timeline.Timeline, items []int32) (from, to, p int, ok bool) {
	n := len(items)
	if n < minRepeats {
		return 0, 0, 0, false
	}
	name := func(k int) timeline.NameID { return tl.Events[items[k]].Name }
	last := map[timeline.NameID]int{}
	hist := map[int]int{}
	for k := range items {
		if j, seen := last[name(k)]; seen {
			hist[k-j]++
		}
		last[name(k)] = k
	}
	type dc struct{ d, n int }
	var ds []dc
	for d, c := range hist {
		if d*minRepeats <= n {
			ds = append(ds, dc{d, c})
		}
	}
	slices.SortFunc(ds, func(a, b dc) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return a.d - b.d
	})
	bestLen := 0
	for k, c := range ds {
		if k == 8 {
			break
		}
		d, runStart := c.d, 0
		for i := 0; i <= n-d; i++ {
			if i < n-d && name(i) == name(i+d) {
				continue
			}
			// A run of matches over [runStart, i) covers items [runStart, i+d).
			if i-runStart >= (minRepeats-1)*d && i+d-runStart > bestLen {
				from, to, p, bestLen, ok = runStart, i+d, d, i+d-runStart, true
			}
			runStart = i + 1
		}
	}
	return from, to, p, ok
}

// steadySet is the union of the current steady steps.
func (ix *Index) steadySet() ivl.Set {
	ivs := make([]ivl.Interval, len(ix.Steady))
	for i, s := range ix.Steady {
		ivs[i] = ivl.Interval{Start: s.Start, End: s.End}
	}
	return ivl.Union(ivs)
}
