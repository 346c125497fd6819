// Package comm indexes the collectives of a run, once, for the
// communication analyzers (comm-exposed, comm-wait), the analyze JSON's
// per-step collective records and the job reduce: each communication kernel
// on the analysed devices, the step whose host launched it, its position on
// its communicator within that step, its bytes and bus bandwidth, the part
// of it with no compute kernel beside it, and the wait one trace alone can
// bound.
//
// Cost: O(c log c + c·k) for c collectives, k of them sharing a name and
// group (the floor search), plus an interval subtraction per collective.
package comm

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// Analyzer computes the *Index. It reports nothing.
var Analyzer = &analyze.Analyzer{
	ID:    "index-comm",
	Title: "collective index",
	Doc: `index-comm lists the communication kernels of the analysed devices with the
step that launched them, their order on their communicator, bytes, bus
bandwidth, exposed time and the wait one trace can bound.
Cost: O(c log c) in collectives.`,
	Requires: []*analyze.Analyzer{index.Analyzer},
	Run:      func(p *analyze.Pass) (any, error) { return New(p.ResultOf[index.Analyzer].(*index.Index)), nil },
}

// Op is one collective instance: a communication kernel.
type Op struct {
	// Event is the kernel's index in the timeline.
	Event int32
	// Step is the index in Index.Steps (all steps, start-up included) of
	// the step whose host launched the kernel (by kernel start where the
	// trace has no launch calls); -1 when none did.
	Step int
	// Steady is set when Step is a steady step.
	Steady bool
	// Name is the collective as recorded ("allreduce", "_allgather_base"),
	// else as the kernel's name says ("allreduce"), else the kernel name.
	Name string
	// Kernel is the kernel's name.
	Kernel string
	// Group is the communicator or process group ("" unknown).
	Group string
	// GroupSize is the number of ranks in the group (0 unknown).
	GroupSize int
	// Seq is the sequence number on the communicator where recorded, else -1.
	Seq int64
	// Order is the position of the collective among those its step
	// launched on the same Group, in launch order (0-based; -1 without a step).
	Order int
	// Bytes is the message size (0 unknown); DType its element type.
	Bytes int64
	DType string
	// Start and End are the kernel's run on the GPU: Start is when this
	// rank arrived at the collective, End when it completed.
	Start, End int64
	// Exposed are the parts of [Start, End) with no compute kernel running.
	Exposed ivl.Set
	// Track labels the GPU stream.
	Track string
	// FloorNS is the shortest run of the same collective on the same group
	// moving at least as many bytes (0: bytes unknown); WaitNS the exposed
	// part of the run's first Dur - FloorNS nanoseconds inside the steady
	// steps: time waiting for peers that one trace alone can show.
	FloorNS, WaitNS int64
}

// Dur is the kernel's run time.
func (o *Op) Dur() int64 { return o.End - o.Start }

// BusGBps is the achieved bus bandwidth in GB/s (nccl-tests' definition;
// the algorithm bandwidth when the group size is unknown), 0 when the
// bytes are unknown.
func (o *Op) BusGBps() float64 {
	if o.Bytes <= 0 || o.Dur() <= 0 {
		return 0
	}
	return float64(o.Bytes) / float64(o.Dur()) * timeline.BusFactor(o.Name, o.GroupSize)
}

// Describe names the collective for evidence: "allreduce of 2.05 MB
// (Float, group 0 of 2 ranks) ran 208 ms at 0.00986 GB/s bus bandwidth
// (ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)".
func (o *Op) Describe() string {
	s := o.Name
	if o.Bytes > 0 {
		s += " of " + units.Bytes(o.Bytes)
	}
	var meta []string
	if o.DType != "" {
		meta = append(meta, o.DType)
	}
	switch {
	case o.Group != "" && o.GroupSize > 0:
		meta = append(meta, fmt.Sprintf("group %s of %d ranks", o.Group, o.GroupSize))
	case o.Group != "":
		meta = append(meta, "group "+o.Group)
	}
	if len(meta) > 0 {
		s += " (" + strings.Join(meta, ", ") + ")"
	}
	s += " ran " + units.Dur(o.Dur())
	if bw := o.BusGBps(); bw > 0 {
		s += " at " + GBps(bw) + " bus bandwidth"
	}
	if o.Kernel != o.Name {
		s += " (" + units.Clip(o.Kernel, 60) + ")"
	}
	return s
}

// GBps formats a bandwidth given in GB/s: "17.9 GB/s".
func GBps(gbps float64) string { return units.GBps(int64(math.Round(gbps*1e9)), 1e9) + " GB/s" }

// Index is the result.
type Index struct {
	// Ops are the collectives launched in a step, in launch order.
	Ops []Op
	// Unplaced counts communication kernels no step launched (queued before
	// the capture, or outside the steps).
	Unplaced int
	// SizesKnown is set when some collective has its bytes recorded.
	SizesKnown bool
}

// Steady returns the collectives of steady steps.
func (c *Index) Steady() []*Op {
	var out []*Op
	for i := range c.Ops {
		if c.Ops[i].Steady {
			out = append(out, &c.Ops[i])
		}
	}
	return out
}

// SizesUnknown reports whether the run has collectives and none of them
// has its message size recorded (nsys exports, Kineto before 2024): what
// needs sizes cannot be judged from this trace alone.
func (c *Index) SizesUnknown() bool { return len(c.Ops) > 0 && !c.SizesKnown }

// New indexes the collectives of ix's run.
func New(ix *index.Index) *Index {
	tl := ix.TL
	c := &Index{}
	type launched struct {
		op     Op
		launch int64
	}
	var ls []launched
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind != timeline.KindKernel || !e.Has(timeline.FlagComm) || !ix.OnDevices(e) {
			continue
		}
		at := e.Start
		switch {
		case e.Link >= 0:
			at = tl.Events[e.Link].Start
		case tl.Observed.APICalls:
			c.Unplaced++ // launched before the capture began
			continue
		}
		step := stepAt(ix.Steps, at)
		if step < 0 {
			c.Unplaced++
			continue
		}
		kernel := tl.Name(e.Name)
		op := Op{Event: int32(i), Step: step, Steady: isSteady(ix, step), Kernel: kernel, Seq: -1,
			Start: e.Start, End: e.End, Track: ix.Label(e.Track)}
		op.Name = timeline.CommOpFromKernel(kernel)
		if rec, ok := tl.Collective(int32(i)); ok {
			op.Name, op.Group, op.GroupSize, op.Seq, op.Bytes, op.DType = rec.Op, rec.Group, rec.GroupSize, rec.Seq, rec.Bytes, rec.DType
		}
		if op.Name == "" {
			op.Name = kernel
		}
		if op.Bytes > 0 {
			c.SizesKnown = true
		}
		op.Exposed = ivl.Set{{Start: e.Start, End: e.End}}.Subtract(ix.Kernels)
		ls = append(ls, launched{op, at})
	}
	slices.SortStableFunc(ls, func(a, b launched) int { return cmp.Compare(a.launch, b.launch) })
	c.Ops = make([]Op, len(ls))
	type onGroup struct {
		step  int
		group string
	}
	order := map[onGroup]int{}
	for i, l := range ls {
		c.Ops[i] = l.op
		k := onGroup{l.op.Step, l.op.Group}
		c.Ops[i].Order = order[k]
		order[k]++
	}
	c.floors(ix.SteadySet)
	return c
}

// floors sets FloorNS and WaitNS: a collective moving no more bytes than
// another of the same name and group on the same link takes no longer than
// it, so anything beyond the fastest such run is waiting. A lower bound:
// a run that always waits shows no wait here. Only waits inside steady
// (the steady steps' windows) count.
func (c *Index) floors(steady ivl.Set) {
	type key struct{ name, group string }
	by := map[key][]int{}
	for i := range c.Ops {
		if o := &c.Ops[i]; o.Bytes > 0 {
			k := key{timeline.NormOp(o.Name), o.Group}
			by[k] = append(by[k], i)
		}
	}
	for _, idx := range by {
		// By bytes descending: the floor of a size is the shortest run
		// among those at least as large.
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(c.Ops[b].Bytes, c.Ops[a].Bytes) })
		best := int64(-1)
		for j := 0; j < len(idx); {
			k := j
			for k < len(idx) && c.Ops[idx[k]].Bytes == c.Ops[idx[j]].Bytes {
				if d := c.Ops[idx[k]].Dur(); best < 0 || d < best {
					best = d
				}
				k++
			}
			for _, i := range idx[j:k] {
				o := &c.Ops[i]
				o.FloorNS = max(best, 0)
				if w := o.Dur() - o.FloorNS; w > 0 {
					o.WaitNS = o.Exposed.Intersect(steady).Covered(o.Start, o.Start+w)
				}
			}
			j = k
		}
	}
}

// stepAt is the index of the step whose window holds t, or -1.
func stepAt(steps []index.Step, t int64) int {
	k := sort.Search(len(steps), func(i int) bool { return steps[i].Start > t }) - 1
	if k >= 0 && t < steps[k].End {
		return k
	}
	return -1
}

// isSteady reports whether ix.Steps[k] is a steady step.
func isSteady(ix *index.Index, k int) bool {
	s := ix.Steps[k]
	return !s.Startup && !s.Teardown && ix.InSteady(s.Start)
}
