package gpuidle_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/gpuidle"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), gpuidle.Analyzer) }
