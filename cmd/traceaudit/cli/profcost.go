package cli

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/traceaudit/traceaudit/ingest/chrome"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/replay"
	"github.com/traceaudit/traceaudit/replay/profcost"
)

// profilerCost is `replay --profiler-cost`: "auto" (measure torch.profiler's
// cost per recorded event here, for a PyTorch profiler trace), "off", or a
// duration per event; or `--unprofiled-step`, the loop's step without the
// profiler, from which the cost follows.
type profilerCost struct {
	mode   string
	fixed  time.Duration
	python string
	// step is --unprofiled-step: the loop's mean step without the
	// profiler, as the user measured it (0: not given).
	step time.Duration
}

// MaxEventNS is the most that --unprofiled-step attributes to each
// recorded event: more than any profiler was measured to cost
// (docs/calibration.md), so a larger difference per event is the cost of
// what the trace did not record, and is spread over the host phases
// instead.
const MaxEventNS = 20_000

// offline says the cost is known without measuring it here (a dry run
// applies it too).
func (c *profilerCost) offline() bool { return c.fixed > 0 || c.step > 0 }

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
	case c.step > 0:
		c.fromStep(p, warn)
		return
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

// fromStep takes out of plan p the difference between the trace's mean
// step and the unprofiled step the user measured (--unprofiled-step):
// spread evenly over the events the trace recorded in the host phases that
// LessProfiler shortens, or, where those are too few to carry it (more
// than MaxEventNS each: an nsys export records no CPU operators),
// over the host phases in proportion to their length (LessHostTime). A
// step that is not the shorter takes nothing out and says so on warn.
func (c *profilerCost) fromStep(p *replay.Plan, warn func(string)) {
	given, trace, n := c.step.Nanoseconds(), p.ObservedStepMeanNS, int64(p.HostPhaseEvents())
	flag := "--unprofiled-step " + units.Dur(given)
	p.GivenStepNS = given
	if given >= trace {
		warn(fmt.Sprintf("%s is not shorter than the trace's mean step (%s): no profiler's cost to take out; the replay keeps the trace's host phases", flag, units.Dur(trace)))
		return
	}
	diff := trace - given
	if n > 0 && diff/n <= MaxEventNS {
		p.LessProfiler(diff/n, fmt.Sprintf("from %s: the trace's %s mean step less it, over the %d events recorded in its host phases", flag, units.Dur(trace), n))
	} else {
		why := "it records no CPU operators or API calls there"
		if n > 0 {
			why = fmt.Sprintf("its %d events there would carry %s each, more than a profiler costs (%s at most)", n, units.Dur(diff/n), units.Dur(MaxEventNS))
		}
		p.LessHostTime(diff, fmt.Sprintf("from %s: the trace's %s mean step less it, spread over its host phases by their length (%s)", flag, units.Dur(trace), why))
	}
	if p.Profiler != nil {
		p.Profiler.UnprofiledStepNS = given
	}
}

// stepFlag is --unprofiled-step's value: a duration ("37ms"), or a rate of
// steps ("27it/s", "27/s": the iterations a second that a progress bar
// shows), which it turns into the mean step it stands for.
type stepFlag struct{ d *time.Duration }

func (f stepFlag) String() string {
	if f.d == nil || *f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f stepFlag) Type() string { return "duration|rate" }

func (f stepFlag) Set(s string) error {
	if rate, ok := strings.CutSuffix(s, "/s"); ok {
		rate = strings.TrimSuffix(rate, "it")
		r, err := strconv.ParseFloat(rate, 64)
		if err != nil || !(r > 0) || math.IsInf(r, 0) {
			return fmt.Errorf("want a rate of steps such as 27it/s")
		}
		if *f.d = time.Duration(float64(time.Second) / r); *f.d <= 0 {
			return fmt.Errorf("%s is faster than a step a nanosecond", s)
		}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 37ms or a rate such as 27it/s")
	}
	*f.d = d
	return nil
}

func durs(ns []int64) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = units.Dur(n)
	}
	return strings.Join(s, ", ")
}
