package report

import "testing"

func TestLanes(t *testing.T) {
	var l lanes
	// [0,10) holds [2,5); [4,12) overlaps [0,10) without nesting: lane 1;
	// [5,6) starts after [2,5) ended, inside [0,10): lane 0; [11,13)
	// starts after [0,10) ended: lane 0, and [11,12) nests in it; [12,20)
	// outlives [11,13): lane 1, where [4,12) has just ended.
	for _, c := range []struct {
		s, e int64
		want int
	}{{0, 10, 0}, {2, 5, 0}, {4, 12, 1}, {5, 6, 0}, {11, 13, 0}, {11, 12, 0}, {12, 20, 1}} {
		if got := l.place(c.s, c.e); got != c.want {
			t.Errorf("[%d,%d): lane %d, want %d", c.s, c.e, got, c.want)
		}
	}
	if micros(1234567) != "1234.567" || micros(5) != "0.005" || micros(-1500) != "-1.500" {
		t.Errorf("micros %s %s %s", micros(1234567), micros(5), micros(-1500))
	}
}
