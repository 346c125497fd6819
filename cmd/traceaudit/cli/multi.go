package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/driver"
	"github.com/traceaudit/traceaudit/internal/progress"
	"github.com/traceaudit/traceaudit/report"
	"github.com/traceaudit/traceaudit/timeline"
)

// lockedWriter serialises writes from the workers that read traces.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// analyzeInputs reads and analyses the traces args name (files or
// folders) as one trace, one job or a batch (driver). One trace
// shows its reading progress; several show how many are done.
func analyzeInputs(ios *IO, args []string, cfg *analyze.Config, forceJob, keep bool) (*driver.Result, error) {
	in, err := driver.Expand(args)
	if err != nil {
		return nil, err
	}
	paths := in.Files
	for _, s := range in.Skipped {
		fmt.Fprintf(ios.Err, "traceaudit: %s: skipped: its export %s.sqlite is read\n", s, strings.TrimSuffix(filepath.Base(s), filepath.Ext(s)))
	}
	// The command renders the result and exits: the memory limit of a run
	// over several traces holds while it renders too.
	o := driver.Options{Config: cfg, Job: forceJob, KeepTimeline: keep, KeepMemoryLimit: ios.OneShot}
	if len(paths) == 1 {
		o.Open = func(p string) (*timeline.Timeline, error) { return load(ios, p) }
		return driver.AnalyzeInputs(in, o)
	}
	errw := &lockedWriter{w: ios.Err}
	bar := progress.New(errw, fmt.Sprintf("reading %d traces", len(paths)), ios.ErrTTY)
	defer bar.Done()
	var mu sync.Mutex
	done := int64(0)
	bar.Update(0, int64(len(paths)))
	// Each trace is read as load reads one (standard input, .nsys-rep
	// exports, warnings), without a progress line of its own.
	quiet := *ios // standard input, the interrupt: as the command's
	quiet.Err, quiet.ErrTTY = errw, false
	o.Open = func(p string) (*timeline.Timeline, error) {
		tl, err := load(&quiet, p)
		mu.Lock()
		done++
		bar.Update(done, int64(len(paths)))
		mu.Unlock()
		return tl, err
	}
	return driver.AnalyzeInputs(in, o)
}

// docOf is the document to render for an analysis, and its worst finding.
func docOf(res *driver.Result) (*report.Document, analyze.Severity) {
	switch res.Kind {
	case driver.KindJob:
		return report.ForJob(res.Job), report.MaxJobSeverity(res.Job)
	case driver.KindBatch:
		worst := report.MaxSeverity(res.Batch.Files...)
		for _, j := range res.Batch.Jobs {
			worst = max(worst, report.MaxJobSeverity(j))
		}
		return report.ForBatch(res.Batch), worst
	}
	return report.ForAnalysis(res.Single), report.MaxSeverity(res.Single)
}
