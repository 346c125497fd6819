package ingest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// ErrNoGPUWork is wrapped by Usable's error: the trace holds no kernel and
// no copy, so there is nothing to analyse.
var ErrNoGPUWork = errors.New("no GPU kernel or copy in the trace")

// Usable applies design.md's one exit rule: a trace with no kernel and no
// memcpy (memsets, API calls and ranges do not count), in either format,
// is unusable. The *Error says what the trace holds and what to capture:
// the categories of device events it does not read, "kernel activity not
// recorded" when it holds kernel launches without kernels, else how to
// record GPU activity.
func Usable(tl *timeline.Timeline) error {
	if err := plausibleTimes(tl); err != nil {
		return err
	}
	var kernels, copies, memsets, launches, apis, ranges, ops, oscalls int
	for i := range tl.Events {
		e := &tl.Events[i]
		switch e.Kind {
		case timeline.KindKernel:
			kernels++
		case timeline.KindMemcpy:
			copies++
		case timeline.KindMemset:
			memsets++
		case timeline.KindAPI:
			apis++
			if e.API == timeline.APILaunch {
				launches++
			}
		case timeline.KindRange:
			ranges++
		case timeline.KindOp:
			ops++
		case timeline.KindOS:
			oscalls++
		}
	}
	if kernels > 0 || copies > 0 {
		return nil
	}
	var holds []string
	add := func(n int, what string) {
		if n > 0 {
			holds = append(holds, units.Count(n)+" "+what)
		}
	}
	add(apis, "API calls")
	add(ranges, "ranges")
	add(ops, "host operators")
	add(oscalls, "OS calls")
	add(memsets, "memsets")
	unread := unreadCategories(tl.Unread)
	if unread != "" {
		holds = append(holds, "device events in categories traceaudit does not read: "+unread)
	}
	what := "nothing"
	if len(holds) > 0 {
		what = strings.Join(holds, ", ")
	}
	e := &Error{Path: tl.Source.Path, Err: fmt.Errorf("%w: it holds %s", ErrNoGPUWork, what)}
	switch {
	case unread != "":
		e.Hint = "traceaudit reads NVIDIA CUDA and AMD ROCm GPU activity (kernel, gpu_memcpy); a trace of another accelerator cannot be analysed"
	case launches > 0:
		e.Err = fmt.Errorf("%w: kernel activity not recorded: %s kernel launches but no kernel executions (it holds %s)", ErrNoGPUWork, units.Count(launches), what)
		e.Hint = "record kernel activity: nsys profile --trace=cuda (not a CUPTI counter or API-only capture), or torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])"
	default:
		e.Hint = "capture GPU activity: nsys profile --trace=cuda,nvtx,osrt, or torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])"
	}
	return e
}

// MaxSpanNS is the longest span of events a trace may have: no profiler
// capture runs for a week, so a wider span is a corrupt timestamp or a file
// that merges unrelated traces.
const MaxSpanNS = 7 * 24 * 3600 * 1_000_000_000

// plausibleTimes refuses a timeline with a negative timestamp (profilers
// count from a session or clock start) or one spanning more than
// MaxSpanNS, naming the events at its two ends.
func plausibleTimes(tl *timeline.Timeline) error {
	lo, hi := tl.Span()
	if lo >= 0 && hi-lo <= MaxSpanNS {
		return nil
	}
	// Events are sorted by start: the first starts the span; the last end
	// is looked up only to name it.
	first, last := 0, 0
	for i := range tl.Events {
		if tl.Events[i].End == hi {
			last = i
			break
		}
	}
	name := func(i int) string {
		return fmt.Sprintf("%s %q", tl.Events[i].Kind, units.Clip(tl.Name(tl.Events[i].Name), 60))
	}
	switch {
	case lo < 0:
		return &Error{Path: tl.Source.Path, Err: fmt.Errorf("timestamps out of range: %s starts at %d ns, before the clock's start (a corrupt timestamp)", name(first), lo)}
	case hi-lo > MaxSpanNS:
		return &Error{Path: tl.Source.Path, Err: fmt.Errorf("timestamps out of range: the events span %s, from %s to %s (a corrupt timestamp, or unrelated traces merged in one file)",
			units.Dur(hi-lo), name(first), name(last))}
	}
	return nil
}

// unreadCategories lists the unread categories, most events first, with
// their counts.
func unreadCategories(m map[string]int) string {
	return units.TopCounts(m, 3, func(k string, n int) string { return fmt.Sprintf("%s (%s events)", k, units.Count(n)) })
}
