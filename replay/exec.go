package replay

import (
	"context"
	"errors"
	"fmt"
	"github.com/traceaudit/traceaudit/analyze/model"
	"slices"
	"time"
)

// Options control a run.
type Options struct {
	// Steps is how many steps are measured per variant (after Warmup).
	Steps  int
	Warmup int
	// Progress, if set, is called after each step with steps done and
	// steps in all (over all variants).
	Progress func(done, total int)
}

// ErrTooBig is returned when the plan needs more than half the free device
// memory.
var ErrTooBig = errors.New("the replay needs more than half the free device memory")

// The phases of a replayed step on the main thread (Measured.PhasesNS).
const (
	// PhaseData: getting the batch: building it, waiting for producers,
	// pinning it on the main thread (with a copy stream, also issuing the
	// next batch's copies).
	PhaseData = "data"
	// PhaseCopy: the copy calls (a pageable copy returns once done).
	PhaseCopy = "copy"
	// PhaseRelease: freeing the batch's memory (munmap) after its copy.
	PhaseRelease = "release"
	// PhaseOther: the other host work the trace shows while the GPU idled.
	PhaseOther = "other"
	// PhaseLaunch: launching the compute (the launch-bound kernels at the
	// trace's pace) and the results' copies back.
	PhaseLaunch = "launch"
	// PhaseSync: waiting for the GPU at the step's end, where it syncs.
	PhaseSync = "sync"
)

// Run replays every variant of p on ex, with p.Engine, and returns what
// it measured of each, in the order of p.Variants (step and GPU times, speedups), and the
// box's copy bandwidths at the plan's copy sizes; p is left as it is. It
// stops between steps when ctx is cancelled (Ctrl-C); the caller closes ex.
func Run(ctx context.Context, ex Executor, p *Plan, o Options) (*Box, []Measured, error) {
	if o.Steps <= 0 {
		o.Steps = 10
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	// Every copy has a device buffer in each of the two double-buffer slots.
	need := int64(64 << 20)
	for _, c := range p.Step.Copies {
		need += 2 * c.Bytes
	}
	free, err := ex.FreeMemory()
	if err != nil {
		return nil, nil, err
	}
	if need > free/2 {
		return nil, nil, fmt.Errorf("%w: %d MB needed, %d MB free", ErrTooBig, need>>20, free>>20)
	}
	r, err := newRig(ex, p)
	if err != nil {
		return nil, nil, err
	}
	box, err := r.measureBox()
	if err != nil {
		return nil, nil, fmt.Errorf("measuring copy bandwidth: %w", err)
	}
	if r.kernelGPU > 0 || r.buildNS > 0 {
		if box == nil {
			box = &Box{}
		}
		box.BuildNS, box.UnmapNS, box.KernelNS = max(r.buildNS, 0), max(r.unmapNS, 0), r.kernelGPU.Nanoseconds()
		box.KernelFloorNS, box.KernelGapNS = r.kernelFloor.Nanoseconds(), r.kernelGap.Nanoseconds()
		box.BuildWarmNS = r.buildWarmNS
	}
	// Each variant's schedule, written once (nil: it runs by phases).
	scheds := make([]*model.Schedule, len(p.Variants))
	total := 0
	for i, v := range p.Variants {
		if p.Engine == EngineGraph {
			scheds[i], _ = p.schedule(v.Name)
		}
		if s := scheds[i]; s != nil {
			total += schedulePasses(s, o) * s.Steps
		} else {
			total += o.Steps + o.Warmup
		}
	}
	done := 0
	tick := func() {
		done++
		if o.Progress != nil {
			o.Progress(done, total)
		}
	}
	var kernelAdj time.Duration
	if slices.ContainsFunc(scheds, func(s *model.Schedule) bool { return s != nil }) {
		if kernelAdj, err = r.floorInKernel(); err != nil {
			return nil, nil, fmt.Errorf("measuring the kernel floor: %w", err)
		}
	}
	measured := make([]Measured, len(p.Variants))
	// Variants without a schedule run by phases, and their speedups are
	// over the observed step run by phases too.
	var phaseBase int64
	for i, v := range p.Variants {
		m := &measured[i]
		if s := scheds[i]; s != nil {
			wall, err := runSchedule(ctx, ex, s, o, kernelAdj, tick)
			if err != nil {
				return nil, nil, fmt.Errorf("variant %s: %w", v.Name, err)
			}
			m.StepSamplesNS, m.Engine = wall, EngineGraph
			m.StepNSMedian, m.StepNSMean = median(wall), mean(wall)
			continue
		}
		wall, gpu, phases, err := r.measurePhases(ctx, v.Plan, o, tick)
		if err != nil {
			return nil, nil, fmt.Errorf("variant %s: %w", v.Name, err)
		}
		m.StepSamplesNS, m.GPUSamplesNS, m.PhasesNS, m.Engine = wall, gpu, phases, EnginePhases
		m.StepNSMedian, m.StepNSMean = median(wall), mean(wall)
		m.GPUNSMedian, m.GPUNSMean = median(gpu), mean(gpu)
		if i == 0 {
			phaseBase = m.StepNSMean
		}
	}
	byPhases := slices.ContainsFunc(measured, func(m Measured) bool { return m.Engine == EnginePhases })
	if measured[0].Engine == EngineGraph && byPhases {
		wall, _, _, err := r.measurePhases(ctx, p.Variants[0].Plan, o, func() {})
		if err != nil {
			return nil, nil, fmt.Errorf("variant %s by phases: %w", Observed, err)
		}
		phaseBase = mean(wall)
	}
	for i := range measured {
		m := &measured[i]
		base := measured[0].StepNSMean
		if m.Engine != measured[0].Engine {
			base = phaseBase
		}
		if m.StepNSMean > 0 {
			m.Speedup = float64(base) / float64(m.StepNSMean)
		}
		m.Note = costNote(p.Variants[i].Name, m)
	}
	if p.Engine != EngineGraph {
		for i := range measured {
			measured[i].Engine = "" // one engine: the JSON as it was
		}
	}
	return box, measured, nil
}

// SlowerBelow is the measured speedup under which a fix is reported as
// costing more than it saves (2 % of noise allowed).
const SlowerBelow = 0.98

// costNote says plainly when variant name, measured m, ran slower than
// observed.
func costNote(name string, m *Measured) string {
	if name == Observed || m.Speedup == 0 || m.Speedup >= SlowerBelow {
		return ""
	}
	return fmt.Sprintf("this fix costs more than it saves here: %.2fx, the step takes %.0f %% longer than observed",
		m.Speedup, 100*(1/m.Speedup-1))
}

// timed runs a GPU operation between two events so its GPU time counts.
type timed struct{ a, b Event }

// stepWork is the GPU work a step issued: timed operations, resolved once
// the GPU has run them, plus GPU time known without events (the launch
// phase's kernels, each measured alone).
type stepWork struct {
	k     int
	ops   []timed
	extra time.Duration
}

// gpu resolves and releases w's events and returns its GPU time in ns.
func (w *stepWork) gpu(ex Executor) (int64, error) {
	d := w.extra
	var errs []error
	for _, o := range w.ops {
		e, err := ex.Elapsed(o.a, o.b)
		errs = append(errs, err)
		d += e
	}
	w.release(ex)
	return d.Nanoseconds(), errors.Join(errs...)
}

func (w *stepWork) release(ex Executor) {
	for _, o := range w.ops {
		ex.Release(o.a)
		ex.Release(o.b)
	}
	w.ops = nil
}

func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

func mean(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	var t int64
	for _, x := range v {
		t += x
	}
	return t / int64(len(v))
}
