package index

import (
	"math"
	"slices"

	"github.com/traceaudit/traceaudit/timeline"
)

// Thresholds of the steady state (design.md, "Steady state you can trust").
const (
	// StartupFactor: the first step is start-up, and the last of a
	// repeated-range loop its end, when longer than StartupFactor times
	// every other step.
	StartupFactor = 1.5
	// GPULagShare: when the GPU work a host step launched ends more than
	// this share of a step after the host step (median over steps), the
	// GPU runs behind the host and steps are paced by the GPU work.
	GPULagShare = 0.10
	// MinPreWindowWaitNS is the shortest host wait at the start of the
	// window that counts as waiting for GPU work queued before it.
	MinPreWindowWaitNS = 5_000_000
)

// dropIdleSteps removes range steps that launched no GPU work (an empty
// ProfilerStep after the loop ended): only ranges that launch GPU work are
// steps.
func (ix *Index) dropIdleSteps(steps []Step) []Step {
	return slices.DeleteFunc(steps, func(s Step) bool { return ix.launches.within(s.Start, s.End).len() == 0 })
}

// paceByGPU re-cuts host steps by the GPU work each launched when the GPU
// runs behind the host by more than GPULagShare of a step: step k then
// runs from the start of the first GPU work host step k launched to the
// start of step k+1's; the last runs to the end of its work, at most one
// median step long (its tail overlaps where the next step would have
// started). It reports the median lag as a share of the median host step
// (0 when not paced).
func (ix *Index) paceByGPU(steps []Step) ([]Step, float64) {
	if len(steps) == 0 {
		return steps, 0
	}
	firsts := make([]int64, len(steps))
	lasts := make([]int64, len(steps))
	lags := make([]int64, 0, len(steps))
	durs := make([]int64, 0, len(steps))
	for k, s := range steps {
		f, l, ok := ix.launches.within(s.Start, s.End).span()
		if !ok {
			return steps, 0
		}
		firsts[k], lasts[k] = f, l
		lags = append(lags, l-s.End)
		durs = append(durs, s.Dur())
	}
	lag := float64(median(lags)) / float64(max(median(durs), 1))
	if lag <= GPULagShare {
		return steps, 0
	}
	out := make([]Step, len(steps))
	periods := make([]int64, 0, len(steps))
	for k, s := range steps {
		out[k] = Step{Name: s.Name, Start: firsts[k], End: lasts[k]}
		if k+1 < len(steps) {
			out[k].End = max(firsts[k+1], firsts[k]+1)
			periods = append(periods, out[k].End-out[k].Start)
		}
	}
	if n := len(out); n >= 2 {
		out[n-1].End = min(out[n-1].End, out[n-1].Start+median(periods))
	}
	return out, lag
}

// clipSteps keeps steps within [lo, hi): the trace's last event ends every
// step, and the first step starts once the host stopped waiting for GPU
// work queued before the window.
func clipSteps(steps []Step, lo, hi int64) []Step {
	out := steps[:0]
	for _, s := range steps {
		s.Start, s.End = max(s.Start, lo), min(s.End, hi)
		if s.End > s.Start {
			out = append(out, s)
		}
	}
	return out
}

// preWindowEnd is when the main thread stops waiting for GPU work queued
// before the profiler window: a blocking call (a synchronisation, or a
// copy call before its own transfer starts) that began before any GPU work
// the trace saw launched, and during which the trace shows the GPU mostly
// idle, waits for work launched before the window that the trace did not
// record. It returns the end of the last such wait of at least
// MinPreWindowWaitNS, or -2^62. (Waits on recorded earlier work, such as
// a step that starts by synchronising with the previous step's kernels,
// are kept: every steady step has them.)
func (ix *Index) preWindowEnd() int64 {
	end := int64(-1 << 62)
	first, ok := ix.launches.firstWork()
	if !ix.HasMain || !ok {
		return end
	}
	tl := ix.TL
	for _, i := range tl.Tracks[ix.Main].Events {
		e := &tl.Events[i]
		if e.Start >= first {
			break
		}
		if e.Kind != timeline.KindAPI {
			continue
		}
		waitEnd := int64(-1 << 62)
		switch {
		case e.API == timeline.APISync:
			waitEnd = e.End
		case e.API.IsCopy() && e.Link >= 0:
			waitEnd = min(tl.Events[e.Link].Start, e.End)
		}
		if w := waitEnd - e.Start; w >= MinPreWindowWaitNS && 2*ix.Work.Covered(e.Start, waitEnd) < w {
			end = max(end, waitEnd)
		}
	}
	return end
}

// markEnds flags the first step as start-up when it runs longer than
// StartupFactor times every other step, and, for repeated-range loops, the
// last as the loop's end when it does, when it runs shorter than every
// other step by that factor (a cycle cut short: the loop ended), or when
// it lacks a range every other cycle has. Comparing with every other step
// (not their median) keeps both halves of a bimodal loop (steps of 115,
// 118, 1015, 1068 ms).
func markEnds(steps []Step, repeated, lastIncomplete bool) {
	n := len(steps)
	others := func(k int) (lo, hi int64) {
		lo = math.MaxInt64
		for j, s := range steps {
			if j != k {
				lo, hi = min(lo, s.Dur()), max(hi, s.Dur())
			}
		}
		return lo, hi
	}
	if n >= 2 {
		if _, hi := others(0); float64(steps[0].Dur()) > StartupFactor*float64(hi) {
			steps[0].Startup = true
		}
	}
	if repeated && n >= minRepeats {
		lo, hi := others(n - 1)
		d := float64(steps[n-1].Dur())
		if lastIncomplete || d > StartupFactor*float64(hi) || StartupFactor*d < float64(lo) {
			steps[n-1].Teardown = true
		}
	}
}
