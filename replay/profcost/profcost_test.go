package profcost

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	out := "some warning\n{\"torch\": \"2.11.0\", \"ops\": 1000, \"events\": 5836, \"event_ns_rounds\": [1900, 2400.4, 1500, 2100, 1700]}\n"
	c, err := Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if c.EventNS != 1900 || c.Events != 5836 || c.Torch != "2.11.0" || len(c.RoundsNS) != 5 || c.RoundsNS[1] != 2400 {
		t.Errorf("cost %+v", c)
	}
}

func TestParseRefuses(t *testing.T) {
	for out, want := range map[string]string{
		"":                                 "printed nothing",
		"Traceback ...\nValueError: x":     "not JSON",
		`{"error": "cannot import torch"}`: "cannot import torch",
		`{"torch": "2.1", "events": 0, "event_ns_rounds": [10]}`: "no events",
		`{"torch": "2.1", "events": 10, "event_ns_rounds": []}`:  "no events",
	} {
		if _, err := Parse([]byte(out)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", out, err, want)
		}
	}
}

// fakePython writes an executable script that stands in for python.
func fakePython(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMeasureRunsTheProbe(t *testing.T) {
	// The fake checks that it was given the embedded probe and its
	// arguments, then answers as the probe does.
	py := fakePython(t, `[ "$1" = "-c" ] || exit 3
case "$2" in *"torch.profiler.profile"*) ;; *) exit 4;; esac
[ "$3" = "1000" ] && [ "$4" = "5" ] || exit 5
n=$(cat "$0.n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$0.n"
echo "{\"torch\": \"2.11.0\", \"events\": 100, \"event_ns_rounds\": [$((n*1000)), $((n*1000+10)), 1]}"`)
	c, err := Measure(context.Background(), py)
	// Three processes measure 1000, 2000 and 3000 ns (their rounds'
	// medians); Measure gives their median.
	if err != nil || c.EventNS != 2000 || !slices.Equal(c.RoundsNS, []int64{1000, 2000, 3000}) || c.Events != 100 {
		t.Fatalf("cost %+v, %v", c, err)
	}
}

// TestMeasureKeepsANegativeProcess: one process of three that measured
// less than nothing (its unprofiled loops ran slow) is part of the spread,
// not a failed measurement; a median of nothing is.
func TestMeasureKeepsANegativeProcess(t *testing.T) {
	c, err := Parse([]byte(`{"torch": "2.1", "events": 10, "event_ns_rounds": [-5, -3, 2]}`))
	if err != nil || c.EventNS != -3 {
		t.Fatalf("one process at -3 ns: %+v, %v", c, err)
	}
	py := fakePython(t, `n=$(cat "$0.n" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$0.n"
case $n in 1) r="-109, -24, -97";; 2) r="1500, 1600, 1400";; *) r="2100, 2000, 2200";; esac
echo "{\"torch\": \"2.11.0\", \"events\": 100, \"event_ns_rounds\": [$r]}"`)
	c, err = Measure(context.Background(), py)
	if err != nil || c.EventNS != 1500 || !slices.Equal(c.RoundsNS, []int64{-97, 1500, 2100}) {
		t.Fatalf("cost %+v, %v", c, err)
	}
	none := fakePython(t, `echo '{"torch": "2.11.0", "events": 100, "event_ns_rounds": [-10, 0, 5]}'`)
	if _, err := Measure(context.Background(), none); err == nil || !strings.Contains(err.Error(), "nothing measurable") {
		t.Errorf("processes at 0 ns: %v", err)
	}
}

func TestMeasureErrors(t *testing.T) {
	failing := fakePython(t, "echo 'ModuleNotFoundError: No module named torch' >&2; exit 1")
	if _, err := Measure(context.Background(), failing); err == nil || !strings.Contains(err.Error(), "No module named torch") {
		t.Errorf("failing probe: %v", err)
	}
	if _, err := Measure(context.Background(), filepath.Join(t.TempDir(), "no-python")); err == nil {
		t.Error("a missing python measured something")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Measure(ctx, fakePython(t, "sleep 5")); err == nil {
		t.Error("a cancelled measurement succeeded")
	}
}
