package job

import "github.com/traceaudit/traceaudit/analyze/audit"

// Batch is the document of unrelated traces and jobs read together (a
// folder of them, or several arguments): each trace analysed alone, each
// job as its ranks. Fields may be added, never renamed.
type Batch struct {
	// Files are the analyses of the single-process traces that could be
	// read, in argument order.
	Files []*audit.Analysis `json:"files"`
	// Jobs are the jobs among the inputs: each multi-process export, and
	// each set of traces that are the ranks of one job.
	Jobs []*Analysis `json:"jobs"`
}
