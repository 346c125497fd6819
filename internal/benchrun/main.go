// Command benchrun is `make bench`: it generates large realistic inputs by
// tiling the project's real H200 traces in time (correlation ids kept
// unique), then runs traceaudit and the Python reference scripts of
// ../shared/bench on them, each as its own process, and reports wall time,
// throughput and peak RSS side by side, with the change from the previous
// run. A 16-rank job folder tiled from the H200 DDP ranks is analysed as a
// folder and against its largest rank alone.
//
//	go run ./internal/benchrun [-out bench/out] [-skip-1gb] [-quick]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Result is one measured command.
type Result struct {
	Name    string  `json:"name"`
	Input   string  `json:"input"`
	Bytes   int64   `json:"bytes"`
	Events  int64   `json:"events"`
	WallS   float64 `json:"wall_s"`
	PeakRSS int64   `json:"peak_rss_bytes"`
	Err     string  `json:"error,omitempty"`
}

func main() {
	out := flag.String("out", "bench/out", "folder for generated inputs and results")
	skip1g := flag.Bool("skip-1gb", false, "skip the 1 GB Chrome trace")
	quick := flag.Bool("quick", false, "small inputs (a smoke test of the harness)")
	shared := flag.String("shared", "../shared", "the shared folder with bench/ and fixtures/")
	flag.Parse()
	if err := run(*out, *shared, *skip1g, *quick); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}

func run(out, shared string, skip1g, quick bool) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	bin := filepath.Join(out, "traceaudit")
	fmt.Fprintln(os.Stderr, "building", bin)
	build := exec.Command("go", "build", "-o", bin, "./cmd/traceaudit")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return err
	}
	chromeSrc := filepath.Join("fixtures", "r0_baseline.pt.trace.json.gz")
	nsysSrc := filepath.Join(shared, "fixtures", "h200", "r0_baseline.nsys.sqlite")
	scale := 1.0
	if quick {
		scale = 0.02
	}
	type input struct {
		name, path string
		kind       string
		n          int
		events     int64
	}
	inputs := []input{
		{name: "chrome-250MB", kind: "chrome", n: int(math.Ceil(250e6 * scale / 4576760))},
		{name: "nsys-2M-rows", kind: "nsys", n: int(math.Ceil(2.0e6 * scale / 7720))},
	}
	if !skip1g {
		inputs = append(inputs, input{name: "chrome-1GB", kind: "chrome", n: int(math.Ceil(1e9 * scale / 4576760))})
	}
	for i := range inputs {
		in := &inputs[i]
		if in.kind == "chrome" {
			in.path = filepath.Join(out, fmt.Sprintf("%s-x%d.json", in.name, in.n))
		} else {
			in.path = filepath.Join(out, fmt.Sprintf("%s-x%d.sqlite", in.name, in.n))
		}
		stamp := in.path + ".events"
		if b, err := os.ReadFile(stamp); err == nil {
			fmt.Sscan(string(b), &in.events)
			continue
		}
		fmt.Fprintf(os.Stderr, "generating %s (%d tiles)\n", in.path, in.n)
		var err error
		if in.kind == "chrome" {
			_, in.events, err = tileChrome(chromeSrc, in.path, in.n)
		} else {
			if _, serr := os.Stat(nsysSrc); serr != nil {
				fmt.Fprintf(os.Stderr, "skipping %s: %s not found\n", in.name, nsysSrc)
				continue
			}
			in.events, err = tileNsys(nsysSrc, in.path, in.n)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", in.name, err)
		}
		os.WriteFile(stamp, []byte(fmt.Sprint(in.events)), 0o644)
	}
	var results []Result
	measure := func(name string, in input, args ...string) {
		fmt.Fprintf(os.Stderr, "running %s on %s\n", name, in.name)
		r := Result{Name: name, Input: in.name, Bytes: sizeOf(in.path), Events: in.events}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = nil, os.Stderr
		t0 := time.Now()
		err := cmd.Run()
		r.WallS = time.Since(t0).Seconds()
		if cmd.ProcessState != nil {
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				r.PeakRSS = ru.Maxrss * 1024
			}
		}
		if err != nil {
			r.Err = err.Error()
		}
		results = append(results, r)
	}
	py := filepath.Join(shared, "bench")
	for _, in := range inputs {
		if sizeOf(in.path) == 0 {
			continue
		}
		measure("traceaudit stats (ingest)", in, bin, "stats", "--format", "json", in.path)
		measure("traceaudit analyze", in, bin, "analyze", "--format", "json", in.path)
		switch {
		case in.kind == "chrome" && in.name == "chrome-250MB":
			measure("python json.load", in, "python3", filepath.Join(py, "py_json_load.py"), in.path)
		case in.kind == "nsys":
			measure("python sqlite3 fetch", in, "python3", filepath.Join(py, "py_fetch_nsys.py"), in.path)
		}
	}
	rs, err := benchRanks(out, bin, quick)
	if err != nil {
		return fmt.Errorf("rank folder: %w", err)
	}
	results = append(results, rs...)
	prevPath := filepath.Join(out, "results.json")
	var prev []Result
	if b, err := os.ReadFile(prevPath); err == nil {
		json.Unmarshal(b, &prev)
	}
	printTable(results, prev)
	b, _ := json.MarshalIndent(results, "", "  ")
	return os.WriteFile(prevPath, b, 0o644)
}

func printTable(rs, prev []Result) {
	old := map[string]Result{}
	for _, p := range prev {
		old[p.Name+"|"+p.Input] = p
	}
	fmt.Printf("%d cores (%s/%s), Go %s\n\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Println("| input | size | events/rows | command | wall | MB/s | events/s | peak RSS | RSS / size | vs previous run |")
	fmt.Println("|---|---:|---:|---|---:|---:|---:|---:|---:|---|")
	for _, r := range rs {
		mb := float64(r.Bytes) / 1e6
		delta := "-"
		if p, ok := old[r.Name+"|"+r.Input]; ok && p.WallS > 0 {
			delta = fmt.Sprintf("wall %+.0f %%, RSS %+.0f %%", (r.WallS/p.WallS-1)*100, (float64(r.PeakRSS)/float64(max(p.PeakRSS, 1))-1)*100)
		}
		status := ""
		if r.Err != "" {
			status = " (failed: " + strings.TrimSpace(r.Err) + ")"
		}
		fmt.Printf("| %s | %.0f MB | %d | %s%s | %.2f s | %.0f | %.0f | %.0f MB | %.2f | %s |\n",
			r.Input, mb, r.Events, r.Name, status, r.WallS, mb/r.WallS, float64(r.Events)/r.WallS,
			float64(r.PeakRSS)/1e6, float64(r.PeakRSS)/float64(max(r.Bytes, 1)), delta)
	}
}
