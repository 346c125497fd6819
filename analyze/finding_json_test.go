package analyze

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFindingBoundJSON: Bound is written as detail.bound, a string among
// the detail's numbers (design.md), and read back.
func TestFindingBoundJSON(t *testing.T) {
	f := Finding{ID: "sync-memcpy", Severity: SeverityError, EstimatedSpeedup: 5.9,
		Detail: map[string]float64{"pinned_gbps": 50}, Bound: "the copies at the pinned reference stay"}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"detail":{"bound":"the copies at the pinned reference stay","pinned_gbps":50}`) {
		t.Errorf("json %s", b)
	}
	var back Finding
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Bound != f.Bound || back.Detail["pinned_gbps"] != 50 || len(back.Detail) != 1 || back.Severity != SeverityError {
		t.Errorf("read back %+v", back)
	}
	// Without a bound the detail holds only numbers, as before.
	f.Bound = ""
	b, _ = json.Marshal(f)
	if strings.Contains(string(b), "bound") {
		t.Errorf("json %s", b)
	}
	if err := json.Unmarshal([]byte(`{"id":"x","detail":{"workers":"four"}}`), &back); err == nil {
		t.Error("a string detail other than bound was accepted")
	}
}

// TestBoundedSpeedup: step / (step - wasted + residual), never above
// 1 / (1 - share), capped at 100.
func TestBoundedSpeedup(t *testing.T) {
	cases := []struct {
		step, wasted, residual int64
		share, want            float64
	}{
		{20, 19, 0, 0.95, 20},       // nothing left: the whole share
		{20, 19, 2, 0.95, 20.0 / 3}, // copies at the pinned reference stay
		{20, 18, 16, 0.9, 20.0 / 18},
		{20, 18, 30, 0.9, 1},     // residual clamped to the waste: no gain
		{100, 99, 0, 0.999, 100}, // capped
		{10, 0, 0, 0, 1},
	}
	for _, c := range cases {
		got := BoundedSpeedup(c.step, c.wasted, c.residual, c.share)
		if d := got - c.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("BoundedSpeedup(%d, %d, %d, %v) = %v, want %v", c.step, c.wasted, c.residual, c.share, got, c.want)
		}
		if got > Speedup(c.share)+1e-9 {
			t.Errorf("%v above 1/(1-share) = %v", got, Speedup(c.share))
		}
	}
}
