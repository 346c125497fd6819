package cli

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/analyze/suite"
)

// AnalyzeOptions are the inputs of `traceaudit analyze`.
type AnalyzeOptions struct {
	IO     *IO
	Files  []string
	Format string
	// FailOn is the severity at or above which the run exits 1 (none: never).
	FailOn analyze.Severity
	Config *analyze.Config
	// OutDir, when set, receives report.md, report.json and the plots.
	OutDir string
	// Job makes the files one job (--job).
	Job bool
	// Verbose writes the text in full: every finding with its evidence
	// (--verbose; without it the answer fits a screen).
	Verbose bool
	// Args are the command line, quoted in report.md.
	Args []string
}

// rangeFlags are --data-range and --step-range, shared by analyze, diff
// and replay.
type rangeFlags struct{ dataRange, stepRange string }

func (f *rangeFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.dataRange, "data-range", analyze.DefaultDataRange, "regular expression for host ranges that load data")
	fl.StringVar(&f.stepRange, "step-range", "", "regular expression for host ranges that are training steps (default: ProfilerStep#N, then the earliest repeated range)")
}

// apply validates the expressions and sets them on cfg.
func (f *rangeFlags) apply(cfg *analyze.Config) error {
	re, err := regexp.Compile(f.dataRange)
	if err != nil {
		return usagef("--data-range: %v", err)
	}
	cfg.DataRange = re
	if f.stepRange != "" {
		if cfg.StepRange, err = regexp.Compile(f.stepRange); err != nil {
			return usagef("--step-range: %v", err)
		}
	}
	return nil
}

// analyzeFlags are the flags shared by analyze and diff.
type analyzeFlags struct {
	rangeFlags
	format, failOn string
	minGap         time.Duration
	pinnedGBps     float64
	profilerCostUS float64
	bands          []string
}

func (f *analyzeFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "text", "output format: text, markdown or json")
	fl.StringVar(&f.failOn, "fail-on", "", "exit 1 when a finding is at or above this level: info, warning or error")
	completeValues(cmd, "format", []string{"text", "markdown", "json"})
	completeValues(cmd, "fail-on", failOnLevels)
	fl.DurationVar(&f.minGap, "min-gap", 100*time.Microsecond, "shortest GPU idle gap gpu-idle lists as evidence")
	f.rangeFlags.register(cmd)
	fl.Float64Var(&f.pinnedGBps, "pinned-gbps", 25, "pinned-copy bandwidth in GB/s when the trace has no pinned copy of 1 MiB or more")
	fl.Float64Var(&f.profilerCostUS, "profiler-cost-us", model.ProfilerEventNS/1e3,
		"host time in µs that torch.profiler adds per event it records, which the step model takes out of PyTorch profiler traces (0 keeps it)")
	fl.StringArrayVar(&f.bands, "band", nil, "severity bands of an analyzer as ID=WARNING,ERROR shares (e.g. dataloader-wait=0.10,0.30); repeatable")
}

// config validates the flags and builds the analysis config.
func (f *analyzeFlags) config() (*analyze.Config, analyze.Severity, error) {
	cfg := analyze.DefaultConfig()
	if err := checkFormat(f.format, "text", "markdown", "json"); err != nil {
		return nil, 0, err
	}
	fail := analyze.SeverityNone
	if f.failOn != "" {
		s, err := analyze.ParseSeverity(f.failOn)
		if err != nil {
			return nil, 0, usagef("--fail-on: %v", err)
		}
		fail = s
	}
	if f.minGap < 0 {
		return nil, 0, usagef("--min-gap %s: must not be negative", f.minGap)
	}
	cfg.MinGapNS = f.minGap.Nanoseconds()
	if err := f.rangeFlags.apply(cfg); err != nil {
		return nil, 0, err
	}
	if !(f.pinnedGBps > 0) || f.pinnedGBps > 1e4 {
		return nil, 0, usagef("--pinned-gbps %v: want a bandwidth in GB/s above 0", f.pinnedGBps)
	}
	cfg.PinnedGBps = f.pinnedGBps
	switch c := f.profilerCostUS; {
	case !(c >= 0) || c > 1e3:
		return nil, 0, usagef("--profiler-cost-us %v: want microseconds per event, 0 to 1000", c)
	case c == 0:
		cfg.ProfilerEventNS = -1
	default:
		cfg.ProfilerEventNS = int64(math.Round(c * 1e3))
	}
	for _, b := range f.bands {
		id, bands, err := parseBand(b)
		if err != nil {
			return nil, 0, usagef("--band %q: %v", b, err)
		}
		cfg.Bands[id] = bands
	}
	return cfg, fail, nil
}

// parseBand parses ID=WARNING,ERROR; shares may be fractions or percents.
func parseBand(s string) (string, analyze.Bands, error) {
	id, rest, ok := strings.Cut(s, "=")
	if !ok {
		return "", analyze.Bands{}, fmt.Errorf("want ID=WARNING,ERROR")
	}
	if suite.ByID(id) == nil && id != job.StragglerID {
		return "", analyze.Bands{}, fmt.Errorf("unknown analyzer %q", id)
	}
	ws, es, ok := strings.Cut(rest, ",")
	if !ok {
		return "", analyze.Bands{}, fmt.Errorf("want two shares, WARNING,ERROR")
	}
	w, err1 := parseShare(ws)
	e, err2 := parseShare(es)
	if err1 != nil || err2 != nil || w > e {
		return "", analyze.Bands{}, fmt.Errorf("want two shares from 0 to 1 (or percents), the warning share not above the error share")
	}
	return id, analyze.Bands{Warning: w, Error: e}, nil
}

func parseShare(s string) (float64, error) {
	s = strings.TrimSpace(s)
	div := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, div = t, 100
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v/div >= 0 && v/div <= 1) { // NaN fails both
		return 0, fmt.Errorf("bad share %q", s)
	}
	return v / div, nil
}

// NewCmdAnalyze builds `traceaudit analyze`. runF replaces the run function
// in tests (nil: analyzeRun).
func NewCmdAnalyze(ios *IO, runF func(*AnalyzeOptions) error) *cobra.Command {
	opts := &AnalyzeOptions{IO: ios}
	var fl analyzeFlags
	var unprofiled time.Duration
	cmd := &cobra.Command{
		Use:   "analyze [flags] FILE|DIR...",
		Short: "Find what starves the GPU: findings per step with evidence and fixes",
		Long: `analyze reads each trace, finds the training steps, splits each step into
compute, comm, copy, sync, os, data and other time, and reports the causes of
GPU starvation ordered by the time they waste per step, each with evidence, the
fix in plain words and the PyTorch change. FILE "-" reads standard input. An
.nsys-rep or .qdrep report is exported with nsys when nsys is on PATH.

Several traces that are the ranks of one job (PyTorch profiler traces whose
distributedInfo gives one world size and distinct ranks, or any files with
--job), a folder of them, or one Nsight Systems export of several GPU
processes are analysed as a job: each rank on its own, then which rank the
others wait for in their collectives (the straggler) and why. Other sets of
traces are a batch: each trace analysed alone, each job among them (an export
of several processes, or ranks of one job) as its ranks, then a table of all
of them; an unreadable trace is reported while the others are analysed (exit
2 at the end).

Exit status: 0 done, 1 a finding at or above --fail-on, 2 bad usage or input.`,
		Example: `  # findings in the terminal
  traceaudit analyze run.sqlite
  # a report folder for a pull request: report.md, report.html, report.json,
  # annotated.json (open in ui.perfetto.dev) and plots
  traceaudit analyze --out audit/ run.pt.trace.json.gz
  # CI: Markdown with Mermaid charts for the job summary, fail on errors
  traceaudit analyze --format markdown --fail-on error run.sqlite >> "$GITHUB_STEP_SUMMARY"
  # an nsys report (exported once with nsys), steps from an NVTX range
  traceaudit analyze --step-range '^train_step$' run.nsys-rep
  # from standard input
  gunzip -c run.pt.trace.json.gz | traceaudit analyze -
  # a multi-GPU job: one trace per rank, a folder of them, or one nsys export
  # of the whole torchrun; the straggler and its cause, and the rank plot
  traceaudit analyze --out job/ traces/rank0.pt.trace.json.gz traces/rank1.pt.trace.json.gz
  traceaudit analyze traces/
  # several unrelated traces, one after the other (a batch)
  traceaudit analyze --format json a.sqlite b.pt.trace.json.gz`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("analyze: want at least one trace file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, fail, err := fl.config()
			if err != nil {
				return err
			}
			if st := unprofiled; st != 0 {
				switch {
				case st < 0 || st > time.Hour:
					return usagef("--unprofiled-step %s: want the loop's mean step without the profiler, such as 37ms", st)
				case cmd.Flags().Changed("profiler-cost-us"):
					return usagef("--unprofiled-step and --profiler-cost-us: give one (the step gives the cost)")
				}
				cfg.UnprofiledStepNS = st.Nanoseconds()
			}
			if err := checkStdin(args...); err != nil {
				return err
			}
			opts.Files, opts.Format, opts.FailOn, opts.Config = args, fl.format, fail, cfg
			opts.Args = append([]string{"traceaudit"}, opts.IO.Args...)
			if runF != nil {
				return runF(opts)
			}
			return analyzeRun(opts)
		},
	}
	fl.register(cmd)
	cmd.Flags().Var(stepFlag{&unprofiled}, "unprofiled-step", "the loop's mean step without the profiler, as your logs measure it: a duration (37ms) or a rate (27it/s); the step model takes out the profiler's cost per event that makes its step that long (instead of --profiler-cost-us)")
	cmd.Flags().StringVar(&opts.OutDir, "out", "", "also write to this folder: report.html, report.md, report.json, annotated.json (a single trace, for ui.perfetto.dev) and the plots (PNG and SVG)")
	cmd.Flags().BoolVar(&opts.Job, "job", false, "the files are the ranks of one job, whatever their metadata says (ranks from distributedInfo, else argument order)")
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "text: every finding with its fix, code, evidence and replay command (default: the answer in a screen)")
	return cmd
}

func analyzeRun(opts *AnalyzeOptions) error {
	if err := checkOut(opts.OutDir); err != nil {
		return err
	}
	res, err := analyzeInputs(opts.IO, opts.Files, opts.Config, opts.Job, opts.OutDir != "")
	if err != nil {
		return err
	}
	doc, worst := docOf(res)
	out := opts.OutDir
	if len(res.Failed) > 0 {
		out = "" // a failed run writes no report folder
	}
	if err := emitWith(opts.IO, opts.Format, out, opts.Args, doc, opts.Verbose); err != nil {
		return err
	}
	if len(res.Failed) > 0 {
		for _, e := range res.Failed {
			fmt.Fprintln(opts.IO.Err, "traceaudit: "+oneLine(e.Error()))
		}
		return fmt.Errorf("%d of %d traces could not be analysed", len(res.Failed), len(res.Paths))
	}
	return failIf(opts.FailOn, worst, "findings")
}

// failIf returns a *FailError when got reaches the --fail-on level.
func failIf(level, got analyze.Severity, what string) error {
	if level == analyze.SeverityNone || got < level {
		return nil
	}
	return &FailError{Msg: fmt.Sprintf("%s at %s or above (--fail-on %s)", what, got, level)}
}
