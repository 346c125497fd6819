package audit

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/analyze/comm"
	"github.com/traceaudit/traceaudit/analyze/index"
)

// Collective is one collective instance as the analyze JSON keeps it for the
// job reduce: which step launched it, what it was, and when this rank
// arrived at it and left it. Times are nanoseconds on the trace's clock
// (in a job document, on the job's aligned clock).
type Collective struct {
	// Step is the index in steps.per_step of the step that launched it.
	Step int `json:"step"`
	// Name is the collective ("allreduce", "_allgather_base", ...).
	Name string `json:"name"`
	// Group is the communicator or process group ("" unknown); GroupSize
	// its number of ranks (0 unknown).
	Group     string `json:"group"`
	GroupSize int    `json:"group_size"`
	// Seq is the sequence number on the communicator, where recorded.
	Seq *int64 `json:"seq,omitempty"`
	// Order is its position among the step's collectives on Group, in
	// launch order.
	Order int `json:"order"`
	// Bytes is the message size (0 unknown).
	Bytes int64  `json:"bytes"`
	DType string `json:"dtype,omitempty"`
	// ArrivalNS is when the kernel started (the rank arrived), EndNS when
	// it completed.
	ArrivalNS int64 `json:"arrival_ns"`
	EndNS     int64 `json:"end_ns"`
	// Exposed are the [start, end) parts with no compute kernel running.
	Exposed [][2]int64 `json:"exposed"`
	// Track is the GPU stream.
	Track string `json:"track"`
}

// Identity says which rank, device and process a report is of.
type Identity struct {
	// Rank is the process's rank in its job (where known: distributedInfo,
	// or the order of the processes of one export); WorldSize the job's
	// size as the input records it.
	Rank      *int `json:"rank,omitempty"`
	WorldSize *int `json:"world_size,omitempty"`
	// Device is the lowest GPU the analysed process ran work on; PID the
	// process id of its main thread (as the input records it).
	Device *int64 `json:"device,omitempty"`
	PID    *int64 `json:"pid,omitempty"`
	// MPICalls are the MPI functions the main thread spends the most
	// time in over the steady steps (up to 3, most first): an MPI
	// program's process, whose peers' processes may not be in the input.
	MPICalls []string `json:"mpi_calls,omitempty"`
}

// collectives converts the collective index of a run.
func collectives(cx *comm.Index) []Collective {
	out := make([]Collective, 0, len(cx.Ops))
	for _, o := range cx.Ops {
		c := Collective{Step: o.Step, Name: o.Name, Group: o.Group, GroupSize: o.GroupSize, Order: o.Order,
			Bytes: o.Bytes, DType: o.DType, ArrivalNS: o.Start, EndNS: o.End, Exposed: [][2]int64{}, Track: o.Track}
		if o.Seq >= 0 {
			seq := o.Seq
			c.Seq = &seq
		}
		for _, iv := range o.Exposed {
			c.Exposed = append(c.Exposed, [2]int64{iv.Start, iv.End})
		}
		out = append(out, c)
	}
	return out
}

// identity fills what the timeline says about the process analysed.
func identity(r *Analysis, ix *index.Index) {
	tl := ix.TL
	if d := tl.Dist; d.Known {
		rank := d.Rank
		r.Rank = &rank
		if d.WorldSize > 0 {
			ws := d.WorldSize
			r.WorldSize = &ws
		}
	}
	r.MPICalls = mpiCalls(ix)
	if !tl.Dist.Known && len(r.Collectives) == 0 {
		return // a single-GPU trace: nothing to place in a job
	}
	devs := make([]int64, 0, len(ix.Devices))
	for d := range ix.Devices {
		devs = append(devs, d)
	}
	if len(devs) > 0 {
		d := slices.Min(devs)
		r.Device = &d
	}
	if ix.HasMain {
		pid := tl.Tracks[ix.Main].PID
		r.PID = &pid
	}
}

// mpiCalls are the MPI functions (MPI_*) the main thread spends the most
// time in over the steady steps, up to 3, most first (ties: by name).
func mpiCalls(ix *index.Index) []string {
	if !ix.HasMain {
		return nil
	}
	tl := ix.TL
	by := map[string]int64{}
	for _, i := range tl.Tracks[ix.Main].Events {
		e := &tl.Events[i]
		if name := tl.Name(e.Name); strings.HasPrefix(name, "MPI_") && ix.InSteady(e.Start) {
			by[name] += e.Dur()
		}
	}
	names := slices.Collect(maps.Keys(by))
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(by[b], by[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return names[:min(len(names), 3)]
}
