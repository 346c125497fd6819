package chrome

import (
	"testing"

	"github.com/traceaudit/traceaudit/timeline"
)

func TestParseMicros(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		frac bool
	}{
		{"0", 0, false},
		{"-0", 0, false},
		{"1", 1000, false},
		{"213.512", 213512, true},
		{"5081063989749.483", 5081063989749483, true},
		{"1610366662254362", 1610366662254362000, false},
		{"1695835542514261", 1695835542514261000, false},
		{"4458676522690.655", 4458676522690655, true},
		{"0.001", 1, true},
		{"0.0005", 1, true},  // half a nanosecond rounds away from zero
		{"0.00049", 0, true}, // less than half rounds down
		{"-0.0005", -1, true},
		{"0.0015", 2, true},
		{"1.2345", 1235, true},
		{"1.2344999", 1234, true},
		{"0.000999", 1, true},
		{"1e3", 1000000, true},
		{"1E3", 1000000, true},
		{"1e+3", 1000000, true},
		{"1.5e-3", 2, true}, // 1.5 ns rounds to 2
		{"2.5e-4", 0, true},
		{"1e-3", 1, true},
		{"1e-400", 0, true},
		{"0e999999999999", 0, true},
		{"5.081063989749483e12", 5081063989749483, true},
		{"-12.5", -12500, true},
		{"00012", 12000, false}, // leading zeros: not strict JSON, accepted
		{"4611686018427387.904", timeline.MaxTime, true},
		{"1.00000000000000000000000000000000000001", 1000, true},
	}
	for _, c := range cases {
		got, frac, err := parseMicros([]byte(c.in))
		if err != nil || got != c.want || frac != c.frac {
			t.Errorf("parseMicros(%q) = %d, %v, %v; want %d, %v", c.in, got, frac, err, c.want, c.frac)
		}
	}
	for _, bad := range []string{"", "-", ".5", "1.", "1e", "1e+", "+1", "NaN", "Infinity", "-Infinity", "1x", "0x10", "1.2.3", " 1", "1 ", "--1", "1e5e5"} {
		if got, _, err := parseMicros([]byte(bad)); err != errSyntax {
			t.Errorf("parseMicros(%q) = %d, %v; want a syntax error", bad, got, err)
		}
	}
	for _, big := range []string{"4611686018427387.905", "1e16", "9223372036854775807", "99999999999999999999999", "-1e16", "1e999999999999999999999"} {
		if got, _, err := parseMicros([]byte(big)); err != errRange {
			t.Errorf("parseMicros(%q) = %d, %v; want out of range", big, got, err)
		}
	}
}

func TestParseInt(t *testing.T) {
	ok := map[string]int64{"0": 0, "7": 7, "-1": -1, "1890023232": 1890023232, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63}
	for in, want := range ok {
		if got, good := parseInt([]byte(in)); !good || got != want {
			t.Errorf("parseInt(%q) = %d, %v; want %d", in, got, good, want)
		}
	}
	for _, bad := range []string{"", "-", "1.0", "1e3", "9223372036854775808", "-9223372036854775809", "x", " 1"} {
		if got, good := parseInt([]byte(bad)); good {
			t.Errorf("parseInt(%q) = %d, want failure", bad, got)
		}
	}
}

func TestParseIDString(t *testing.T) {
	ok := map[string]int64{
		"stream 7": 7, "stream 7 ": 7, " 12 ": 12, "1890023232": 1890023232, "-1": -1,
		"stream 7 (sync)": 7, "GPU 0": 0, "stream  20": 20,
	}
	for in, want := range ok {
		if got, good := parseIDString([]byte(in)); !good || got != want {
			t.Errorf("parseIDString(%q) = %d, %v; want %d", in, got, good, want)
		}
	}
	for _, bad := range []string{"", "Spans", "Traces", "PyTorch Profiler", "stream", "stream x", "stream 7x", "7 stream", "stream 7 junk", "stream 7(", "1.5"} {
		if got, good := parseIDString([]byte(bad)); good {
			t.Errorf("parseIDString(%q) = %d, want failure", bad, got)
		}
	}
}
