package fix_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/fix"
)

// TestWorkers checks design.md's pool size: ceil(t_data / max(t_step -
// t_data, t_step / 20)) + 1.
func TestWorkers(t *testing.T) {
	for _, c := range []struct {
		data, step int64
		want       int
	}{
		{0, 10, 1}, {5, 0, 1}, {1, 10, 2}, {5, 10, 2}, {6, 10, 3}, {8, 10, 5},
		{10, 10, 21}, // no time left: the step / 20 floor bounds the pool
		{99, 100, 21}, {96, 100, 21}, {90, 100, 10},
	} {
		if got := fix.Workers(c.data, c.step); got != c.want {
			t.Errorf("Workers(%d, %d) = %d, want %d", c.data, c.step, got, c.want)
		}
	}
}
