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
		if !s.Startup && !s.Teardown {
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
