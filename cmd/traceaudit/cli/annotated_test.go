package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

type chromeEvent struct {
	Name string          `json:"name"`
	Ph   string          `json:"ph"`
	PID  int64           `json:"pid"`
	TID  int64           `json:"tid"`
	TS   json.Number     `json:"ts"`
	Dur  json.Number     `json:"dur"`
	Args json.RawMessage `json:"args"`
}

// ns converts a microsecond number with up to three decimals back to
// nanoseconds, exactly.
func ns(t *testing.T, n json.Number) int64 {
	t.Helper()
	s := string(n)
	if s == "" {
		return 0
	}
	whole, frac, _ := strings.Cut(s, ".")
	frac = (frac + "000")[:3]
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad time %q", s)
	}
	return w*1000 + f
}

// TestAnnotatedTrace checks annotated.json of real traces: a Chrome trace
// whose slices nest perfectly on every thread (what Perfetto requires),
// the steady steps on their own thread, one thread per finding holding
// its evidence, and the trace's events inside the steady window.
func TestAnnotatedTrace(t *testing.T) {
	files := []string{testfix.Project("r0_baseline.pt.trace.json.gz"), testfix.Project("b0_pageable_sync.nsys.sqlite"), testfix.Project("m0_munmap.nsys.sqlite")}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "audit")
			if _, errOut, code := run(t, "analyze", "--out", out, path); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var rep struct {
				Steps struct {
					PerStep []struct {
						Name     string `json:"name"`
						StartNS  int64  `json:"start_ns"`
						EndNS    int64  `json:"end_ns"`
						Startup  bool   `json:"startup"`
						Teardown bool   `json:"teardown"`
					} `json:"per_step"`
				} `json:"steps"`
				Findings []struct {
					ID       string `json:"id"`
					Severity string `json:"severity"`
					Evidence []struct {
						StartNS int64 `json:"start_ns"`
						EndNS   int64 `json:"end_ns"`
					} `json:"evidence"`
				} `json:"findings"`
			}
			b, _ := os.ReadFile(filepath.Join(out, "report.json"))
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			var tr struct {
				OtherData struct {
					OriginNS int64 `json:"origin_ns"`
				} `json:"otherData"`
				TraceEvents []chromeEvent `json:"traceEvents"`
			}
			b, _ = os.ReadFile(filepath.Join(out, "annotated.json"))
			if err := json.Unmarshal(b, &tr); err != nil {
				t.Fatalf("annotated.json: %v", err)
			}
			threads := map[[2]int64]string{}
			slices := map[[2]int64][][2]int64{}
			for _, e := range tr.TraceEvents {
				k := [2]int64{e.PID, e.TID}
				switch e.Ph {
				case "M":
					if e.Name == "thread_name" {
						var a struct{ Name string }
						json.Unmarshal(e.Args, &a)
						threads[k] = a.Name
					}
				case "X":
					s := ns(t, e.TS)
					slices[k] = append(slices[k], [2]int64{s, s + ns(t, e.Dur)})
				case "i":
				default:
					t.Errorf("unexpected phase %q", e.Ph)
				}
			}
			byName := map[string][2]int64{}
			for k, n := range threads {
				byName[n] = k
			}
			for k, ss := range slices {
				if _, ok := threads[k]; !ok {
					t.Errorf("thread %v has no name", k)
				}
				if err := nested(ss); err != nil {
					t.Errorf("thread %q: %v", threads[k], err)
				}
			}
			for _, f := range rep.Findings {
				k, ok := byName[fmt.Sprintf("finding %s (%s)", f.ID, f.Severity)]
				if !ok {
					t.Errorf("no thread for finding %s", f.ID)
					continue
				}
				n := len(slices[k])
				for ek, name := range threads { // evidence moved to overlap lanes
					if ek[0] == k[0] && strings.HasPrefix(name, fmt.Sprintf("finding %s (%s) (overlapping", f.ID, f.Severity)) {
						n += len(slices[ek])
					}
				}
				if n != len(f.Evidence) {
					t.Errorf("finding %s: %d slices, %d evidence ranges", f.ID, n, len(f.Evidence))
				}
			}
			// Steps: the steady ones at least, and the trace's events
			// overlap the steady window.
			steps, ok := byName["steps"]
			if !ok {
				t.Fatal("no steps thread")
			}
			lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
			steady := 0
			for _, s := range rep.Steps.PerStep {
				if !s.Startup && !s.Teardown {
					steady++
					lo, hi = min(lo, s.StartNS), max(hi, s.EndNS)
				}
			}
			if len(slices[steps]) < steady {
				t.Errorf("%d step slices, %d steady steps", len(slices[steps]), steady)
			}
			origin := tr.OtherData.OriginNS
			var events int
			for k, ss := range slices {
				if k[0] == steps[0] {
					continue
				}
				for _, s := range ss {
					if s[1]+origin < lo || s[0]+origin > hi {
						t.Errorf("thread %q: slice %v outside the steady window [%d, %d]", threads[k], s, lo-origin, hi-origin)
						break
					}
				}
				events += len(ss)
			}
			if events < 10 {
				t.Errorf("only %d events of the trace", events)
			}
		})
	}
}

// nested reports the first pair of slices that overlap without nesting.
func nested(ss [][2]int64) error {
	sort.SliceStable(ss, func(i, j int) bool {
		if ss[i][0] != ss[j][0] {
			return ss[i][0] < ss[j][0]
		}
		return ss[i][1] > ss[j][1]
	})
	var stack [][2]int64
	for _, s := range ss {
		for len(stack) > 0 && stack[len(stack)-1][1] <= s[0] {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && s[1] > stack[len(stack)-1][1] {
			return fmt.Errorf("%v overlaps %v without nesting", s, stack[len(stack)-1])
		}
		stack = append(stack, s)
	}
	return nil
}
