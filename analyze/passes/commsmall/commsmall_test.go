package commsmall_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/commsmall"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), commsmall.Analyzer) }
