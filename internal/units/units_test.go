package units

import (
	"fmt"
	"testing"
)

func TestTopCounts(t *testing.T) {
	item := func(k string, n int) string { return fmt.Sprintf("%s=%d", k, n) }
	m := map[string]int{"b": 3, "a": 3, "c": 9, "d": 1}
	cases := []struct {
		n    int
		want string
	}{
		{2, "c=9, a=3, and 2 more"},
		{3, "c=9, a=3, b=3, and 1 more"},
		{4, "c=9, a=3, b=3, d=1"},
		{9, "c=9, a=3, b=3, d=1"},
	}
	for _, c := range cases {
		if got := TopCounts(m, c.n, item); got != c.want {
			t.Errorf("n=%d: %q, want %q", c.n, got, c.want)
		}
	}
	if got := TopCounts(nil, 3, item); got != "" {
		t.Errorf("no counts: %q", got)
	}
}
