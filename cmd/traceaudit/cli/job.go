package cli

import (
	"github.com/spf13/cobra"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/driver"
	"github.com/traceaudit/traceaudit/report"
)

// JobOptions are the inputs of `traceaudit job`.
type JobOptions struct {
	IO     *IO
	Files  []string
	Format string
	FailOn analyze.Severity
	Config *analyze.Config
	OutDir string
	// Verbose writes the text in full (--verbose).
	Verbose bool
	Args    []string
}

// NewCmdJob builds `traceaudit job`: the reduce of per-rank analyses.
func NewCmdJob(ios *IO, runF func(*JobOptions) error) *cobra.Command {
	opts := &JobOptions{IO: ios}
	var format, failOn string
	var bands []string
	cmd := &cobra.Command{
		Use:   "job [flags] RANK.json...",
		Short: "Build the job report from per-rank analyses (traceaudit analyze --format json of each rank)",
		Long: `job reduces the analyses of a job's ranks, each written by
traceaudit analyze --format json RANK_TRACE > RANK.json (for example one task
per rank of a batch engine: see deploy/), into the job report that analyze
prints for the traces read together: the ranks on one clock, each rank's wait
for the others in their collectives, the straggler and its own cause, the job
verdict. Ranks are those the analyses record (the traces' distributedInfo),
else the order of the files. A job report (analyze of a multi-process export)
gives its ranks; .json.gz files are read too.

Exit status: 0 done, 1 a finding at or above --fail-on, 2 bad usage or input.`,
		Example: `  # one task per rank (a Slurm array task, a Kubernetes pod: see deploy/)
  traceaudit analyze --format json rank3.pt.trace.json.gz > out/rank-3.json
  # then the job report, with the rank plot in job/
  traceaudit job --out job/ out/rank-*.json
  # CI: fail when a rank holds the others back 20 % of a step or more
  traceaudit job --fail-on error out/rank-*.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("job: want the analyses of the job's ranks")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := analyzeFlags{format: format, failOn: failOn, bands: bands, pinnedGBps: 25}
			cfg, fail, err := fl.config()
			if err != nil {
				return err
			}
			opts.Files, opts.Format, opts.FailOn, opts.Config = args, format, fail, cfg
			opts.Args = append([]string{"traceaudit"}, opts.IO.Args...)
			if runF != nil {
				return runF(opts)
			}
			return jobRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&format, "format", "text", "output format: text, markdown or json")
	fl.StringVar(&failOn, "fail-on", "", "exit 1 when a finding is at or above this level: info, warning or error")
	fl.StringArrayVar(&bands, "band", nil, "severity bands of comm-wait or straggler as ID=WARNING,ERROR shares; repeatable")
	fl.StringVar(&opts.OutDir, "out", "", "also write report.md, report.html, report.json and the rank plot (PNG and SVG) to this folder")
	fl.BoolVarP(&opts.Verbose, "verbose", "v", false, "text: the straggler and every finding of the rank it is about, with fix, code and evidence (default: the answer in a screen)")
	completeValues(cmd, "format", []string{"text", "markdown", "json"})
	completeValues(cmd, "fail-on", failOnLevels)
	return cmd
}

func jobRun(opts *JobOptions) error {
	if err := checkOut(opts.OutDir); err != nil {
		return err
	}
	j, err := driver.Reduce(opts.Files, driver.Options{Config: opts.Config})
	if err != nil {
		return err
	}
	if err := emitWith(opts.IO, opts.Format, opts.OutDir, opts.Args, report.ForJob(j), opts.Verbose); err != nil {
		return err
	}
	return failIf(opts.FailOn, report.MaxJobSeverity(j), "findings")
}
