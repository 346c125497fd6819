package job

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/traceaudit/traceaudit/analyze/audit"
)

// FuzzReduce: `traceaudit job` reduces JSON written by anyone; no input may
// make the reduce panic.
func FuzzReduce(f *testing.F) {
	if b, err := json.Marshal(synthRanks(3, 2, 4)); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		`[]`, `[{}]`, `[{}, {}]`, `[{"rank": 0}, {"rank": 0}]`,
		`[{"rank": 0, "steps": {"per_step": [{"start_ns": 10, "end_ns": 0}]}, "collectives": [{"step": 7, "name": "allreduce", "arrival_ns": 5, "end_ns": 1, "exposed": [[9, 2]]}]},
		  {"rank": 1, "collectives": [{"step": -1, "name": "allreduce", "seq": 3, "arrival_ns": -9223372036854775808, "end_ns": 9223372036854775807}]}]`,
		`[{"rank": 2, "steps": {"median_ns": 0, "per_step": [{"name": "ProfilerStep#x"}]}, "collectives": [{"name": "broadcast"}]}, {"rank": 1, "steady_window_ns": -5}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var rs []*audit.Analysis
		if json.Unmarshal(data, &rs) != nil {
			return
		}
		for _, r := range rs {
			if r == nil {
				return
			}
		}
		t0 := time.Now()
		j, err := Reduce(rs, Options{InfoFloor: 0.01})
		if d := time.Since(t0); d > 2*time.Second {
			t.Fatalf("the reduce of %d bytes took %s", len(data), d)
		}
		if err == nil && (j.Job.Ranks != len(rs) || len(j.Ranks) != len(rs)) {
			t.Fatalf("%d ranks from %d analyses", j.Job.Ranks, len(rs))
		}
	})
}
