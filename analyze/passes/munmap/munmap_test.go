package munmap_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/munmap"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), munmap.Analyzer) }
