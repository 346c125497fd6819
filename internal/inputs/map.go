package inputs

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/internal/sysmem"
	"github.com/traceaudit/traceaudit/timeline"
)

// unit is one trace file read and analysed: one report per GPU process.
type unit struct {
	path    string
	reports []*audit.Report
	// multi is set for an export holding several GPU processes.
	multi bool
	// dist is what the trace says about its job; lo and hi its window.
	dist   timeline.Distributed
	lo, hi int64
	err    error
}

// Memory estimates: the peak memory of reading and analysing a trace, per
// byte of file (measured with make bench: about 0.5 for plain Chrome JSON,
// 4 for nsys exports; gzip compresses Kineto JSON about 10 times).
const (
	memPerByteJSON = 1
	memPerByteGzip = 12
	memPerByteNsys = 5
)

// mapAll reads and analyses every path with a bounded pool of workers,
// keeping results in path order.
func mapAll(paths []string, o Options, keep bool) []*unit {
	units := make([]*unit, len(paths))
	workers := o.Workers
	if workers <= 0 {
		workers = poolSize(paths, o.MemoryLimit, runtime.GOMAXPROCS(0))
	}
	workers = min(workers, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				units[i] = analyzeOne(paths[i], o, keep)
				if len(paths) > 1 {
					// The trace's timeline is garbage now: give its memory
					// back before the next one is read, so that a folder
					// costs the memory of the traces in flight, not of all.
					debug.FreeOSMemory()
				}
			}
		}()
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	return units
}

// CPUsPerTrace is the CPUs each trace in flight gets: its reader parses on
// every CPU it is given, and the rest of its work (building the timeline,
// the analysis) is mostly one thread. On 2 CPUs a folder is read one trace
// at a time and costs the memory of one (measured with make bench, 16
// ranks of 60 MB: 3.5 s at 1.7x the largest rank file; two at a time took
// 2.8 s but 2.45x); with more CPUs more traces are read at once, as memory
// allows.
const CPUsPerTrace = 4

// poolSize is how many traces are read at once: one per CPUsPerTrace of
// cpus, at least one, and no more than fit in limit bytes (0: half the
// memory available).
func poolSize(paths []string, limit int64, cpus int) int {
	if limit <= 0 {
		limit = sysmem.Available() / 2
	}
	var largest int64
	for _, p := range paths {
		largest = max(largest, estimate(p))
	}
	n := max(cpus/CPUsPerTrace, 1)
	if largest > 0 && limit > 0 {
		n = min(n, int(limit/largest))
	}
	return max(n, 1)
}

// estimate is the memory reading and analysing path takes, in bytes.
func estimate(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	head := make([]byte, 16)
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	n, _ := f.Read(head)
	f.Close()
	head = head[:n]
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		return st.Size() * memPerByteGzip
	case string(head) == "SQLite format 3\x00":
		return st.Size() * memPerByteNsys
	}
	return st.Size() * memPerByteJSON
}

// analyzeOne reads one trace and analyses each of its GPU processes.
func analyzeOne(path string, o Options, keep bool) *unit {
	u := &unit{path: path}
	tl, err := o.Open(path)
	if err != nil {
		u.err = err
		return u
	}
	u.dist = tl.Dist
	u.lo, u.hi = tl.Span()
	procs := tl.GPUProcesses()
	if len(procs) < 2 {
		r, err := audit.Run(tl, o.Config)
		if err != nil {
			u.err = err
			return u
		}
		if !keep {
			r.Index, r.Timeline = nil, nil
		}
		u.reports = []*audit.Report{r}
		return u
	}
	// One rank per process, ordered by CUDA device.
	u.multi = true
	for rank, p := range procs {
		sub := tl.ForProcess(p.PID)
		r, err := audit.Run(sub, o.Config)
		if err != nil {
			u.err = fmt.Errorf("%s: process %d: %w", path, p.PID, err)
			return u
		}
		r.Index, r.Timeline = nil, nil
		n, dev, pid := rank, p.Devices[0], p.PID
		r.Rank, r.Device, r.PID = &n, &dev, &pid
		ws := len(procs)
		r.WorldSize = &ws
		u.reports = append(u.reports, r)
	}
	return u
}
