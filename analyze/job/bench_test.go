package job

import (
	"fmt"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/audit"
)

// synthRanks makes n ranks of steps steps of 100 ms, each with per
// all-reduces; rank r arrives r µs late at each and they all leave
// together. No timelines: what the reduce reads of per-rank JSON.
func synthRanks(n, steps, per int) []*audit.Analysis {
	out := make([]*audit.Analysis, n)
	for r := range n {
		rep := &audit.Analysis{File: fmt.Sprintf("rank%d.json", r), SteadyWindowNS: int64(steps) * 100 * ms}
		rank, dev, pid := r, int64(r%8), int64(1000+r)
		rep.Rank, rep.Device, rep.PID = &rank, &dev, &pid
		rep.Steps.MedianNS = 100 * ms
		for s := range steps {
			t0 := int64(s) * 100 * ms
			rep.Steps.PerStep = append(rep.Steps.PerStep, audit.StepEntry{Name: fmt.Sprintf("ProfilerStep#%d", s), StartNS: t0, EndNS: t0 + 100*ms})
			for k := range per {
				at := t0 + 50*ms + int64(k)*40*us
				arrive, end := at+int64(r)*10, at+int64(n)*10+20*us
				rep.Collectives = append(rep.Collectives, audit.Collective{Step: s, Name: "allreduce", Group: "0", GroupSize: n, Order: k,
					Bytes: 1 << 20, ArrivalNS: arrive, EndNS: end, Exposed: [][2]int64{{arrive, end}}, Track: "gpu0/stream20"})
			}
		}
		out[r] = rep
	}
	return out
}

// BenchmarkReduce: the reduce of a 1,000-rank job, 3 steps of 100
// all-reduces each (300,000 collectives).
func BenchmarkReduce(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		ranks := synthRanks(1000, 3, 100)
		b.StartTimer()
		j, err := Reduce(ranks, Options{})
		if err != nil || j.Job.MatchedCollectives != 300 {
			b.Fatalf("%v, %d matched", err, j.Job.MatchedCollectives)
		}
	}
}
