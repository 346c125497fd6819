package storageread_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/storageread"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), storageread.Analyzer) }
