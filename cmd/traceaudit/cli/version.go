package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/traceaudit/traceaudit/internal/version"
	"github.com/traceaudit/traceaudit/report"
)

// VersionOptions are the inputs of `traceaudit version`.
type VersionOptions struct {
	IO     *IO
	Format string
}

// NewCmdVersion builds `traceaudit version`. runF replaces the run
// function in tests (nil: versionRun).
func NewCmdVersion(ios *IO, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "version [--format text|json]",
		Short: "Print the version, commit and Go version traceaudit was built with",
		Long: `version prints the module version (stamped by make build and make dist,
else the Go toolchain's build information), the commit, the Go version and
the platform; --format json adds the schema version of the JSON documents.`,
		Example: `  traceaudit version
  traceaudit --version
  traceaudit version --format json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format, "text", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "text", "output format: text or json")
	completeValues(cmd, "format", []string{"text", "json"})
	return cmd
}

func versionRun(opts *VersionOptions) error {
	info := version.Get()
	if opts.Format == "json" {
		return emit(opts.IO, "json", "", nil, report.ForValue(info))
	}
	_, err := fmt.Fprintln(opts.IO.Out, info.String())
	return err
}
