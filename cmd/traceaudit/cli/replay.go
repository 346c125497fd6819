package cli

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/driver"
	"github.com/traceaudit/traceaudit/internal/progress"
	"github.com/traceaudit/traceaudit/replay"
	"github.com/traceaudit/traceaudit/replay/cuda"
	"github.com/traceaudit/traceaudit/replay/cudaexec"
	"github.com/traceaudit/traceaudit/report"
	"github.com/traceaudit/traceaudit/timeline"
)

// ReplayOptions are the inputs of `traceaudit replay`.
type ReplayOptions struct {
	IO *IO
	// Files are the trace, or the traces (or folder) of a job; File is
	// the first.
	Files []string
	File  string
	// Rank is the rank of a job to replay (-1: the straggler).
	Rank     int
	DryRun   bool
	Steps    int
	Variants string
	Engine   string
	Device   int
	Format   string
	OutDir   string
	Config   *analyze.Config
	Args     []string
	ranges   rangeFlags
	profiler profilerCost
}

// NewCmdReplay builds `traceaudit replay`.
func NewCmdReplay(ios *IO, runF func(*ReplayOptions) error) *cobra.Command {
	opts := &ReplayOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "replay [flags] FILE|JOB...",
		Short: "On a GPU box: replay one step of the trace as observed and once per fix, and measure the speedups",
		Long: `replay analyzes the trace and runs the step model's window of steady steps on a
GPU: every host call in order with the host time before it, every kernel
(a spin kernel of its traced duration), copy (its bytes, from pageable or
pinned memory) and wait, as the model simulates it; once as observed and
once per recommended fix, each fix the model's own transform (pinned,
pinned-copy-stream, pack-copies, prefetch-workers with a pool of producers,
persistent-workers, no-sync, keep-cache, reuse-buffers, cache-data,
fewer-collectives, all). It reports the measured step and speedup of each
next to the model's predicted step, the fidelity of the observed replay
against the trace, and this machine's copy bandwidths beside the trace's.
Where no schedule holds a fix (cuda-graph: a captured graph is not a
sequence of calls) or the model does not reproduce the trace, variants run
by phases (--engine phases for all: the step reduced to data, copy, launch,
other and sync phases, with real batches, producers, pinning and munmap).

Given a job (the rank traces of one job, a folder of them, or an Nsight
Systems export of several GPU processes), it replays one rank: the straggler,
which the others wait for, or the rank --rank names.

It needs libcuda.so.1 and an NVIDIA GPU; --dry-run prints the plan anywhere.
It refuses plans needing more than half the free device memory and frees
everything on exit and on Ctrl-C.`,
		Example: `  # the plan, anywhere
  traceaudit replay --dry-run run.sqlite
  # on a GPU box: the observed step and every fix the findings call for
  traceaudit replay run.sqlite
  # chosen variants, more steps, a report folder with the replay plot
  traceaudit replay --variants pinned,all --steps 30 --out replay/ run.sqlite
  # a multi-GPU job: the straggler's rank, or rank 3
  traceaudit replay --dry-run traces/
  traceaudit replay --rank 3 torchrun.nsys.sqlite`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("replay: want a trace, or the traces of a job")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format, "text", "json", "markdown"); err != nil {
				return err
			}
			if opts.Engine != replay.EnginePhases && opts.Engine != replay.EngineGraph {
				return usagef("--engine %q: want phases or graph", opts.Engine)
			}
			if opts.Steps < 1 || opts.Steps > 10000 {
				return usagef("--steps %d: want 1 to 10000", opts.Steps)
			}
			if opts.Device < 0 {
				return usagef("--device %d: want a device ordinal, 0 or more", opts.Device)
			}
			cfg := analyze.DefaultConfig()
			if err := opts.ranges.apply(cfg); err != nil {
				return err
			}
			if opts.Rank < -1 {
				return usagef("--rank %d: want a rank, 0 or more", opts.Rank)
			}
			if err := opts.profiler.parse(); err != nil {
				return err
			}
			if st := opts.profiler.step; st != 0 {
				switch {
				case st < 0 || st > time.Hour:
					return usagef("--unprofiled-step %s: want the loop's mean step without the profiler, such as 37ms", st)
				case cmd.Flags().Changed("profiler-cost"):
					return usagef("--unprofiled-step and --profiler-cost: give one (the step gives the cost)")
				}
				cfg.UnprofiledStepNS = st.Nanoseconds() // the model's predicted steps stand for the same loop
			}
			cfg.KeepSchedules = opts.Engine == replay.EngineGraph
			opts.Config, opts.Files, opts.File = cfg, args, args[0]
			opts.Args = append([]string{"traceaudit"}, opts.IO.Args...)
			if runF != nil {
				return runF(opts)
			}
			return replayRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print the plan without running it (no GPU needed)")
	fl.IntVar(&opts.Steps, "steps", 10, "measured steps per variant, at least (after 2 warm-up steps; a schedule runs whole passes of the model's window, one to warm up)")
	fl.StringVar(&opts.Variants, "variants", "", "comma-separated variants to run (default: observed, the fixes the findings call for, and all)")
	fl.StringVar(&opts.Engine, "engine", replay.EngineGraph, "how variants run: graph (the step model's schedule: every call, kernel, copy and wait of its window, as the model simulates it with each fix) or phases (the step reduced to data, copy, launch, other and sync phases, with real batches and producers)")
	fl.IntVar(&opts.Device, "device", 0, "CUDA device ordinal")
	fl.IntVar(&opts.Rank, "rank", -1, "the rank of a job to replay (default: the straggler)")
	fl.StringVar(&opts.Format, "format", "text", "output format: text, markdown or json")
	fl.StringVar(&opts.OutDir, "out", "", "also write report.md, report.json and a replay plot to this folder")
	fl.StringVar(&opts.profiler.mode, "profiler-cost", "auto", "take the profiler's own cost out of the replayed host phases: auto (for a PyTorch profiler trace, measure torch.profiler's cost per event here with --python), off, or a duration per recorded event")
	fl.StringVar(&opts.profiler.python, "python", "python3", "the Python with PyTorch that --profiler-cost auto measures with")
	fl.Var(stepFlag{&opts.profiler.step}, "unprofiled-step", "the loop's mean step without the profiler, as your logs measure it: a duration (37ms) or a rate (27it/s); the trace's mean step less it is taken out of the replayed host phases (instead of --profiler-cost)")
	completeValues(cmd, "format", []string{"text", "markdown", "json"})
	completeValues(cmd, "engine", []string{replay.EnginePhases, replay.EngineGraph})
	completeList(cmd, "variants", replay.Names)
	opts.ranges.register(cmd)
	return cmd
}

func replayRun(opts *ReplayOptions) error {
	if err := checkOut(opts.OutDir); err != nil {
		return err
	}
	tl, err := replayTimeline(opts)
	if err != nil {
		return err
	}
	r, err := audit.RunWith(tl, opts.Config, suite.Default)
	if err != nil {
		return err
	}
	p, err := replay.Build(r, suite.Default)
	if err != nil {
		return fmt.Errorf("%s: cannot replay: %w", opts.File, err)
	}
	if err := p.Select(opts.Variants); err != nil {
		return usagef("--variants: %v", err)
	}
	p.Engine = opts.Engine
	// A dry run takes out a cost given as a duration or by the unprofiled
	// step; measuring one needs the GPU box.
	if !opts.DryRun || opts.profiler.offline() {
		warn := func(s string) { fmt.Fprintf(opts.IO.Err, "traceaudit: %s\n", s) }
		status := func(s string) {
			if opts.IO.ErrTTY {
				warn(s)
			}
		}
		opts.profiler.apply(opts.IO.context(), p, tl.Source.Format, warn, status)
	}
	var rep *replay.Result
	if opts.DryRun {
		rep = replay.NewResult(p, "", nil, 0, nil)
	} else {
		if rep, err = runReplay(opts, p); err != nil {
			return err
		}
	}
	return emit(opts.IO, opts.Format, opts.OutDir, opts.Args, report.ForReplay(rep))
}

// replayTimeline reads the trace to replay: the one trace given, or the
// chosen rank of a job (its process only, in a multi-process export).
func replayTimeline(opts *ReplayOptions) (*timeline.Timeline, error) {
	cache := map[string]*timeline.Timeline{}
	open := func(p string) (*timeline.Timeline, error) {
		if tl := cache[p]; tl != nil {
			return tl, nil
		}
		tl, err := load(opts.IO, p)
		if err == nil && p == Stdin {
			cache[p] = tl // standard input reads once
		}
		return tl, err
	}
	if len(opts.Files) == 1 {
		if st, err := os.Stat(opts.File); err == nil && !st.IsDir() {
			tl, err := load(opts.IO, opts.File)
			if err != nil {
				return nil, err
			}
			if len(tl.GPUProcesses()) < 2 {
				if opts.Rank > 0 {
					return nil, usagef("--rank %d: %s holds one GPU process", opts.Rank, opts.File)
				}
				return tl, nil
			}
			cache[opts.File] = tl
		}
	}
	res, err := driver.Analyze(opts.Files, driver.Options{Config: opts.Config, Open: open})
	if err != nil {
		return nil, err
	}
	switch res.Kind {
	case driver.KindSingle:
		return open(res.Paths[0])
	case driver.KindBatch:
		return nil, usagef("replay: these %d traces are not one job: replay one trace, or the ranks of one job", len(res.Paths))
	}
	rank := opts.Rank
	s := res.Job.Job.Straggler
	switch {
	case rank < 0 && s == nil:
		return nil, usagef("replay: no rank of this job holds the others back: choose the rank to replay with --rank N")
	case rank < 0:
		rank = s.Rank
		fmt.Fprintf(opts.IO.Err, "traceaudit: replaying rank %d, the straggler (GPU %d, pid %d, %s)\n", rank, s.Device, s.PID, s.File)
	default:
		fmt.Fprintf(opts.IO.Err, "traceaudit: replaying rank %d\n", rank)
	}
	return driver.RankTimeline(res.Job, rank, open)
}

// runReplay opens the GPU and runs the plan, stopping cleanly on Ctrl-C.
func runReplay(opts *ReplayOptions, p *replay.Plan) (*replay.Result, error) {
	ex, err := cudaexec.Open(opts.Device)
	if err != nil {
		if errors.Is(err, cuda.ErrNoCUDA) || errors.Is(err, cuda.ErrNoDevice) {
			return nil, fmt.Errorf("%s: cannot replay here: %v (replay runs on a machine with an NVIDIA GPU; --dry-run prints the plan anywhere)", opts.File, err)
		}
		return nil, fmt.Errorf("%s: cannot replay: %w", opts.File, err)
	}
	defer ex.Close()
	ctx := opts.IO.context() // Ctrl-C stops the replay cleanly
	bar := progress.New(opts.IO.Err, "replaying "+opts.File, opts.IO.ErrTTY)
	defer bar.Done()
	const warmup = 2
	box, measured, err := replay.Run(ctx, ex, p, replay.Options{Steps: opts.Steps, Warmup: warmup,
		Progress: func(done, total int) { bar.Update(int64(done), int64(total)) }})
	if err != nil {
		return nil, fmt.Errorf("%s: cannot replay: %w", opts.File, err)
	}
	return replay.NewResult(p, ex.Device(), measured, opts.Steps, box), nil
}
