package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Result is one command measured on one input, over several runs.
type Result struct {
	Name   string `json:"name"`
	Input  string `json:"input"`
	Bytes  int64  `json:"bytes"`
	Events int64  `json:"events"`
	// WallS is the median wall time in seconds; MinWallS and MaxWallS the
	// spread; Walls every run's.
	WallS    float64   `json:"wall_s"`
	MinWallS float64   `json:"min_wall_s,omitempty"`
	MaxWallS float64   `json:"max_wall_s,omitempty"`
	Walls    []float64 `json:"walls_s,omitempty"`
	// PeakRSS is the median of the runs' peak resident set sizes, MaxRSS
	// the largest, in bytes.
	PeakRSS int64 `json:"peak_rss_bytes"`
	MaxRSS  int64 `json:"max_rss_bytes,omitempty"`
	// CPUS is the median user+system CPU time in seconds.
	CPUS float64 `json:"cpu_s,omitempty"`
	// Load is the 1-minute load average before the first run and after
	// the last.
	Load [2]float64 `json:"load,omitempty"`
	Err  string     `json:"error,omitempty"`
}

const (
	pyJSONLoad = "python json.load"
	pyFetch    = "python sqlite3 fetch"
)

// meter runs commands and keeps their results in order.
type meter struct {
	runs    int
	results []*Result
	started time.Time
	load    [2]float64 // over the whole benchmark
	// commit is the source measured (see commit); baseline the binary
	// measured alongside, if any.
	commit, baseline string
	// model is the step model's cost on the inputs of modelInputs.
	model []ModelCost
}

func newMeter(runs int) *meter {
	return &meter{runs: max(runs, 1), started: time.Now(), load: [2]float64{loadAvg(), 0}}
}

// measure runs each command m.runs times on in, round robin (so that a
// change in the machine's load hits every command alike).
func (m *meter) measure(in input, cmds []command) {
	rs := make([]*Result, len(cmds))
	rss := make([][]int64, len(cmds))
	cpu := make([][]float64, len(cmds))
	for i, c := range cmds {
		rs[i] = &Result{Name: c.name, Input: in.name, Bytes: sizeOf(in.path), Events: in.events}
		rs[i].Load[0] = loadAvg()
	}
	for r := range m.runs {
		for i, c := range cmds {
			if rs[i].Err != "" {
				continue
			}
			fmt.Fprintf(os.Stderr, "run %d/%d: %s on %s\n", r+1, m.runs, c.name, in.name)
			wall, peak, cpuS, err := runOnce(c.args, !strings.HasPrefix(c.name, "python"))
			if err != nil {
				rs[i].Err = err.Error()
				continue
			}
			rs[i].Walls = append(rs[i].Walls, wall)
			rss[i] = append(rss[i], peak)
			cpu[i] = append(cpu[i], cpuS)
		}
	}
	for i, r := range rs {
		r.Load[1] = loadAvg()
		if len(r.Walls) > 0 {
			r.WallS, r.MinWallS, r.MaxWallS = median(r.Walls), slices.Min(r.Walls), slices.Max(r.Walls)
			r.PeakRSS, r.MaxRSS = medianInt(rss[i]), slices.Max(rss[i])
			r.CPUS = median(cpu[i])
		}
		m.results = append(m.results, r)
	}
	m.load[1] = loadAvg()
}

// runOnce runs args as its own process, output discarded, and returns its
// wall time, peak RSS and CPU time. Exit code 1 is success when
// findingsOK is set (traceaudit's exit code for findings).
//
// The process is started through GNU time where it is installed: Go starts
// children with vfork, and Linux then counts the parent's own peak RSS in
// the child's (ru_maxrss keeps the larger of the two across exec), which
// would make every small figure read as benchrun's size. time forks.
func runOnce(args []string, findingsOK bool) (wall float64, peakRSS int64, cpu float64, err error) {
	var report *os.File
	if _, serr := os.Stat(gnuTime); serr == nil {
		if report, err = os.CreateTemp("", "benchrun-time-*"); err != nil {
			return 0, 0, 0, err
		}
		report.Close()
		defer os.Remove(report.Name())
		args = append([]string{gnuTime, "-q", "-o", report.Name(), "-f", "%M %U %S %x"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = nil, os.Stderr
	t0 := time.Now()
	err = cmd.Run()
	wall = time.Since(t0).Seconds()
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peakRSS = ru.Maxrss * 1024
			cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
	}
	if report != nil {
		b, rerr := os.ReadFile(report.Name())
		var kb int64
		var u, s float64
		if rerr != nil {
			return wall, 0, 0, rerr
		}
		f := strings.Fields(string(b))
		if len(f) < 4 {
			return wall, 0, 0, fmt.Errorf("time: unexpected report %q", b)
		}
		fmt.Sscan(f[0], &kb)
		fmt.Sscan(f[1], &u)
		fmt.Sscan(f[2], &s)
		fmt.Sscan(f[3], &code)
		peakRSS, cpu = kb*1024, u+s
	}
	switch {
	case code == 0:
		err = nil
	case code == 1 && findingsOK:
		err = nil
	case err == nil:
		err = fmt.Errorf("exit status %d", code)
	}
	return wall, peakRSS, cpu, err
}

// gnuTime is GNU time, used to measure children (see runOnce).
const gnuTime = "/usr/bin/time"

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func medianInt(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// loadAvg is the machine's 1-minute load average (-1 when unknown).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	if _, err := fmt.Sscan(strings.Fields(string(b))[0], &l); err != nil {
		return -1
	}
	return l
}

// commit names the source measured: the short commit id, with "+dirty"
// when the work tree has uncommitted changes to tracked files.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	id := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		id += "+dirty"
	}
	return id
}

func loadResults(path string) []Result {
	var prev []Result
	if b, err := os.ReadFile(path); err == nil {
		json.Unmarshal(b, &prev)
	}
	return prev
}

func saveResults(path string, m *meter) error {
	var rs []Result
	for _, r := range m.results {
		rs = append(rs, *r)
	}
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
