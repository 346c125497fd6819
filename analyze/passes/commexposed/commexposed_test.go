package commexposed_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/commexposed"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), commexposed.Analyzer) }
