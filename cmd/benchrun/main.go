// Command benchrun is `make bench`: it generates large realistic inputs by
// tiling the project's real H200 traces in time (correlation ids kept
// unique), then runs traceaudit and the Python reference scripts of
// ../shared/bench on them, each as its own process, several times, and
// reports the median, min and max wall time and peak RSS side by side, with
// the ratios the performance goals are stated in, the machine's load and
// the commit measured. A 16-rank job folder tiled from the H200 DDP ranks
// is analysed as a folder and against its largest rank alone.
//
//	go run ./cmd/benchrun [-out bench/out] [-runs 5] [-skip-1gb] [-only REGEXP] [-baseline BIN] [-quick]
//
// -baseline names a traceaudit binary built from another commit: its
// stats and analyze are measured in the same rounds, for a before/after
// comparison under the same load.
package main

import (
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// input is one generated benchmark input.
type input struct {
	name   string
	kind   string // "chrome", "chrome-gz" or "nsys"
	tiles  int
	path   string
	events int64 // events (Chrome) or activity rows (nsys) it holds
}

// command is one measured command line on an input.
type command struct {
	name string
	args []string
}

func main() {
	out := flag.String("out", "bench/out", "folder for generated inputs and results")
	runs := flag.Int("runs", 5, "runs of each command (the table shows their median, min and max)")
	skip1g := flag.Bool("skip-1gb", false, "skip the 1 GB Chrome trace")
	only := flag.String("only", "", "run only the inputs whose name matches this regular expression")
	quick := flag.Bool("quick", false, "small inputs (a smoke test of the harness)")
	shared := flag.String("shared", "../shared", "the shared folder with bench/ and fixtures/")
	baseline := flag.String("baseline", "", "a traceaudit binary of another commit to measure alongside")
	flag.Parse()
	var re *regexp.Regexp
	if *only != "" {
		var err error
		if re, err = regexp.Compile(*only); err != nil {
			fmt.Fprintln(os.Stderr, "benchrun: -only:", err)
			os.Exit(2)
		}
	}
	if err := run(*out, *shared, *baseline, *runs, *skip1g, *quick, re); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}

func run(out, shared, baseline string, runs int, skip1g, quick bool, only *regexp.Regexp) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	bin, err := filepath.Abs(filepath.Join(out, "traceaudit"))
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "building", bin)
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/traceaudit")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return err
	}
	measured := commit()
	inputs, err := prepare(out, shared, bin, skip1g, quick, only)
	if err != nil {
		return err
	}
	py := filepath.Join(shared, "bench")
	python := pythonPath()
	m := newMeter(runs)
	m.commit, m.baseline = measured, baseline
	for _, in := range inputs {
		cmds := []command{
			{"traceaudit stats (ingest)", []string{bin, "stats", "--format", "json", in.path}},
			{"traceaudit analyze", []string{bin, "analyze", "--format", "json", in.path}},
		}
		if baseline != "" {
			cmds = append(cmds,
				command{"baseline stats (ingest)", []string{baseline, "stats", "--format", "json", in.path}},
				command{"baseline analyze", []string{baseline, "analyze", "--format", "json", in.path}})
		}
		if in.kind == "rank-json" {
			files, err := rankFiles(in.path)
			if err != nil {
				return err
			}
			cmds = []command{{"traceaudit job", append([]string{bin, "job", "--format", "json"}, files...)}}
			if baseline != "" {
				cmds = append(cmds, command{"baseline job", append([]string{baseline, "job", "--format", "json"}, files...)})
			}
		}
		if in.kind == "chrome-ranks" || in.name == rankLargest {
			// stats reads one file; the folder is a job to analyze
			cmds = slices.DeleteFunc(cmds, func(c command) bool { return strings.HasSuffix(c.name, "stats (ingest)") })
		}
		switch {
		case in.kind == "chrome" && in.name == "chrome-250MB":
			cmds = append(cmds, command{pyJSONLoad, []string{python, filepath.Join(py, "py_json_load.py"), in.path}})
		case in.kind == "nsys":
			cmds = append(cmds, command{pyFetch, []string{python, filepath.Join(py, "py_fetch_nsys.py"), in.path}})
		}
		m.measure(in, cmds)
		if modelInputs[in.name] {
			c, err := modelCost(in.name, in.path, runs)
			if err != nil {
				return fmt.Errorf("%s: the step model's cost: %w", in.name, err)
			}
			m.model = append(m.model, c)
		}
	}
	prevPath := filepath.Join(out, "results.json")
	prev := loadResults(prevPath)
	report(os.Stdout, m, prev)
	return saveResults(prevPath, m)
}

// prepare generates the inputs that are missing and returns those to run.
func prepare(out, shared, bin string, skip1g, quick bool, only *regexp.Regexp) ([]input, error) {
	chromeSrc := filepath.Join("fixtures", "r0_baseline.pt.trace.json.gz")
	nsysSrc := filepath.Join(shared, "fixtures", "h200", "r0_baseline.nsys.sqlite")
	scale := 1.0
	if quick {
		scale = 0.02
	}
	tiles := func(bytes, per float64) int { return int(math.Ceil(bytes * scale / per)) }
	inputs := []input{
		{name: "chrome-250MB", kind: "chrome", tiles: tiles(250e6, 4576760)},
		{name: "chrome-250MB.gz", kind: "chrome-gz", tiles: tiles(250e6, 4576760)},
		{name: "nsys-2M-rows", kind: "nsys", tiles: tiles(2.0e6, 7720)},
	}
	if !skip1g {
		inputs = append(inputs, input{name: "chrome-1GB", kind: "chrome", tiles: tiles(1e9, 4576760)})
	}
	var keep []input
	for _, in := range inputs {
		if only != nil && !only.MatchString(in.name) {
			continue
		}
		switch in.kind {
		case "chrome":
			in.path = filepath.Join(out, fmt.Sprintf("%s-x%d.json", in.name, in.tiles))
		case "chrome-gz":
			in.path = filepath.Join(out, fmt.Sprintf("chrome-250MB-x%d.json.gz", in.tiles))
		default:
			in.path = filepath.Join(out, fmt.Sprintf("%s-x%d.sqlite", in.name, in.tiles))
		}
		stamp := in.path + ".events"
		if b, err := os.ReadFile(stamp); err == nil {
			fmt.Sscan(string(b), &in.events)
			keep = append(keep, in)
			continue
		}
		fmt.Fprintf(os.Stderr, "generating %s (%d tiles)\n", in.path, in.tiles)
		var err error
		switch in.kind {
		case "chrome":
			_, in.events, err = tileChrome(chromeSrc, in.path, in.tiles)
		case "chrome-gz":
			in.events, err = tileChromeGzip(chromeSrc, in.path, in.tiles)
		default:
			if _, serr := os.Stat(nsysSrc); serr != nil {
				fmt.Fprintf(os.Stderr, "skipping %s: %s not found\n", in.name, nsysSrc)
				continue
			}
			in.events, err = tileNsys(nsysSrc, in.path, in.tiles)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.name, err)
		}
		if err := os.WriteFile(stamp, []byte(fmt.Sprint(in.events)), 0o644); err != nil {
			return nil, err
		}
		keep = append(keep, in)
	}
	if only == nil || only.MatchString(rankFolder) {
		ranks, err := rankInputs(out, quick)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rankFolder, err)
		}
		keep = append(keep, ranks...)
	}
	if only == nil || only.MatchString(jobInput(jobRanks[0])) {
		jobs, err := jobInputs(out, bin)
		if err != nil {
			return nil, fmt.Errorf("job inputs: %w", err)
		}
		keep = append(keep, jobs...)
	}
	return keep, nil
}

// tileChromeGzip writes the tiled Chrome trace gzip-compressed (the
// standard library's default level, as a job's own export might use).
func tileChromeGzip(src, dst string, tiles int) (int64, error) {
	tmp := dst + ".tmp.json"
	defer os.Remove(tmp)
	_, events, err := tileChrome(src, tmp, tiles)
	if err != nil {
		return 0, err
	}
	in, err := os.Open(tmp)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	f, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	zw := gzip.NewWriter(f)
	if _, err := io.Copy(zw, in); err != nil {
		f.Close()
		return 0, err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return 0, err
	}
	return events, f.Close()
}

// pythonPath is the interpreter python3 runs, so that a version manager's
// shim script (pyenv's) is not timed with the reference scripts.
func pythonPath() string {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if p := strings.TrimSpace(string(out)); err == nil && p != "" {
		return p
	}
	return "python3"
}

// sizeOf is the size of path in bytes (0 if absent).
func sizeOf(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	if !st.IsDir() {
		return st.Size()
	}
	// A folder (a job's ranks): the sum of the files in it.
	entries, err := os.ReadDir(path)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range entries {
		if e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}
