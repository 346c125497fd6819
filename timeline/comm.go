package timeline

import (
	"cmp"
	"slices"
	"strings"
)

// Communication: collective and point-to-point kernels (NCCL, RCCL, the
// symmetric-memory all-reduce kernels of PyTorch and vLLM) move data
// between GPUs; they are not compute. Such kernels carry FlagComm, and where
// the input records what the collective was (Kineto's "Collective name",
// message size, group, dtype), a Collective.

// Collective describes a communication kernel as the input recorded it.
type Collective struct {
	// Event is the kernel's index in Timeline.Events.
	Event int32
	// Op is the collective's name as recorded ("allreduce", "broadcast",
	// "_allgather_base", "send", ...); see NormOp.
	Op string
	// Group names the communicator or process group ("" unknown).
	Group string
	// GroupSize is the number of ranks in the group (0 unknown).
	GroupSize int
	// Bytes is the message size in bytes, the larger of input and output
	// (the convention of nccl-tests: the gathered output of an all-gather,
	// the input of a reduce-scatter); 0 unknown.
	Bytes int64
	// DType is the element type as recorded ("Float", "BFloat16"; "" unknown).
	DType string
	// Seq is the collective's sequence number on its communicator where the
	// input records one, else -1.
	Seq int64
}

// IsCommKernel reports whether a kernel name is a communication kernel:
// NCCL and RCCL kernels (names starting with nccl or rccl, or holding
// ncclDevKernel / ncclKernel), and the symmetric-memory and custom
// all-reduce kernels of PyTorch and vLLM.
func IsCommKernel(name string) bool {
	if len(name) >= 4 {
		switch strings.ToLower(name[:4]) {
		case "nccl", "rccl":
			return true
		}
	}
	for _, s := range commKernelParts {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

var commKernelParts = []string{
	"ncclDevKernel", "ncclKernel",
	// torch symmetric memory (NVLS multimem, one- and two-shot) and vLLM's
	// custom all-reduce.
	"multimem_all_reduce", "multimem_all_gather", "one_shot_all_reduce", "two_shot_all_reduce",
	"cross_device_reduce",
}

// CommOpFromKernel names the collective a communication kernel performs,
// from its name: "allreduce", "allgather", "reducescatter", "broadcast",
// "reduce", "sendrecv", or "" when the name does not say.
func CommOpFromKernel(name string) string {
	n := strings.ToLower(strings.ReplaceAll(name, "_", ""))
	for _, op := range []struct{ part, op string }{
		{"allreduce", "allreduce"}, {"crossdevicereduce", "allreduce"},
		{"allgather", "allgather"}, {"reducescatter", "reducescatter"},
		{"alltoall", "alltoall"}, {"broadcast", "broadcast"},
		{"sendrecv", "sendrecv"}, {"send", "sendrecv"}, {"recv", "sendrecv"},
	} {
		if strings.Contains(n, op.part) {
			return op.op
		}
	}
	if strings.Contains(n, "kernelreduce") || strings.Contains(n, "devkernelreduce") {
		return "reduce"
	}
	return ""
}

// NormOp folds the spellings of a collective's name into one: Kineto's
// "_allgather_base", "allgather_into_tensor_coalesced" -> "allgather";
// "_reduce_scatter_base" -> "reducescatter"; "all_to_all" -> "alltoall";
// "send", "recv" -> "sendrecv". Unknown names are lowercased without
// underscores.
func NormOp(op string) string {
	n := strings.ToLower(op)
	for _, suf := range []string{"_coalesced", "_base", "_into_tensor", "_tensor", "_single"} {
		n = strings.ReplaceAll(n, suf, "")
	}
	n = strings.ReplaceAll(strings.Trim(n, "_"), "_", "")
	switch n {
	case "send", "recv", "p2p":
		return "sendrecv"
	}
	return n
}

// BusFactor is the factor that turns a collective's algorithm bandwidth
// (bytes / time) into bus bandwidth, as nccl-tests defines it, for a
// group of n ranks: 2(n-1)/n for all-reduce; (n-1)/n for all-gather,
// reduce-scatter and all-to-all; 1 otherwise, and when n is unknown.
func BusFactor(op string, n int) float64 {
	if n <= 1 {
		return 1
	}
	f := float64(n-1) / float64(n)
	switch NormOp(op) {
	case "allreduce":
		return 2 * f
	case "allgather", "reducescatter", "alltoall":
		return f
	}
	return 1
}

// Collective returns the recorded description of communication kernel i,
// if any. Cost: a binary search.
func (tl *Timeline) Collective(i int32) (*Collective, bool) {
	k, ok := slices.BinarySearchFunc(tl.Collectives, i, func(c Collective, i int32) int { return cmp.Compare(c.Event, i) })
	if !ok {
		return nil, false
	}
	return &tl.Collectives[k], true
}

// Distributed is what the input says about the job it belongs to.
type Distributed struct {
	// Known is set when the input recorded its rank.
	Known bool
	// Rank and WorldSize are the process's rank and the job's size
	// (WorldSize 0: unknown).
	Rank, WorldSize int
	// Backend is the communication backend ("nccl", "gloo", ...).
	Backend string
}

// pendingColl is a Collective before Build: its event is found again after
// the sort by its start, track, name and correlation id.
type pendingColl struct {
	c     Collective
	start int64
	track TrackID
	name  NameID
	corr  int64
}

// AddCollective appends a communication kernel with what the input
// recorded about its collective. c.Event is ignored (Build sets it).
func (b *Builder) AddCollective(e Event, c Collective) {
	e.Flags |= FlagComm
	b.colls = append(b.colls, pendingColl{c: c, start: e.Start, track: e.Track, name: e.Name, corr: e.Corr})
	b.Add(e)
}

// placed finds the sorted index of the first event that starts at start
// and matches: where an event added before Build went. Cost: a binary
// search.
func placed(ev []Event, start int64, match func(*Event) bool) (int32, bool) {
	i, _ := slices.BinarySearchFunc(ev, start, func(e Event, t int64) int { return cmp.Compare(e.Start, t) })
	for ; i < len(ev) && ev[i].Start == start; i++ {
		if match(&ev[i]) {
			return int32(i), true
		}
	}
	return 0, false
}

// placeCollectives finds the sorted index of each pending collective's
// kernel. Cost: a binary search each.
func placeCollectives(ev []Event, pend []pendingColl) []Collective {
	out := make([]Collective, 0, len(pend))
	for _, p := range pend {
		if i, ok := placed(ev, p.start, func(e *Event) bool {
			return e.Kind == KindKernel && e.Track == p.track && e.Name == p.name && e.Corr == p.corr
		}); ok {
			c := p.c
			c.Event = i
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(x, y Collective) int { return cmp.Compare(x.Event, y.Event) })
	return slices.CompactFunc(out, func(x, y Collective) bool { return x.Event == y.Event })
}
