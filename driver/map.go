package driver

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/internal/sysmem"
	"github.com/traceaudit/traceaudit/timeline"
)

// unit is one trace file read and analysed: one report per GPU process.
type unit struct {
	path    string
	reports []*audit.Analysis
	// multi is set for an export holding several GPU processes.
	multi bool
	// dist is what the trace says about its job; lo and hi its window.
	dist   timeline.Distributed
	lo, hi int64
	err    error
}

// Memory estimates: the peak memory of reading and analysing a trace, per
// byte of file (measured with make bench: 0.45 to 0.95 for plain Chrome
// JSON, the larger for ranks of 60 MB; 4 for nsys exports; gzip compresses
// Kineto JSON about 10 times).
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
	if len(paths) > 1 {
		restore := boundMemory(int64(workers) * largestEstimate(paths))
		if !o.KeepMemoryLimit {
			defer restore()
		}
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				units[i] = analyzeOne(paths[i], o, keep)
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

// Headroom is the soft memory limit of several traces' analysis over the
// estimated peak of the traces in flight: the garbage collector runs at
// least every 60 % of that peak of allocation. MinLimit is its floor, for
// small traces whose peak the runtime's own memory outweighs.
const (
	Headroom = 1.6
	MinLimit = 64 << 20
)

// boundMemory keeps the memory of a run over several traces near the
// traces in flight, not all of them: it lowers the runtime's soft memory
// limit to Headroom times peak bytes (at least MinLimit) and returns the
// function that restores it (Options.KeepMemoryLimit: never, so that the
// reports are rendered under it too). A limit the user set (GOMEMLIMIT) is
// kept.
//
// A trace's memory is garbage once it is analysed; under the limit the
// next trace reuses it. Giving it back to the system after each trace
// (debug.FreeOSMemory) costs more: measured with make bench on 16 ranks of
// 60 MB, 3.4 to 4.6 s and 1.2 to 1.6 s of system time faulting the pages
// in again, against 2.2 to 3.0 s under the limit, at 1.7x and 1.9x the
// largest rank file.
func boundMemory(peak int64) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" || peak <= 0 {
		return func() {}
	}
	prev := debug.SetMemoryLimit(-1)
	debug.SetMemoryLimit(min(prev, max(int64(float64(peak)*Headroom), MinLimit)))
	return func() { debug.SetMemoryLimit(prev) }
}

// CPUsPerTrace is the CPUs each trace in flight gets: its reader parses on
// every CPU it is given, and the rest of its work (building the timeline,
// the analysis) is mostly one thread. On 2 CPUs a folder is read one trace
// at a time and costs the memory of one (measured with make bench, 16
// ranks of 60 MB: two at a time took a fifth less time but 2.45x the
// largest rank file); with more CPUs more traces are read at once, as
// memory allows.
const CPUsPerTrace = 4

// poolSize is how many traces are read at once: one per CPUsPerTrace of
// cpus, at least one, and no more than fit in limit bytes (0: half the
// memory available).
func poolSize(paths []string, limit int64, cpus int) int {
	if limit <= 0 {
		limit = sysmem.Available() / 2
	}
	largest := largestEstimate(paths)
	n := max(cpus/CPUsPerTrace, 1)
	if largest > 0 && limit > 0 {
		n = min(n, int(limit/largest))
	}
	return max(n, 1)
}

// largestEstimate is the largest estimate of paths.
func largestEstimate(paths []string) int64 {
	var largest int64
	for _, p := range paths {
		largest = max(largest, estimate(p))
	}
	return largest
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
		r, err := audit.RunWith(tl, o.Config, suite.Default)
		if err != nil {
			u.err = err
			return u
		}
		if !keep {
			r.Index, r.Timeline = nil, nil
		}
		u.reports = []*audit.Analysis{r}
		return u
	}
	// One rank per process, ordered by CUDA device.
	u.multi = true
	for rank, p := range procs {
		sub := tl.ForProcess(p.PID)
		r, err := audit.RunWith(sub, o.Config, suite.Default)
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
