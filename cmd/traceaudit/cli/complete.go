package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/traceaudit/traceaudit/analyze"
)

// Values completed for flags (traceaudit completion bash|zsh|fish|powershell).
var (
	failOnLevels = []string{analyze.SeverityInfo.String(), analyze.SeverityWarning.String(), analyze.SeverityError.String()}
)

// completeValues registers the fixed values of a flag for shell completion.
func completeValues(cmd *cobra.Command, flag string, values []string) {
	cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// completeList registers completion of a comma-separated list of values:
// each candidate is what was typed up to the last comma plus a value not
// yet in the list.
func completeList(cmd *cobra.Command, flag string, values func() []string) {
	cmd.RegisterFlagCompletionFunc(flag, func(_ *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
		i := strings.LastIndexByte(typed, ',')
		done, partial := typed[:i+1], typed[i+1:]
		used := map[string]bool{}
		for _, v := range strings.Split(done, ",") {
			used[strings.TrimSpace(v)] = true
		}
		var out []string
		for _, v := range values() {
			if !used[v] && strings.HasPrefix(v, partial) {
				out = append(out, done+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}
