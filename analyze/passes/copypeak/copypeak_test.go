package copypeak_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/copypeak"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), copypeak.Analyzer) }
