package allocchurn_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/allocchurn"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), allocchurn.Analyzer) }
