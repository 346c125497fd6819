package compare

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// MinSharedKernels is the share of kernel names (of the two runs' names
// together) below which two runs are too unrelated for a step speedup to
// mean anything.
const MinSharedKernels = 0.2

// Similarity says how much two runs have in common: the share of kernel
// names they share, whether their steps come from the same kind of range,
// and whether they ran on the same GPU models.
type Similarity struct {
	// SharedKernels is |names in both| / |names in either|, from 0 to 1.
	SharedKernels float64 `json:"shared_kernels"`
	// SameSteps says the steps are named alike (ProfilerStep in both, or
	// the same repeated range).
	SameSteps bool `json:"same_steps"`
	// SameDevices says the runs' GPU models are the same, or unknown in
	// one of them.
	SameDevices bool `json:"same_devices"`
}

// similarity compares two analysed runs. Cost: O(names).
func similarity(before, after *audit.Analysis) (Similarity, string) {
	var s Similarity
	if before.Timeline == nil || after.Timeline == nil {
		return Similarity{SharedKernels: 1, SameSteps: true, SameDevices: true}, ""
	}
	kb, ka := kernelNames(before.Timeline), kernelNames(after.Timeline)
	both, either := 0, len(kb)
	for n := range ka {
		if kb[n] {
			both++
		} else {
			either++
		}
	}
	s.SharedKernels = 1
	if either > 0 {
		s.SharedKernels = float64(both) / float64(either)
	}
	s.SameSteps = stepKind(before.Steps.Source) == stepKind(after.Steps.Source)
	db, da := deviceNames(before.Timeline), deviceNames(after.Timeline)
	s.SameDevices = len(db) == 0 || len(da) == 0 || slices.Equal(db, da)
	var why []string
	if s.SharedKernels < MinSharedKernels {
		why = append(why, fmt.Sprintf("%s of their kernel names", units.Pct(s.SharedKernels)))
	}
	if !s.SameSteps {
		why = append(why, fmt.Sprintf("steps from %s vs %s", before.Steps.Source, after.Steps.Source))
	}
	if !s.SameDevices {
		why = append(why, fmt.Sprintf("GPUs %s vs %s", strings.Join(db, ", "), strings.Join(da, ", ")))
	}
	// Kernel names decide: two versions of one program may change how
	// steps are marked or run on another GPU, but keep most kernels.
	if s.SharedKernels >= MinSharedKernels && len(why) < 2 {
		return s, ""
	}
	return s, "the two runs share little (" + strings.Join(why, "; ") + "): they look like different programs, so the step speedup and the finding changes may compare unrelated work"
}

// kernelNames is the set of kernel names of a timeline.
func kernelNames(tl *timeline.Timeline) map[string]bool {
	out := map[string]bool{}
	for i := range tl.Events {
		if e := &tl.Events[i]; e.Kind == timeline.KindKernel && !e.Has(timeline.FlagGraphExec) {
			out[tl.Name(e.Name)] = true
		}
	}
	return out
}

// deviceNames are the sorted distinct GPU model names.
func deviceNames(tl *timeline.Timeline) []string {
	var out []string
	for _, d := range tl.Devices {
		if d.Name != "" && !slices.Contains(out, d.Name) {
			out = append(out, d.Name)
		}
	}
	slices.Sort(out)
	return out
}

// WindowSteps says whether a run's steps are its whole window: the trace
// marks no steps (no ProfilerStep, no repeated range), so its one "step"
// is as long as the capture, and two such step times compare the lengths
// of two captures, not of two steps.
func WindowSteps(a *audit.Analysis) bool { return stepKind(a.Steps.Source) == "window" }

// windowWarning says why no step speedup is given when either run's steps
// are its window, or "".
func windowWarning(before, after *audit.Analysis) string {
	var files []string
	for _, a := range []*audit.Analysis{before, after} {
		if WindowSteps(a) {
			files = append(files, fmt.Sprintf("%s (%s)", filepath.Base(a.File), units.Dur(a.Steps.MedianNS)))
		}
	}
	if len(files) == 0 {
		return ""
	}
	return windowWhy(strings.Join(files, " and "))
}

// windowWhy is the warning for runs (named with their window's length)
// whose one step is their window.
func windowWhy(runs string) string {
	return "no step markers in " + runs + ": the whole window is one step, so its step time is the length of the capture, " +
		"and no step speedup is given; compare the shares, or mark steps in both runs (torch.profiler with prof.step() " +
		"each iteration, or an NVTX range around each iteration)"
}

// stepKind is the step source without GPU pacing.
func stepKind(source string) string { return strings.TrimSuffix(source, " (GPU-paced)") }

// precisionWarning warns when the step speedup x is within what the runs'
// steady steps can tell, or returns "". A run is loose when its mean
// step's standard error exceeds audit.LooseMean; the warning fires when
// the log of x lies within twice the loose runs' shares taken in
// quadrature, and names each loose run with its steps, their range and
// the steps it would need. The speedup is of medians, but a median of a
// handful of steps has no simpler bound than the means' standard errors,
// so those stand in for it, and the warning says so.
func precisionWarning(before, after *audit.Analysis, x float64) string {
	return loosePace(x, run{filepath.Base(before.File), before.Steps}, run{filepath.Base(after.File), after.Steps})
}

// run is a run's steps, named for a warning.
type run struct {
	name  string
	steps audit.StepSummary
}

// loosePace is precisionWarning for the step speedup x of the two runs'
// paces (a file's, or a job's slowest rank's).
func loosePace(x float64, runs ...run) string {
	if x <= 0 {
		return ""
	}
	var loose []string
	var sq float64
	for _, r := range runs {
		p := r.steps.Precision()
		sq += p.Share * p.Share
		if p.Loose() {
			loose = append(loose, fmt.Sprintf("%s (%d steady steps of %s to %s: their mean known to ±%s, about %d steps for ±%s)",
				r.name, p.Steps, units.Dur(p.MinNS), units.Dur(p.MaxNS), units.Pct(p.Share), p.WantSteps, units.Pct(audit.LooseMean)))
		}
	}
	if len(loose) == 0 || math.Abs(math.Log(x)) > 2*math.Sqrt(sq) {
		return ""
	}
	return fmt.Sprintf("the step speedup (%.2fx) is within what these steps can tell, judged by their means' standard errors: "+
		"they spread too far for their count in %s; record more steps before reading a change of this size", x, strings.Join(loose, " and "))
}
