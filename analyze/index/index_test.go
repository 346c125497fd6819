package index_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/timeline/timelinetext"
)

// TestSteps checks the step rules (design.md, "Steps and steady state") on
// the text timelines of testdata/steps_*.txtar: each file's steps section
// is what the index must find, one line per step
//
//	source: repeated range "get batch"
//	main: host/1/1
//	step START +DURATION "NAME" [startup|teardown]
//
// with the steady steps being the others. An optional split section gives
// each step's two-clock split, one line per step:
//
//	compute 6ms copy 1ms sync 0 os 0 data 2ms other 1ms
//
// and an optional steady section the steady state's figures: the median
// and mean step, the time cut before the first step for waits on work
// queued before the window, the GPU pacing, whether a window step was
// narrowed to the loop, and why the window is not steady (up to the advice):
//
//	median 566.5ms mean 579ms
//	pre-window 20ms
//	gpu-paced 50%
//	loop only
//	not-steady: the window holds no repeated step with GPU work (...)
func TestSteps(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(analyzetest.TestData(), "steps_*.txtar"))
	if len(files) == 0 {
		t.Fatal("no testdata/steps_*.txtar")
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(strings.TrimPrefix(name, "steps_"), func(t *testing.T) {
			c, err := analyzetest.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := c.Sections["steps"]
			if !ok {
				t.Fatalf("%s: no -- steps -- section", name)
			}
			ix := index.New(c.Timeline, c.Config)
			if got := renderSteps(ix); got != want {
				t.Errorf("%s:%d: steps:\n%s\nwant:\n%s", filepath.Base(path), c.Lines["steps"], got, want)
			}
			if want, ok := c.Sections["steady"]; ok {
				if got := renderSteady(ix); got != want {
					t.Errorf("%s:%d: steady:\n%s\nwant:\n%s", filepath.Base(path), c.Lines["steady"], got, want)
				}
			}
			if want, ok := c.Sections["split"]; ok {
				if got := renderSplit(ix); got != want {
					t.Errorf("%s:%d: split:\n%s\nwant:\n%s", filepath.Base(path), c.Lines["split"], got, want)
				}
			}
			checkSteady(t, ix)
		})
	}
}

// renderSteps writes what the index found in the steps section's form.
func renderSteps(ix *index.Index) string {
	var b strings.Builder
	fmt.Fprintf(&b, "source: %s\n", ix.Source)
	if ix.HasMain {
		t := ix.TL.Tracks[ix.Main]
		fmt.Fprintf(&b, "main: host/%d/%d\n", t.PID, t.TID)
	} else {
		b.WriteString("main: none\n")
	}
	for _, s := range ix.Steps {
		fmt.Fprintf(&b, "step %s +%s %s", timelinetext.FormatTime(s.Start), timelinetext.FormatTime(s.Dur()), strconv.Quote(s.Name))
		if s.Startup {
			b.WriteString(" startup")
		}
		if s.Teardown {
			b.WriteString(" teardown")
		}
		if s.Paused {
			b.WriteString(" paused")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// checkSteady checks that the steady state is the steps less the excluded
// ones, with the sums and sets that analyzers read.
func checkSteady(t *testing.T, ix *index.Index) {
	t.Helper()
	var steady []index.Step
	var ns int64
	for _, s := range ix.Steps {
		if !s.Startup && !s.Teardown && !s.Paused {
			steady = append(steady, s)
			ns += s.Dur()
		}
	}
	if len(steady) != len(ix.Steady) {
		t.Fatalf("%d steady steps, want %d", len(ix.Steady), len(steady))
	}
	for i := range steady {
		if steady[i].Start != ix.Steady[i].Start || steady[i].End != ix.Steady[i].End {
			t.Errorf("steady step %d: [%d, %d), want [%d, %d)", i, ix.Steady[i].Start, ix.Steady[i].End, steady[i].Start, steady[i].End)
		}
	}
	if ix.SteadyNS != ns || ix.SteadySet.Len() != ns {
		t.Errorf("SteadyNS %d, SteadySet %d, want %d", ix.SteadyNS, ix.SteadySet.Len(), ns)
	}
	if (ix.Startup != nil) != slices.ContainsFunc(ix.Steps, func(s index.Step) bool { return s.Startup }) ||
		(ix.Teardown != nil) != slices.ContainsFunc(ix.Steps, func(s index.Step) bool { return s.Teardown }) {
		t.Errorf("Startup %v / Teardown %v disagree with the steps' flags", ix.Startup, ix.Teardown)
	}
	for _, s := range ix.Steady {
		if s.Breakdown.Total() != s.Dur() {
			t.Errorf("step at %d: breakdown %v sums to %d, want %d", s.Start, s.Breakdown, s.Breakdown.Total(), s.Dur())
		}
	}
}

// renderSteady writes the steady section.
func renderSteady(ix *index.Index) string {
	var b strings.Builder
	fmt.Fprintf(&b, "median %s mean %s\n", timelinetext.FormatTime(ix.MedianStepNS()), timelinetext.FormatTime(ix.MeanStepNS()))
	if ix.PreWindowNS > 0 {
		fmt.Fprintf(&b, "pre-window %s\n", timelinetext.FormatTime(ix.PreWindowNS))
	}
	if ix.GPULag > 0 {
		fmt.Fprintf(&b, "gpu-paced %.0f%%\n", 100*ix.GPULag)
	}
	if ix.LoopOnly {
		b.WriteString("loop only\n")
	}
	if ix.PausedSteps > 0 {
		fmt.Fprintf(&b, "paused %d\n", ix.PausedSteps)
	}
	if ix.NotSteady != "" {
		why, _, _ := strings.Cut(ix.NotSteady, ";")
		fmt.Fprintf(&b, "not-steady: %s\n", why)
	}
	return b.String()
}

// renderSplit writes each step's two-clock split.
func renderSplit(ix *index.Index) string {
	var b strings.Builder
	for _, s := range ix.Steps {
		for k := index.Bucket(0); k < index.NumBuckets; k++ {
			if k > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s %s", k, timelinetext.FormatTime(s.Breakdown[k]))
		}
		b.WriteString("\n")
	}
	return b.String()
}
