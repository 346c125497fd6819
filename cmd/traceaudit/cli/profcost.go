package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/traceaudit/traceaudit/ingest/chrome"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/replay"
	"github.com/traceaudit/traceaudit/replay/profcost"
)

// profilerCost is `replay --profiler-cost`: "auto" (measure torch.profiler's
// cost per recorded event here, for a PyTorch profiler trace), "off", or a
// duration per event.
type profilerCost struct {
	mode   string
	fixed  time.Duration
	python string
}

func (c *profilerCost) parse() error {
	switch c.mode {
	case "auto", "off":
		return nil
	}
	d, err := time.ParseDuration(c.mode)
	if err != nil || d <= 0 || d > time.Millisecond {
		return usagef("--profiler-cost %s: want auto, off, or a duration per recorded event such as 1.5us", c.mode)
	}
	c.fixed = d
	return nil
}

// apply takes the profiler's cost out of plan p of a trace read from
// format: a fixed cost as given, or in auto mode for a Chrome trace whose
// host phases hold recorded events, torch.profiler's cost measured here.
// A measurement that fails leaves the plan as it is and says why on warn;
// status says what is being measured (a terminal shows it: the probe
// takes 10 to 40 s).
func (c *profilerCost) apply(ctx context.Context, p *replay.Plan, format string, warn, status func(string)) {
	switch {
	case c.mode == "off" || p.HostPhaseEvents() == 0:
		return
	case c.fixed > 0:
		p.LessProfiler(c.fixed.Nanoseconds(), "--profiler-cost "+c.mode)
		return
	case format != chrome.Format:
		return
	}
	status(fmt.Sprintf("measuring torch.profiler's cost per recorded event with %s (%d processes)", c.python, profcost.Processes))
	cost, err := profcost.Measure(ctx, c.python)
	if err != nil {
		warn(fmt.Sprintf("torch.profiler's cost per event could not be measured here (%v): the replay keeps the profiler's time in the host phases; give it with --profiler-cost DURATION", oneLine(err.Error())))
		return
	}
	p.LessProfilerRange(cost.EventNS, slices.Min(cost.RoundsNS), slices.Max(cost.RoundsNS), fmt.Sprintf("measured here with torch %s, the median of %d processes: %s", cost.Torch, len(cost.RoundsNS), durs(cost.RoundsNS)))
}

func durs(ns []int64) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = units.Dur(n)
	}
	return strings.Join(s, ", ")
}
