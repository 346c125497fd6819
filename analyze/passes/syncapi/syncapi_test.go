package syncapi_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/syncapi"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), syncapi.Analyzer) }
