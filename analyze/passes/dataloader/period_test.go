package dataloader

import (
	"math"
	"math/rand/v2"
	"testing"
)

// settledDirect is settledPeriod as its comment reads, by brute force.
func settledDirect(waits []int64) int {
	for w := 2; w <= maxPeriod && 3*w <= len(waits); w++ {
		for skip := 0; skip <= w; skip++ {
			rest := waits[skip:]
			for o := range w {
				var stall, other int64 = math.MaxInt64, 0
				n := 0
				for k, v := range rest {
					if k%w == o {
						stall, n = min(stall, v), n+1
					} else {
						other = max(other, v)
					}
				}
				if n >= 3 && stall > 0 && stall >= settleRatio*other {
					return w
				}
			}
		}
	}
	return 0
}

// TestSettledPeriodMatchesDirect: the one-pass search finds the period the
// brute force does, on loops that stall every W-th step (with noise, a
// late start, ties) and on noise alone.
func TestSettledPeriodMatchesDirect(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for c := range 3000 {
		n := 6 + r.IntN(150)
		w := 2 + r.IntN(12)
		waits := make([]int64, n)
		for k := range waits {
			waits[k] = int64(r.IntN(100))
			if c%3 != 0 && k%w == c%w {
				waits[k] = 1000 + int64(r.IntN(3))*100 // a stall, sometimes tied
			}
		}
		if got, want := settledPeriod(waits), settledDirect(waits); got != want {
			t.Fatalf("case %d (%d waits, W %d): %d, want %d", c, n, w, got, want)
		}
	}
}
