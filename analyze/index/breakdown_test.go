package index

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBreakdownJSON pins the analyze contract's breakdown_ns object: one
// member per bucket, named as the buckets are, in bucket order.
func TestBreakdownJSON(t *testing.T) {
	var b Breakdown
	for k := range NumBuckets {
		b[k] = int64(k+1) * 1000
	}
	got, err := json.Marshal(struct {
		B Breakdown  `json:"breakdown_ns"`
		P *Breakdown `json:"p"`
	}{b, &b})
	if err != nil {
		t.Fatal(err)
	}
	const obj = `{"compute":1000,"comm":2000,"copy":3000,"sync":4000,"os":5000,"data":6000,"other":7000}`
	if want := `{"breakdown_ns":` + obj + `,"p":` + obj + `}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var names []string
	for k := range NumBuckets {
		names = append(names, `"`+k.String()+`":`)
	}
	for i, n := range names {
		if !strings.Contains(obj, n) || (i > 0 && strings.Index(obj, n) < strings.Index(obj, names[i-1])) {
			t.Errorf("bucket %s out of place in %s", n, obj)
		}
	}

	var back Breakdown
	if err := json.Unmarshal([]byte(obj), &back); err != nil || back != b {
		t.Errorf("round trip: %v, %v; want %v", back, err, b)
	}
	if b.Total() != 28000 {
		t.Errorf("Total %d, want 28000", b.Total())
	}
}

// TestBreakdownUnmarshal: absent buckets keep their value, unknown
// members are ignored, null changes nothing, and a wrong type is an error
// naming the object.
func TestBreakdownUnmarshal(t *testing.T) {
	b := Breakdown{Compute: 5, Other: 9}
	if err := json.Unmarshal([]byte(`{"copy":7,"gpu":1}`), &b); err != nil {
		t.Fatal(err)
	}
	if want := (Breakdown{Compute: 5, Copy: 7, Other: 9}); b != want {
		t.Errorf("got %v, want %v", b, want)
	}
	if err := json.Unmarshal([]byte(`null`), &b); err != nil || b != (Breakdown{Compute: 5, Copy: 7, Other: 9}) {
		t.Errorf("null: %v, %v", b, err)
	}
	err := json.Unmarshal([]byte(`{"compute":"1"}`), &b)
	if err == nil || !strings.HasPrefix(err.Error(), "breakdown_ns: ") {
		t.Errorf("a string for compute: %v", err)
	}
}
