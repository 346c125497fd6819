package main

import (
	"runtime/debug"
	"time"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/ingest"
)

// modelInputs are the inputs whose analysis the step model's cost is
// measured on.
var modelInputs = map[string]bool{"chrome-250MB": true, "nsys-2M-rows": true}

// ModelCost is the analysis of one input in this process, its timeline
// read once, with and without the step model: the medians in seconds.
type ModelCost struct {
	Input    string
	WithS    float64
	WithoutS float64
}

// modelCost times the analysis of path with and without the step model,
// runs times each, alternating.
func modelCost(name, path string, runs int) (ModelCost, error) {
	tl, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		return ModelCost{}, err
	}
	// The analyses run under traceaudit's own collector setting (its
	// main's GOGC=400), not benchrun's default: at GOGC=100 the model's
	// allocations add collections of the whole timeline that the binary
	// does not make.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	var with, without []float64
	for range runs {
		for _, skip := range []bool{false, true} {
			cfg := analyze.DefaultConfig()
			cfg.SkipModel = skip
			t0 := time.Now()
			if _, err := audit.RunWith(tl, cfg, suite.Default); err != nil {
				return ModelCost{}, err
			}
			d := time.Since(t0).Seconds()
			if skip {
				without = append(without, d)
			} else {
				with = append(with, d)
			}
		}
	}
	return ModelCost{Input: name, WithS: median(with), WithoutS: median(without)}, nil
}
