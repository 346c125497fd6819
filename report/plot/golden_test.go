package plot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/index"
	"gonum.org/v1/plot/cmpimg"
)

// goldenDelta is the per-pixel colour tolerance of the golden images
// (cmpimg's normalised YIQ distance): enough for anti-aliasing that
// differs between CPU architectures, far too little for a moved bar,
// a new lane or another colour.
const goldenDelta = 0.05

// TestGolden compares the figures of the synthetic input-bound report with
// testdata/*_golden.png. Regenerate them with
//
//	go test ./report/plot -run TestGolden -regen
//
// and look at the new images before committing them.
func TestGolden(t *testing.T) {
	r := inputBound(t)
	after := *r
	after.File = "after.json"
	after.Steps.MedianNS /= 4
	after.Steps.BreakdownNS = index.Breakdown{index.Compute: 20 * ms, index.Copy: 2 * ms, index.Other: 3 * ms}
	cases := []struct {
		name  string
		build func() (*Figure, error)
	}{
		{"timeline", func() (*Figure, error) { return NewTimeline(r) }},
		{"utilization", func() (*Figure, error) { return NewUtilization(r) }},
		{"steps", func() (*Figure, error) { return NewSteps(r) }},
		{"findings", func() (*Figure, error) { return NewFindings(r) }},
		{"steps-diff", func() (*Figure, error) { return NewStepsDiff(r, &after) }},
		{"ranks", func() (*Figure, error) { return NewRanks(twoRanks()) }},
		{"replay", func() (*Figure, error) {
			return NewReplay([]ReplayBar{{"observed", 100 * ms, 100 * ms}, {"pinned", 93 * ms, 90 * ms},
				{"prefetch-workers", 45 * ms, 40 * ms}, {"all", 33 * ms, 30 * ms}})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			cmpimg.CheckPlotApprox(func() {
				png, err := f.PNG()
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join("testdata", c.name+".png"), png, 0o644); err != nil {
					t.Fatal(err)
				}
			}, t, goldenDelta, c.name+".png")
		})
	}
}
