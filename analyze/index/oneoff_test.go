package index

import (
	"strings"
	"testing"
)

// SteadyIndex finds the steady step holding a time (steps may leave gaps:
// a start-up step set aside); OneStep and OneOff find a cost one steady
// step holds, from OneOffShare on, with two steady steps or more.
func TestOneOff(t *testing.T) {
	ix := &Index{Steady: []Step{{Start: 0, End: 10}, {Start: 20, End: 130}, {Start: 130, End: 140}}}
	for _, c := range []struct {
		t    int64
		want int
	}{{-1, -1}, {0, 0}, {9, 0}, {10, -1}, {19, -1}, {20, 1}, {129, 1}, {130, 2}, {139, 2}, {140, -1}} {
		if got := ix.SteadyIndex(c.t); got != c.want {
			t.Errorf("SteadyIndex(%d) = %d, want %d", c.t, got, c.want)
		}
	}
	for _, c := range []struct {
		per   []int64
		k     int
		share float64
		ok    bool
	}{
		{[]int64{0, 100, 0}, 1, 1, true},
		{[]int64{10, 80, 10}, 1, 0.8, true},
		{[]int64{11, 79, 10}, 1, 0.79, false},
		{[]int64{50, 0, 50}, 0, 0.5, false},
		{[]int64{0, 0, 0}, 0, 0, false},
		{[]int64{5, 5}, 0, 0, false}, // the wrong length
	} {
		k, share, ok := ix.OneStep(c.per)
		if ok != c.ok || (ok && (k != c.k || share != c.share)) {
			t.Errorf("OneStep(%v) = %d, %v, %v", c.per, k, share, ok)
		}
	}
	if got := ix.OneOff([]int64{0, 100, 0}); !strings.HasPrefix(got, "one of the 3 steady steps holds 100 % of it (100 ns in a 110 ns step; the median step is 10 ns)") {
		t.Errorf("OneOff %q", got)
	}
	one := &Index{Steady: []Step{{Start: 0, End: 10}}}
	if _, _, ok := one.OneStep([]int64{7}); ok {
		t.Error("one steady step is not a one-off of several")
	}
}

// TestStepStderr: the mean step's standard error is the steps' sample
// standard deviation over the square root of their count; none with one
// step or none.
func TestStepStderr(t *testing.T) {
	for _, c := range []struct {
		durs []int64
		want int64
	}{
		{[]int64{10e6, 20e6, 30e6}, 5773502}, // sd 10 ms, over √3
		{[]int64{20e6, 20e6, 20e6, 20e6}, 0},
		{[]int64{10e6, 30e6}, 10e6}, // sd √200 ms, over √2
		{[]int64{5e6}, 0},
		{nil, 0},
	} {
		ix := &Index{}
		var at int64
		for _, d := range c.durs {
			ix.Steady = append(ix.Steady, Step{Start: at, End: at + d})
			ix.SteadyNS += d
			at += d + 1e6
		}
		if got := ix.StepStderrNS(); got < c.want-1 || got > c.want+1 {
			t.Errorf("steps %v: standard error %d ns, want %d", c.durs, got, c.want)
		}
	}
}
