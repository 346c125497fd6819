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

type EmbeddedDetail struct {
	Calls float64 `detail:"calls"`
}

type testOuter struct {
	EmbeddedDetail
	MeanNS int64 `detail:"mean_ns"`
}

// TestDetailEmbedded: an embedded struct's fields are the outer's, both
// ways (an analyzer's Detail embeds its typed fix).
func TestDetailEmbedded(t *testing.T) {
	m := DetailMap(testOuter{EmbeddedDetail{Calls: 1.5}, 40})
	if len(m) != 2 || m["calls"] != 1.5 || m["mean_ns"] != 40 {
		t.Fatalf("map %v", m)
	}
	var out testOuter
	if !DecodeDetail(&Finding{Detail: m}, &out) || out.Calls != 1.5 || out.MeanNS != 40 {
		t.Errorf("decoded %+v", out)
	}
	var in EmbeddedDetail
	if !DecodeDetail(&Finding{Detail: m}, &in) || in.Calls != 1.5 {
		t.Errorf("inner alone decoded %+v", in)
	}
	if DecodeDetail(&Finding{Detail: map[string]float64{"mean_ns": 1}}, &out) {
		t.Error("a map without the embedded keys decoded as complete")
	}
}
