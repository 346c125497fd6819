package launchbound_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/launchbound"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), launchbound.Analyzer) }
