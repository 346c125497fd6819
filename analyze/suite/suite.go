// Package suite lists traceaudit's analyzers: the registry is this slice,
// not init() side effects.
package suite

import (
	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/passes/allocchurn"
	"github.com/traceaudit/traceaudit/analyze/passes/commexposed"
	"github.com/traceaudit/traceaudit/analyze/passes/commsmall"
	"github.com/traceaudit/traceaudit/analyze/passes/commwait"
	"github.com/traceaudit/traceaudit/analyze/passes/copypeak"
	"github.com/traceaudit/traceaudit/analyze/passes/copyserial"
	"github.com/traceaudit/traceaudit/analyze/passes/dataloader"
	"github.com/traceaudit/traceaudit/analyze/passes/gpuidle"
	"github.com/traceaudit/traceaudit/analyze/passes/launchbound"
	"github.com/traceaudit/traceaudit/analyze/passes/munmap"
	"github.com/traceaudit/traceaudit/analyze/passes/storageread"
	"github.com/traceaudit/traceaudit/analyze/passes/syncapi"
	"github.com/traceaudit/traceaudit/analyze/passes/syncmemcpy"
)

// Default is every analyzer, in the order of design.md's table.
var Default = []*analyze.Analyzer{
	gpuidle.Analyzer,
	dataloader.Analyzer,
	syncmemcpy.Analyzer,
	munmap.Analyzer,
	storageread.Analyzer,
	copyserial.Analyzer,
	syncapi.Analyzer,
	launchbound.Analyzer,
	allocchurn.Analyzer,
	copypeak.Analyzer,
	commexposed.Analyzer,
	commwait.Analyzer,
	commsmall.Analyzer,
}

// ByID returns the analyzer with the given ID, or nil.
func ByID(id string) *analyze.Analyzer {
	for _, a := range Default {
		if a.ID == id {
			return a
		}
	}
	return nil
}
