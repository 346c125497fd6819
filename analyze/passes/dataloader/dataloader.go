// Package dataloader defines the dataloader-wait analyzer: the main
// thread waiting for the next batch.
package dataloader

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/fix"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/advice"
	"github.com/traceaudit/traceaudit/internal/units"
)

// Analyzer is dataloader-wait.
var Analyzer = &analyze.Analyzer{
	ID:    "dataloader-wait",
	Title: "the main thread waits for the next batch",
	Doc: `dataloader-wait measures the main thread's time inside DataLoader __next__
spans, or host ranges matching --data-range, that is not spent in CUDA copy
or sync calls, OS memory calls, or while kernels run: the "data" bucket of the
two-clock split. Bands follow XProf's input-pipeline analysis (5 % / 20 %).
The fix sizes a worker pool from the measured wait: a pool of N producers
keeps up when t_batch / N <= the rest of the step, so
num_workers = ceil(t_batch / max(t_step - t_data, t_step / 20)) + 1, where
t_batch is t_data when the main thread builds batches, and W x the mean step
when the waits recur every W-th step (W workers already run; the advice is
never fewer than W + 1). Inference traces get advice about preparing
inputs ahead, programs that are not PyTorch about loader threads.
Wasted time: the data bucket. Cost: O(n log n).`,
	Requires:   []*analyze.Analyzer{index.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.05, Error: 0.20},
	VerifyWith: []string{fix.PrefetchWorkers, fix.PersistentWorkers},
	Resize:     resize,
	Observable: observable,
	Run:        run,
}

func observable(p *analyze.Pass) (bool, string) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	if len(ix.MainData) > 0 {
		return true, ""
	}
	// What to capture depends on how the profiler records ranges: by itself
	// (record_function, DataLoader spans) or through NVTX.
	switch o := p.Timeline.Observed; {
	case o.CanAnnotations:
		return false, "no DataLoader __next__ span or range matching --data-range on the main thread: iterate the DataLoader inside the profiled loop, or wrap batch loading in torch.profiler.record_function(\"get batch\")"
	case o.CanNVTX && !o.NVTX:
		return false, "no NVTX ranges in the profile: wrap batch loading in torch.cuda.nvtx.range(\"get batch\") and capture with nsys --trace=cuda,nvtx"
	case o.CanNVTX:
		return false, "no NVTX range on the main thread names data loading (matching --data-range): wrap batch loading in torch.cuda.nvtx.range(\"get batch\") or pass --data-range"
	}
	return false, "no range on the main thread names data loading (DataLoader __next__, or a range matching --data-range): wrap batch loading in a named range (torch.profiler.record_function or NVTX) or pass --data-range"
}

// Detail is the typed form of a dataloader-wait finding's detail map: its
// typed fix (Workers) and the figures it was sized from.
type Detail struct {
	fix.DataLoader
	// DataNSPerStep is the data bucket per steady step, in nanoseconds.
	DataNSPerStep int64 `detail:"data_ns_per_step"`
	// StepNS is the mean steady step, in nanoseconds.
	StepNS int64 `detail:"step_ns"`
	// BatchNS is one batch's production time, t_batch: the data wait when
	// the main thread builds batches, W x the mean step when the waits
	// recur every W-th step.
	BatchNS int64 `detail:"batch_ns"`
	// RunningWorkers is the number of workers the stall pattern shows the
	// run already has (0: unknown).
	RunningWorkers int `detail:"running_workers"`
}

// DetailOf reads f's detail; ok is false when a key is missing.
func DetailOf(f *analyze.Finding) (d Detail, ok bool) { return d, analyze.DecodeDetail(f, &d) }

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	data := ix.Buckets[index.Data]
	total := ix.SteadyCovered(data)
	if total == 0 {
		return nil, nil
	}
	per, share := ix.PerStep(total)
	// Evidence: each stretch of data loading (nested data ranges merged),
	// named by the outermost range that starts it.
	outer := map[int64]string{}
	for _, i := range tl.Tracks[ix.Main].Events {
		e := &tl.Events[i]
		if ix.IsData(e) {
			if _, ok := outer[e.Start]; !ok {
				outer[e.Start] = tl.Name(e.Name) // events are sorted: the outermost comes first
			}
		}
	}
	evidence := analyze.NewTop(analyze.MaxEvidence)
	for _, iv := range ix.MainData {
		w := data.Covered(iv.Start, iv.End)
		if w == 0 || !ix.InSteady(iv.Start) || !evidence.Wants(w, iv.Start) {
			continue
		}
		evidence.Add(analyze.Candidate{Weight: w, Evidence: analyze.Evidence{
			StartNS: iv.Start, EndNS: iv.End, Track: ix.Label(ix.Main)}, Describe: func() string {
			return fmt.Sprintf("%q: main thread waits %s for data (%s of the range)", outer[iv.Start], units.Dur(w), units.Pct(float64(w)/float64(max(iv.Len(), 1))))
		}})
	}
	a := observe(ix)
	stepNS, tBatch, running := a.stepNS, a.tBatch, a.running
	oneOff := ix.OneOff(a.waits)
	size := analyze.PoolSize{Workers: fix.WorkersFor(tBatch, per, stepNS)}
	if running > 0 {
		size.Workers = max(size.Workers, running+1)
	}
	if a.uncounted() {
		size = analyze.PoolSize{Factor: math.Ceil(float64(stepNS)/float64(max(stepNS-per, stepNS/20))*10) / 10}
	}
	f := analyze.Finding{
		Title:            fmt.Sprintf("input-bound: the main thread waits for data %s of each step (%s per step)", units.Pct(share), units.Dur(per)),
		WastedNS:         per,
		Share:            share,
		EstimatedSpeedup: ix.Speedup(per, 0, share),
		Bound:            "none: enough producers hide the whole wait",
		Evidence:         evidence.Evidence(),
		Detail: analyze.DetailMap(Detail{DataLoader: fix.DataLoader{Workers: size.Workers}, DataNSPerStep: per, StepNS: stepNS,
			BatchNS: tBatch, RunningWorkers: running}),
		OneOff: oneOff,
	}
	if size.Factor > 0 {
		f.Detail[fix.WorkersFactor] = size.Factor
	}
	f.Fix, f.Code = a.text(size, byFormula)
	if a.restartNS > 0 {
		maps.Copy(f.Detail, analyze.DetailMap(fix.Restarts{RestartNS: a.restartNS, EpochSteps: a.epoch}))
		f.VerifyWith = []string{fix.PersistentWorkers}
	}
	if a.multi && (running == 0 || !a.exact) && a.restartNS == 0 {
		// Workers run (the ranges name the multiprocessing iterator, or
		// one stall shows at least so many) but nothing in the trace
		// counts them: a batch's build time is not known, and the step
		// model does not size the pool.
		f.Detail[fix.RunningUnknown] = 1
	}
	p.AddFinding(f)
	return nil, nil
}

// loaderAdvice is what the fix's text says of the loader: the kind of
// program, the wait and step, one batch's build and the workers running.
type loaderAdvice struct {
	prog                advice.Program
	per, stepNS, tBatch int64
	running             int
	exact, multi        bool
	// epoch is the steps between two epoch restarts (0: one restart seen,
	// or none); restartNS their mean length, 0 without restarts; between
	// is the mean data wait of the other steps.
	epoch              int
	restartNS, between int64
	// waits are the data waits of each steady step.
	waits []int64
}

// observe reads the loader from the main thread's data waits: the wait per
// step, whether its ranges name worker processes, and the workers the
// waits' recurrence shows running.
func observe(ix *index.Index) loaderAdvice {
	tl := ix.TL
	data := ix.Buckets[index.Data]
	per, _ := ix.PerStep(ix.SteadyCovered(data))
	multi, single := false, false
	for _, i := range tl.Tracks[ix.Main].Events {
		e := &tl.Events[i]
		if !ix.IsData(e) {
			continue
		}
		name := tl.Name(e.Name)
		multi = multi || strings.Contains(name, "MultiProcessing")
		single = single || strings.Contains(name, "SingleProcess")
	}
	a := loaderAdvice{prog: advice.Of(ix), per: per, stepNS: ix.MeanStepNS(), tBatch: per, multi: multi}
	a.waits = ix.PerSteady(data.Covered)
	period, exact := StallPeriod(a.waits)
	if period >= 2 && !single {
		// Stalls every W-th step: W workers already run, each building a
		// batch in about W steps.
		a.running, a.tBatch, a.exact, a.multi = period, int64(period)*a.stepNS, exact, true
	}
	if rs := ix.Restarts(); len(rs) > 0 {
		// Stalls at epoch boundaries: the loader starting again, not W
		// workers each building a batch in W steps.
		a.running, a.tBatch, a.exact = 0, per, false
		var sum int64
		at := map[int]bool{}
		for _, r := range rs {
			sum += r.Dur()
			at[r.Step] = true
		}
		a.restartNS = sum / int64(len(rs))
		if len(rs) >= 2 {
			a.epoch = rs[1].Step - rs[0].Step
		}
		var rest int64
		for k, w := range a.waits {
			if !at[k] {
				rest += w
			}
		}
		if n := len(a.waits) - len(at); n > 0 {
			a.between = rest / int64(n)
		}
	}
	return a
}

// restartAdvice says what the epoch restarts cost and that persistent
// workers remove them, "" without restarts.
func (a loaderAdvice) restartAdvice() string {
	if a.restartNS == 0 {
		return ""
	}
	every := "at an epoch boundary"
	if a.epoch > 0 {
		every = fmt.Sprintf("every %d steps", a.epoch)
	}
	return fmt.Sprintf("The loader starts again %s (a step asks it for a batch twice: the last of one epoch, then the first of the next) "+
		"and the main thread waits %s for it each time: with persistent_workers=False, DataLoader's default, every epoch starts its "+
		"worker processes anew. Keep them alive with persistent_workers=True. ", every, units.Dur(a.restartNS))
}

// resize rewrites dataloader-wait finding f for the pool the step model
// chose: its detail's workers (or workers_factor), fix and code.
func resize(p *analyze.Pass, f *analyze.Finding, size analyze.PoolSize) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	f.Detail["workers"] = float64(size.Workers)
	if size.Factor > 0 {
		f.Detail[fix.WorkersFactor] = size.Factor
	}
	fixText, code := observe(ix).text(size, byModel)
	if strings.HasPrefix(f.Fix, analyze.OneOffFix) {
		fixText = analyze.OneOffFix + fixText
	}
	f.Fix, f.Code = fixText, code
}

// Why the code's num_workers is what it is: the formula, or the step
// model's simulation; byFactor is the formula where the trace does not
// count the workers that run.
const (
	byFormula = "ceil(t_batch / (t_step - t_data)) + 1, from the measured wait"
	byFactor  = "t_step / (t_step - t_data), from the measured wait"
	byModel   = "the fewest within 5 % of the best simulated step"
)

// uncounted says workers build the batches but nothing in the trace counts
// them (no recurrence of the stalls, no epoch restarts): the pool is a
// multiple of the workers that run.
func (a loaderAdvice) uncounted() bool { return a.multi && a.running == 0 && a.restartNS == 0 }

// slowerWorkers is what the advice adds where the step model sized a pool
// for workers slower than the main thread (model.workerHeadroom).
const slowerWorkers = ", even at half the main thread's speed each (workers that build at once contend for memory and cores; " +
	"a pool of N keeps up when t_batch / N is at most the rest of the step)"

// text writes the fix and its code for a pool of workers, chosen as why
// says.
func (a loaderAdvice) text(size analyze.PoolSize, why string) (fixText, code string) {
	if size.Factor > 0 {
		if why == byFormula {
			why = byFactor
		}
		return a.factorText(size.Factor, why)
	}
	workers := size.Workers
	per, stepNS, tBatch, running, exact, multi := a.per, a.stepNS, a.tBatch, a.running, a.exact, a.multi
	if r := a.restartAdvice(); r != "" && a.between*10 < stepNS {
		// Between the restarts the workers keep up: keeping them is the fix.
		return r + "Between restarts the main thread waits " + units.Dur(a.between) + " a step.", `loader = torch.utils.data.DataLoader(
    dataset, batch_size=batch_size, shuffle=True,
    num_workers=num_workers,
    persistent_workers=True,  # keep the workers (and their warm state) across epochs
    pin_memory=True,
)`
	}
	defer func() { fixText = a.restartAdvice() + fixText }()
	switch a.prog {
	case advice.Training:
		fixText = trainingFix(per, stepNS, tBatch, workers, running, exact, multi, why == byModel && running == 0)
		code = trainingCode(fmt.Sprintf("num_workers=%d,           # %s", workers, why))
	case advice.Inference:
		fixText = workersPrefix(per, stepNS, tBatch, workers, running, exact, multi) +
			fmt.Sprintf("The main thread waits for its next input %s of each %s step while the GPU idles. Prepare inputs ahead: "+
				"build the next input's tensors in %d worker processes or a background thread while the GPU runs the current one, "+
				"and hand them over in pinned memory.", units.Dur(per), units.Dur(stepNS), workers)
		code = fmt.Sprintf(`loader = torch.utils.data.DataLoader(inputs, batch_size=None,
                                     num_workers=%d, pin_memory=True)   # inputs prepared ahead
with torch.inference_mode():
    for x in loader:
        out = model(x.to("cuda", non_blocking=True))`, workers)
	default:
		fixText = fmt.Sprintf("The main thread waits for its next batch %s of each %s step while the GPU idles. Load batches ahead on "+
			"%d loader threads into pinned buffers (double buffering), so the next batch is ready when the GPU finishes.", units.Dur(per), units.Dur(stepNS), workers)
		code = `/* loader threads fill pinned buffer (i+1)%2 while the GPU works on buffer i%2 */
cudaMemcpyAsync(d_in, h_in[i % 2], bytes, cudaMemcpyHostToDevice, s);`
	}
	return fixText, code
}

// factorText writes the fix and its code for a pool factor times the
// workers that run, where the trace does not count them.
func (a loaderAdvice) factorText(factor float64, why string) (fixText, code string) {
	n := strconv.FormatFloat(factor, 'f', -1, 64)
	fixText = fmt.Sprintf("The DataLoader already uses worker processes but they do not keep up: the main thread waits %s of each %s step "+
		"for their next batch, and nothing in the trace counts them (its waits do not recur every few steps). Raise num_workers to "+
		"%s times the workers you run (%s), make __getitem__ cheaper (decode less, move augmentation to the GPU), or raise "+
		"prefetch_factor.", units.Dur(a.per), units.Dur(a.stepNS), n, why)
	if a.prog != advice.Training {
		return fixText, fmt.Sprintf(`loader = torch.utils.data.DataLoader(inputs, batch_size=None, pin_memory=True,
                                     num_workers=math.ceil(%s * num_workers))   # inputs prepared ahead`, n)
	}
	fixText += " pin_memory=True makes the copy asynchronous and persistent_workers=True avoids re-spawning workers each epoch."
	return fixText, trainingCode(fmt.Sprintf("num_workers=math.ceil(%s * num_workers),  # %sx the workers that run now", n, n))
}

// trainingCode is the training loop's DataLoader with the given
// num_workers line.
func trainingCode(workersLine string) string {
	return `loader = torch.utils.data.DataLoader(
    dataset, batch_size=batch_size, shuffle=True,
    ` + workersLine + `
    pin_memory=True,          # page-locked batches: fast, asynchronous host-to-device copies
    persistent_workers=True,  # keep workers alive between epochs
    prefetch_factor=2,
)`
}

// trainingFix writes the DataLoader advice: workers from the measured wait,
// and when the stalls recur every W-th step, from the W workers that
// already run; slower says the step model sized the pool for workers
// slower than the main thread.
func trainingFix(per, stepNS, tBatch int64, workers, running int, exact, multi, slower bool) string {
	why := " (a pool of N keeps up when t_batch / N is at most the rest of the step)"
	if slower {
		why = slowerWorkers
	}
	return workersPrefix(per, stepNS, tBatch, workers, running, exact, multi) +
		fmt.Sprintf("Build batches in DataLoader worker processes so the next batch is ready when the step ends. "+
			"The main thread waits %s of each %s step; one batch takes about %s to build, so %s%s. pin_memory=True makes the copy asynchronous "+
			"and persistent_workers=True avoids re-spawning workers each epoch.", units.Dur(per), units.Dur(stepNS), units.Dur(tBatch), keepUp(workers), why)
}

// keepUp says that n workers keep up, in the right number.
func keepUp(n int) string {
	if n == 1 {
		return "1 worker keeps up"
	}
	return fmt.Sprintf("%d workers keep up", n)
}

// workersPrefix says what the run's workers already do when the waits show
// that workers run: never advise fewer than the run already has.
func workersPrefix(per, stepNS, tBatch int64, workers, running int, exact, multi bool) string {
	switch {
	case running > 0 && exact:
		return fmt.Sprintf("The stalls recur every %d steps: %d DataLoader workers already run and each needs about %d steps (%s) "+
			"per batch. Raise num_workers to %d, make __getitem__ cheaper (decode less, move augmentation to the GPU), or raise "+
			"prefetch_factor. ", running, running, running, units.Dur(tBatch), workers)
	case running > 0:
		return fmt.Sprintf("One step in %d or more stalls: at least %d DataLoader workers already run and each needs about %s "+
			"per batch. Raise num_workers to %d or more, make __getitem__ cheaper, or raise prefetch_factor. ", running, running,
			units.Dur(tBatch), workers)
	case multi:
		return "The DataLoader already uses worker processes but they do not keep up: raise num_workers by at least " +
			fmt.Sprintf("%.1fx (t_step / (t_step - t_data)), ", float64(stepNS)/float64(max(stepNS-per, stepNS/20))) +
			"make __getitem__ cheaper (decode less, move augmentation to the GPU), or raise prefetch_factor. "
	}
	return ""
}

// StallPeriod reads the per-step data waits of the steady steps: when the
// waits recur every W-th step (W >= 2) with little wait between, W
// DataLoader workers already run, each building one batch in about W
// steps. exact is false when only one stall was seen, and W is then the
// least period consistent with it. Where the stalls differ in length, or
// the first steps are still settling, the pattern holds once they have
// settled (settledPeriod), or the stalls' rate gives W (burstPeriod). It
// returns 0 when the waits do not stall periodically.
func StallPeriod(waits []int64) (w int, exact bool) {
	if w, exact = cleanPeriod(waits); w > 0 {
		return w, exact
	}
	if w = settledPeriod(waits); w > 0 {
		return w, true
	}
	return burstPeriod(waits), true
}

// burstPeriod reads W from the rate of the stalls where their pattern
// slips (two workers' batches drifting in and out of step): the steps
// over the waits longer than the mean wait, where those average
// settleRatio times the others and there are three or more; 0 otherwise
// or where that is under 2.
func burstPeriod(waits []int64) int {
	var sum int64
	for _, v := range waits {
		sum += v
	}
	if len(waits) == 0 || sum == 0 {
		return 0
	}
	mean := float64(sum) / float64(len(waits))
	var long, short float64
	nl := 0
	for _, v := range waits {
		if float64(v) > mean {
			long, nl = long+float64(v), nl+1
		} else {
			short += float64(v)
		}
	}
	ns := len(waits) - nl
	if nl < 3 || ns == 0 || long/float64(nl) < settleRatio*short/float64(ns) {
		return 0
	}
	if w := int(math.Round(float64(len(waits)) / float64(nl))); w >= 2 {
		return w
	}
	return 0
}

// settleRatio is how much longer than every other wait each stall of a
// settled pattern is.
const settleRatio = 3

// maxPeriod is the largest pool a settled pattern is read for: a wait
// every W-th step means W workers, and pools beyond 32 are not what the
// stalls of a trace tell apart (the step model sizes pools up to 32 too).
const maxPeriod = 32

// settledPeriod is the least W >= 2 at which, past the first W steps at
// most (the workers' batches arriving out of step while the pipeline
// fills), every W-th wait is settleRatio times longer than any other, for
// at least three stalls; 0 when there is none.
func settledPeriod(waits []int64) int {
	for w := 2; w <= maxPeriod && 3*w <= len(waits); w++ {
		lo, hi, n := make([]int64, w), make([]int64, w), make([]int, w)
		for skip := 0; skip <= w; skip++ {
			rest := waits[skip:]
			// Per offset o: the least and the largest wait at steps
			// k % w == o, and their count.
			for o := range w {
				lo[o], hi[o], n[o] = math.MaxInt64, 0, 0
			}
			for k, v := range rest {
				o := k % w
				lo[o], hi[o], n[o] = min(lo[o], v), max(hi[o], v), n[o]+1
			}
			// The largest wait off each offset: the largest of the
			// other offsets' largest.
			var top, second int64
			topAt := -1
			for o := range w {
				switch {
				case hi[o] > top:
					second, top, topAt = top, hi[o], o
				case hi[o] > second:
					second = hi[o]
				}
			}
			for o := range w {
				other := top
				if o == topAt {
					other = second
				}
				if n[o] >= 3 && lo[o] > 0 && lo[o] >= settleRatio*other {
					return w
				}
			}
		}
	}
	return 0
}

// cleanPeriod is StallPeriod of waits whose every stall is at least half
// the longest, with no wait of a fifth of it or more between.
func cleanPeriod(waits []int64) (w int, exact bool) {
	var top int64
	for _, v := range waits {
		top = max(top, v)
	}
	if top == 0 || len(waits) < 2 {
		return 0, false
	}
	var stalls []int
	for k, v := range waits {
		switch {
		case 2*v >= top:
			stalls = append(stalls, k)
		case 5*v >= top:
			return 0, false // waits in between: not a clean pattern
		}
	}
	if len(stalls) == 1 {
		k := stalls[0]
		return max(k, len(waits)-1-k) + 1, false
	}
	d := stalls[1] - stalls[0]
	for i := 2; i < len(stalls); i++ {
		if stalls[i]-stalls[i-1] != d {
			return 0, false
		}
	}
	if d < 2 {
		return 0, false
	}
	return d, true
}
