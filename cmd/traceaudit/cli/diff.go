package cli

import (
	"github.com/spf13/cobra"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/compare"
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

Exit status: 0 done, 1 a finding at or above --fail-on is new or regressed,
2 bad usage or input.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, fail, err := fl.config()
			if err != nil {
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
	var reps [2]*audit.Report
	for i, f := range []string{opts.Before, opts.After} {
		tl, err := load(opts.IO, f)
		if err != nil {
			return err
		}
		if reps[i], err = audit.Run(tl, opts.Config); err != nil {
			return err
		}
	}
	d := compare.Compare(reps[0], reps[1])
	if err := emit(opts.IO, opts.Format, opts.OutDir, opts.Args, d); err != nil {
		return err
	}
	return failIf(opts.FailOn, d.Worst(), "new or regressed findings")
}
