package analyze

import "testing"

type testDetail struct {
	Rate    float64 `detail:"rate"`
	Count   int     `detail:"count"`
	Nanos   int64   `detail:"nanos"`
	Shared  bool    `detail:"shared"`
	Private string  // no tag: not in the map
}

func TestDetailRoundTrip(t *testing.T) {
	in := testDetail{Rate: 2.5, Count: 7, Nanos: 1 << 40, Shared: true, Private: "x"}
	m := DetailMap(in)
	want := map[string]float64{"rate": 2.5, "count": 7, "nanos": 1 << 40, "shared": 1}
	if len(m) != len(want) {
		t.Fatalf("map %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	var out testDetail
	if !DecodeDetail(&Finding{Detail: m}, &out) {
		t.Error("a complete map decoded as incomplete")
	}
	in.Private = ""
	if out != in {
		t.Errorf("decoded %+v, want %+v", out, in)
	}
	var part testDetail
	if DecodeDetail(&Finding{Detail: map[string]float64{"rate": 1}}, &part) || part.Rate != 1 || part.Count != 0 {
		t.Errorf("partial map: %+v", part)
	}
	if DecodeDetail(&Finding{}, &part) {
		t.Error("a finding without detail decoded as complete")
	}
}
