package cli

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/traceaudit/traceaudit/analyze/stats"
	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/report"
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
	// Report is the table to print (kernels, api, nvtx, copies, os, ops);
	// "" prints the summary.
	Report string
	// FullNames keeps kernel names as the trace has them.
	FullNames bool
	// GroupBy is "shape" for an ops table by input shapes, else "".
	GroupBy string
}

// NewCmdStats builds `traceaudit stats`. runF replaces the run function in
// tests (nil: statsRun).
func NewCmdStats(ios *IO, runF func(*StatsOptions) error) *cobra.Command {
	opts := &StatsOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "stats [--report TABLE] [--format text|csv|json] FILE",
		Short: "Summarise a trace: GPU work, busy time, copies by memory kind, host activity; or one full table",
		Long: `stats summarises what a trace holds. With --report it prints one full table
in the manner of nsys stats, one row per name sorted by total time, with the
count, total, average, median, minimum, maximum time, standard deviation and
the share of the table's total: kernels (GPU kernels), api (CUDA API calls),
nvtx (host ranges: NVTX, record_function, ProfilerStep, DataLoader), copies
(memcpys by direction and memory kinds, with bytes, and memsets), os (OS
runtime calls) or ops (PyTorch operators as the profiler's key_averages()
table has them: calls, self and total CPU time, and the CUDA time of the
kernels, copies and memsets launched under each, self and total; with
--group-by shape one row per operator and input shapes). CSV and
JSON give times in nanoseconds. FILE "-" reads standard input.`,
		Example: `  traceaudit stats run.sqlite
  traceaudit stats --report kernels run.pt.trace.json.gz
  traceaudit stats --report api --format csv run.sqlite > api.csv
  traceaudit stats --report copies --format json run.sqlite | jq '.rows[0]'
  traceaudit stats --report ops run.pt.trace.json.gz
  traceaudit stats --report ops --group-by shape run.pt.trace.json.gz`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			formats := []string{"text", "json"}
			if opts.Report != "" {
				if !slices.Contains(stats.TableKinds, opts.Report) {
					return usagef("--report %q: want one of %v", opts.Report, stats.TableKinds)
				}
				formats = append(formats, "csv")
			}
			if opts.GroupBy != "" && (opts.GroupBy != "shape" || opts.Report != "ops") {
				return usagef("--group-by %q: only --report ops --group-by shape is known", opts.GroupBy)
			}
			if err := checkFormat(opts.Format, formats...); err != nil {
				return err
			}
			opts.File = args[0]
			if runF != nil {
				return runF(opts)
			}
			return statsRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "text", "output format: text or json (and csv with --report)")
	cmd.Flags().StringVar(&opts.Report, "report", "", "print one full table: kernels, api, nvtx, copies, os or ops")
	cmd.Flags().BoolVar(&opts.FullNames, "full-names", false, "kernels: the names as the trace has them (default: shortened as Nsight Systems shortens them, the same for both formats)")
	cmd.Flags().StringVar(&opts.GroupBy, "group-by", "", "ops: shape for one row per operator and input shapes (traces made with record_shapes=True)")
	cmd.Flags().BoolVar(&opts.DumpTimeline, "dump-timeline", false, "debugging: print the timeline as text (timelinetext, for analyzer test cases) instead of the summary")
	completeValues(cmd, "format", []string{"text", "csv", "json"})
	completeValues(cmd, "report", stats.TableKinds)
	completeValues(cmd, "group-by", []string{"shape"})
	return cmd
}

func statsRun(opts *StatsOptions) error {
	tl, err := loadWith(opts.IO, opts.File, ingest.Options{Shapes: opts.GroupBy == "shape"})
	if err != nil {
		return err
	}
	if opts.DumpTimeline {
		return timelinetext.Encode(opts.IO.Out, tl)
	}
	if opts.Report == "" {
		return emit(opts.IO, opts.Format, "", nil, report.ForStats(stats.Compute(tl)))
	}
	t, err := stats.NewTable(tl, opts.Report, stats.TableOptions{FullNames: opts.FullNames, ByShape: opts.GroupBy == "shape"})
	if errors.Is(err, stats.ErrNoShapes) {
		return fmt.Errorf("%s: --group-by shape: %w", opts.File, err)
	}
	if err != nil {
		return usagef("--report: %v", err)
	}
	return emit(opts.IO, opts.Format, "", nil, report.ForTable(t))
}
