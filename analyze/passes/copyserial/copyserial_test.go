package copyserial_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/copyserial"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), copyserial.Analyzer) }
