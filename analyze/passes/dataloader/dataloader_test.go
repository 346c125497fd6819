package dataloader_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze/analyzetest"
	"github.com/traceaudit/traceaudit/analyze/passes/dataloader"
)

func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), dataloader.Analyzer) }
