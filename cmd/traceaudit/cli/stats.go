package cli

import (
	"github.com/spf13/cobra"

	"github.com/traceaudit/traceaudit/analyze/stats"
	"github.com/traceaudit/traceaudit/timeline/timelinetext"
)

// StatsOptions are the inputs of `traceaudit stats`.
type StatsOptions struct {
	IO     *IO
	Format string
	File   string
	// DumpTimeline prints the timeline as timelinetext instead of the
	// summary: the start of a test case made from a real trace.
	DumpTimeline bool
}

// NewCmdStats builds `traceaudit stats`. runF replaces the run function in
// tests (nil: statsRun).
func NewCmdStats(ios *IO, runF func(*StatsOptions) error) *cobra.Command {
	opts := &StatsOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "stats [--format text|json] FILE",
		Short: "Summarise a trace: GPU work, busy time, copies by memory kind, host activity",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format, "text", "json"); err != nil {
				return err
			}
			opts.File = args[0]
			if runF != nil {
				return runF(opts)
			}
			return statsRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "text", "output format: text or json")
	cmd.Flags().BoolVar(&opts.DumpTimeline, "dump-timeline", false, "debugging: print the timeline as text (timelinetext, for analyzer test cases) instead of the summary")
	return cmd
}

func statsRun(opts *StatsOptions) error {
	tl, err := load(opts.IO, opts.File)
	if err != nil {
		return err
	}
	if opts.DumpTimeline {
		return timelinetext.Encode(opts.IO.Out, tl)
	}
	return emit(opts.IO, opts.Format, "", nil, stats.Compute(tl))
}
