// Package profcost measures, on the machine that replays a trace, what
// torch.profiler adds to a trace's host time for each event it records,
// so that a replay of a profiled loop can take the profiler's own time out
// of the host phases it reproduces.
//
// The measurement runs a probe (probe.py, embedded) with the machine's
// Python and PyTorch: two loops of small ops timed on the host without the
// profiler, then recorded under it, each run in a range of its own; the
// cost per event is (the run's length in the exported trace - its length
// without the profiler) / the host events recorded in it. The unprofiled
// loops run first, because a process keeps part of the profiler's cost
// after a session ends; a run's length is the trace's, not the wall
// clock's, because that is what a trace's phases hold.
//
// One cost per event, whatever the event: a cost per class of event would
// come no closer to the traced processes, whose own cost varies as much
// between processes. That spread is what Measure reports (RoundsNS) and
// the replay carries into its notes.
//
// Nsight Systems is not measured: its cost falls on calls it intercepts
// whether or not it records them, so it is not a cost per event of the
// trace.
package profcost

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed probe.py
var probe string

// Timeout bounds one measurement: importing torch, starting CUDA and the
// probe's rounds take 4 to 13 s a process on an H200 box.
const Timeout = 120 * time.Second

// Ops is the number of ops of each probe loop, Rounds the interleaved
// rounds of plain and profiled runs.
const (
	Ops    = 1000
	Rounds = 5
)

// Cost is torch.profiler's host cost per recorded event, measured here.
type Cost struct {
	// EventNS is the median cost per event, in ns: of the rounds in one
	// process (Parse), of the processes' medians (Measure).
	EventNS int64 `json:"event_ns"`
	// RoundsNS are each round's (Parse) or each process's (Measure) cost
	// per event, in ns.
	RoundsNS []int64 `json:"rounds_ns"`
	// Events is how many host events the profiler recorded in one round
	// of the probe's loops.
	Events int `json:"events"`
	// Torch is the PyTorch version that was measured.
	Torch string `json:"torch"`
}

// Measure runs the probe with python (a path, or a name looked up on
// PATH) in Processes processes, one after the other, and gives the median
// of their costs per event; RoundsNS holds each process's.
func Measure(ctx context.Context, python string) (Cost, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var all Cost
	for range Processes {
		c, err := measureOnce(ctx, python)
		if err != nil {
			return Cost{}, err
		}
		all.RoundsNS = append(all.RoundsNS, c.EventNS)
		all.Events, all.Torch = c.Events, c.Torch
	}
	all.EventNS = median(all.RoundsNS)
	if all.EventNS <= 0 {
		return Cost{}, fmt.Errorf("the profiler cost nothing measurable here (%v ns per event in %d processes)", all.RoundsNS, len(all.RoundsNS))
	}
	return all, nil
}

// median is the middle of ns (the lower one of an even count).
func median(ns []int64) int64 {
	s := slices.Clone(ns)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// Processes is how many processes Measure runs the probe in: most of the
// spread of the cost per event is between processes, not between the
// rounds of one.
const Processes = 3

// measureOnce runs the probe in one process.
func measureOnce(ctx context.Context, python string) (Cost, error) {
	cmd := exec.CommandContext(ctx, python, "-c", probe, strconv.Itoa(Ops), strconv.Itoa(Rounds))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return Cost{}, fmt.Errorf("%s: the probe ran past %s", python, Timeout)
		case errors.As(err, &ee):
			return Cost{}, fmt.Errorf("%s: the probe failed (%v): %s", python, err, lastLine(stderr.String()))
		}
		return Cost{}, err
	}
	c, err := Parse(out)
	if err != nil {
		return Cost{}, fmt.Errorf("%s: %w", python, err)
	}
	return c, nil
}

// Parse reads the probe's output: its last non-empty line, a JSON object.
// Its cost may be zero or negative (Measure judges the processes together).
func Parse(out []byte) (Cost, error) {
	line := lastLine(string(out))
	if line == "" {
		return Cost{}, errors.New("the probe printed nothing")
	}
	var doc struct {
		Error  string    `json:"error"`
		Torch  string    `json:"torch"`
		Events int       `json:"events"`
		Rounds []float64 `json:"event_ns_rounds"`
	}
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		return Cost{}, fmt.Errorf("the probe's output is not JSON: %q", line)
	}
	if doc.Error != "" {
		return Cost{}, errors.New(doc.Error)
	}
	if doc.Events <= 0 || len(doc.Rounds) == 0 {
		return Cost{}, fmt.Errorf("the probe recorded no events (%q)", line)
	}
	c := Cost{Torch: doc.Torch, Events: doc.Events}
	for _, r := range doc.Rounds {
		c.RoundsNS = append(c.RoundsNS, int64(math.Round(r)))
	}
	// A process can measure nothing, or less than nothing: its loops ran
	// slower unprofiled than under the profiler. That is the spread between
	// processes, which Measure keeps; only a median of nothing is no
	// measurement.
	c.EventNS = median(c.RoundsNS)
	return c, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
