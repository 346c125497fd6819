package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/traceaudit/traceaudit/analyze/compare"
	"github.com/traceaudit/traceaudit/driver"
	"github.com/traceaudit/traceaudit/report"
)

// DiffOptions are the inputs of `traceaudit diff`.
type DiffOptions struct {
	AnalyzeOptions
	Before, After string
}

// NewCmdDiff builds `traceaudit diff`.
func NewCmdDiff(ios *IO, runF func(*DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{AnalyzeOptions: AnalyzeOptions{IO: ios}}
	var fl analyzeFlags
	cmd := &cobra.Command{
		Use:   "diff [flags] BEFORE AFTER",
		Short: "Compare two runs: step speedup and findings resolved, new, persisting or regressed",
		Long: `diff analyzes two traces of the same job (before and after a change) and
reports the step speedup and which findings were resolved, are new, persist or
regressed (a higher severity, or a share up by more than max(2 points, 10 %)).

BEFORE and AFTER may each be a job (a folder of one job's rank traces, or an
Nsight Systems export of several GPU processes): diff then compares each
rank's step time and findings, the job verdict and the straggler.

Exit status: 0 done, 1 a finding at or above --fail-on is new or regressed,
2 bad usage or input.`,
		Example: `  traceaudit diff before.pt.trace.json.gz after.pt.trace.json.gz
  # CI: fail when the change brings a warning or worse back; Markdown for the PR
  traceaudit diff --fail-on warning --format markdown main.sqlite pr.sqlite
  # a report folder with the before/after steps plot
  traceaudit diff --out diff/ before.sqlite after.sqlite`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, fail, err := fl.config()
			if err != nil {
				return err
			}
			if err := checkStdin(args...); err != nil {
				return err
			}
			opts.Before, opts.After = args[0], args[1]
			opts.Format, opts.FailOn, opts.Config = fl.format, fail, cfg
			opts.Args = append([]string{"traceaudit"}, opts.IO.Args...)
			if runF != nil {
				return runF(opts)
			}
			return diffRun(opts)
		},
	}
	fl.register(cmd)
	cmd.Flags().StringVar(&opts.OutDir, "out", "", "also write report.md, report.json and a before/after steps plot to this folder")
	return cmd
}

func diffRun(opts *DiffOptions) error {
	if err := checkOut(opts.OutDir); err != nil {
		return err
	}
	var res [2]*driver.Result
	for i, f := range []string{opts.Before, opts.After} {
		r, err := analyzeInputs(opts.IO, []string{f}, opts.Config, false, opts.OutDir != "")
		if err != nil {
			return err
		}
		if r.Kind == driver.KindBatch {
			return fmt.Errorf("%s: %d traces that are not one job: diff compares one trace or one job with another", f, len(r.Paths))
		}
		res[i] = r
	}
	b, a := res[0], res[1]
	switch {
	case b.Kind == driver.KindJob && a.Kind == driver.KindJob:
		d := compare.CompareJobs(b.Job, a.Job)
		if err := emit(opts.IO, opts.Format, opts.OutDir, opts.Args, report.ForJobDiff(d)); err != nil {
			return err
		}
		return failIf(opts.FailOn, d.Worst(), "new or regressed findings")
	case b.Kind != a.Kind:
		return usagef("diff: %s is %s and %s is %s: compare one trace with another, or a job with a job", opts.Before, kindName(b), opts.After, kindName(a))
	}
	d := compare.Compare(b.Single, a.Single)
	if err := emit(opts.IO, opts.Format, opts.OutDir, opts.Args, report.ForDiff(d)); err != nil {
		return err
	}
	return failIf(opts.FailOn, d.Worst(), "new or regressed findings")
}

// kindName says what an input was, for errors.
func kindName(r *driver.Result) string {
	if r.Kind == driver.KindJob {
		return fmt.Sprintf("a job of %d ranks", len(r.Job.Ranks))
	}
	return "one trace"
}
