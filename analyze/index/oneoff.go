package index

import (
	"fmt"
	"sort"

	"github.com/traceaudit/traceaudit/internal/units"
)

// OneOffShare: when one steady step holds at least this share of a cost
// summed over the steady steps, the cost is an event the trace shows once
// (a stall, a slow read), not a per-step pattern; its mean per step says
// nothing about the next steps.
const OneOffShare = 0.8

// SteadyIndex is the index in Steady of the steady step holding t, or -1.
// Cost: O(log n).
func (ix *Index) SteadyIndex(t int64) int {
	k := sort.Search(len(ix.Steady), func(i int) bool { return ix.Steady[i].End > t })
	if k < len(ix.Steady) && ix.Steady[k].Start <= t {
		return k
	}
	return -1
}

// PerSteady measures covered over each steady step: out[k] for Steady[k].
func (ix *Index) PerSteady(covered func(lo, hi int64) int64) []int64 {
	out := make([]int64, len(ix.Steady))
	for k, s := range ix.Steady {
		out[k] = covered(s.Start, s.End)
	}
	return out
}

// OneStep finds the steady step holding OneOffShare or more of a cost
// (per[k] for Steady[k]) when there are two steady steps or more: its
// index and share, or ok false.
func (ix *Index) OneStep(per []int64) (k int, share float64, ok bool) {
	if len(per) != len(ix.Steady) || len(per) < 2 {
		return 0, 0, false
	}
	var total int64
	for i, v := range per {
		total += v
		if v > per[k] {
			k = i
		}
	}
	if total <= 0 {
		return 0, 0, false
	}
	share = float64(per[k]) / float64(total)
	return k, share, share >= OneOffShare
}

// OneOff is the caveat of a cost (per[k] for Steady[k]) that one steady
// step holds (OneStep), else "": which step, how much, and what to
// capture to judge it.
func (ix *Index) OneOff(per []int64) string {
	k, share, ok := ix.OneStep(per)
	if !ok {
		return ""
	}
	s := ix.Steady[k]
	return fmt.Sprintf("one of the %d steady steps holds %s of it (%s in a %s step; the median step is %s): the trace shows it once, "+
		"so it may not recur; profile more steps (20 or more) to judge", len(ix.Steady), units.Pct(share), units.Dur(per[k]),
		units.Dur(s.Dur()), units.Dur(ix.MedianStepNS()))
}
