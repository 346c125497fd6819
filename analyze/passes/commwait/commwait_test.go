package commwait_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/commwait"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), commwait.Analyzer) }
