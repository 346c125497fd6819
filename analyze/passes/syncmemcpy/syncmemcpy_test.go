package syncmemcpy_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/syncmemcpy"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), syncmemcpy.Analyzer) }
