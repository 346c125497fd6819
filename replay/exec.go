package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
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

// Run replays every variant of p on ex and fills in their measured step
// and GPU times and speedups. It stops between steps when ctx is cancelled
// (Ctrl-C); the caller closes ex.
func Run(ctx context.Context, ex Executor, p *Plan, o Options) error {
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
		return err
	}
	if need > free/2 {
		return fmt.Errorf("%w: %d MB needed, %d MB free", ErrTooBig, need>>20, free>>20)
	}
	r, err := newRig(ex, p)
	if err != nil {
		return err
	}
	total := len(p.Variants) * (o.Steps + o.Warmup)
	done := 0
	for i := range p.Variants {
		v := &p.Variants[i]
		wall, gpu, err := r.measure(ctx, v.Plan, o, func() {
			done++
			if o.Progress != nil {
				o.Progress(done, total)
			}
		})
		if err != nil {
			return fmt.Errorf("replay %s: %w", v.Name, err)
		}
		v.StepNSMedian, v.GPUNSMedian = median(wall), median(gpu)
	}
	base := p.Variants[0].StepNSMedian
	for i := range p.Variants {
		if s := p.Variants[i].StepNSMedian; s > 0 {
			p.Variants[i].Speedup = float64(base) / float64(s)
		}
	}
	return nil
}

// rig holds what every variant shares: streams, device buffers, the
// calibrated fill speed.
type rig struct {
	ex      Executor
	p       *Plan
	compute Stream
	copies  Stream
	// dev[slot][i] is the device buffer of copy i for double-buffer slot.
	dev [2][]DeviceBuffer
	// fillNSPerByte is how long writing fresh host memory takes here.
	fillNSPerByte float64
	// hooks observe the host side in tests.
	hooks struct {
		produce func(worker int)
		// mapped runs for every batch mapping made; unmap for every one
		// released, with step true when the main loop releases a step's
		// batch after its copy (the observed munmap), false when the loop
		// ends and drains what producers had prefetched.
		mapped func()
		unmap  func(step bool)
	}
}

func newRig(ex Executor, p *Plan) (*rig, error) {
	r := &rig{ex: ex, p: p}
	var err error
	if r.compute, err = ex.NewStream(); err != nil {
		return nil, err
	}
	if r.copies, err = ex.NewStream(); err != nil {
		return nil, err
	}
	for slot := range r.dev {
		for _, c := range p.Step.Copies {
			b, err := ex.AllocDevice(c.Bytes)
			if err != nil {
				return nil, err
			}
			r.dev[slot] = append(r.dev[slot], b)
		}
	}
	r.fillNSPerByte = calibrateFill()
	return r, nil
}

// calibrateFill measures how long writing a fresh 32 MiB mapping takes.
func calibrateFill() float64 {
	const n = 32 << 20
	m, err := newMapping(n, false)
	if err != nil {
		return 0.1 // 10 GB/s
	}
	defer m.unmap()
	t0 := time.Now()
	fill(m.b, 1)
	return float64(time.Since(t0).Nanoseconds()) / n
}

// mainFills says whether the observed data phase is long enough to have
// written the batch: otherwise the batch was made elsewhere (worker
// processes) or reused, and the data phase is host work alone.
func (r *rig) mainFills() bool {
	return float64(r.p.Step.DataNS) >= float64(r.p.Step.BatchBytes())*r.fillNSPerByte
}

// measure runs one variant and returns per-step wall and GPU times in ns.
func (r *rig) measure(ctx context.Context, s Setup, o Options, tick func()) (wall, gpu []int64, err error) {
	l, err := newLoop(ctx, r, s)
	if err != nil {
		return nil, nil, err
	}
	defer l.close()
	if s.CopyStream {
		if err := l.prefetch(0); err != nil {
			return nil, nil, err
		}
	}
	for k := 0; k < o.Warmup+o.Steps; k++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("interrupted: %w", err)
		}
		t0 := time.Now()
		g, err := l.step(k)
		if err != nil {
			return nil, nil, err
		}
		if k >= o.Warmup {
			wall = append(wall, time.Since(t0).Nanoseconds())
			gpu = append(gpu, g)
		}
		tick()
	}
	return wall, gpu, nil
}

// timed runs a GPU operation between two events so its GPU time counts.
type timed struct{ a, b Event }

func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// pool hands out reusable host batches.
type pool struct {
	mu   sync.Mutex
	free []*batch
}

func (p *pool) get() *batch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		return b
	}
	return nil
}

func (p *pool) put(b *batch) {
	p.mu.Lock()
	p.free = append(p.free, b)
	p.mu.Unlock()
}
