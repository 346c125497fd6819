package index

import (
	"regexp"
	"strings"

	"github.com/traceaudit/traceaudit/timeline"
)

// trainingPattern names what only training runs: a backward pass, an
// optimizer step, gradient kernels.
var trainingPattern = regexp.MustCompile(`(?i)backward|optimizer|autograd::engine|wgrad|dgrad|\bsgd\b|adam`)

// program says whether tl comes from a PyTorch program (recorded by the
// PyTorch profiler; Python or PyTorch threads; ATen operators, ranges or
// kernels) and
// whether it trains (a backward pass or an optimizer step). Cost: O(names
// + tracks).
func program(tl *timeline.Timeline) (pytorch, training bool) {
	pytorch = tl.Observed.CanAnnotations || tl.Observed.HostOps || tl.Observed.DataLoader
	for _, t := range tl.Tracks {
		if t.Kind == timeline.TrackHost && (strings.HasPrefix(t.Name, "python") || strings.HasPrefix(t.Name, "pt_")) {
			pytorch = true
		}
	}
	for id := timeline.NameID(1); int(id) < tl.NumNames(); id++ {
		n := tl.Name(id)
		if !pytorch && (strings.Contains(n, "aten::") || strings.Contains(n, "at::native") || strings.HasPrefix(n, timeline.ProfilerStepPrefix) ||
			strings.Contains(n, "elementwise_kernel")) {
			pytorch = true
		}
		if !training && trainingPattern.MatchString(n) {
			training = true
		}
	}
	return pytorch, training
}
