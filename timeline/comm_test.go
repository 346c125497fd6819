package timeline

import (
	"math"
	"testing"
)

func TestIsCommKernel(t *testing.T) {
	cases := []struct {
		name string
		comm bool
		op   string
	}{
		{"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", true, "allreduce"},
		{"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", true, "allreduce"},
		{"ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", true, "broadcast"},
		{"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", true, "sendrecv"},
		{"ncclDevKernel_SendRecv", true, "sendrecv"},
		{"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", true, "allgather"},
		{"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", true, "reducescatter"},
		{"ncclDevKernel_Reduce_Sum_f32_RING_LL", true, "reduce"},
		{"rcclKernel_AllReduce", true, "allreduce"},
		{"void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 8>(...)", true, "allreduce"},
		{"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)", true, "allreduce"},
		{"volta_sgemm_128x64_nn", false, ""},
		{"void at::native::reduce_kernel<512, 1>(...)", false, ""},
		{"triton_poi_fused_add_0", false, ""},
		{"nc", false, ""},
	}
	for _, c := range cases {
		if got := IsCommKernel(c.name); got != c.comm {
			t.Errorf("IsCommKernel(%q) = %v, want %v", c.name, got, c.comm)
		}
		if c.comm {
			if got := CommOpFromKernel(c.name); got != c.op {
				t.Errorf("CommOpFromKernel(%q) = %q, want %q", c.name, got, c.op)
			}
		}
	}
}

func TestNormOpAndBusFactor(t *testing.T) {
	for in, want := range map[string]string{
		"allreduce": "allreduce", "_allgather_base": "allgather", "allgather_into_tensor_coalesced": "allgather",
		"_reduce_scatter_base": "reducescatter", "reduce_scatter_tensor_coalesced": "reducescatter",
		"all_to_all": "alltoall", "all_to_all_single": "alltoall", "send": "sendrecv", "recv": "sendrecv", "broadcast": "broadcast",
	} {
		if got := NormOp(in); got != want {
			t.Errorf("NormOp(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		op   string
		n    int
		want float64
	}{
		{"allreduce", 2, 1}, {"allreduce", 8, 1.75}, {"_allgather_base", 8, 0.875},
		{"reducescatter", 4, 0.75}, {"broadcast", 8, 1}, {"allreduce", 0, 1}, {"allreduce", 1, 1},
	} {
		if got := BusFactor(c.op, c.n); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("BusFactor(%q, %d) = %v, want %v", c.op, c.n, got, c.want)
		}
	}
}

// Build flags communication kernels by name, and keeps the collective
// records of AddCollective attached to their kernels through the sort.
func TestBuildCollectives(t *testing.T) {
	b := NewBuilder(Source{Path: "x"})
	s := b.GPUTrack(0, 7)
	unused := b.GPUTrack(0, 9) // dropped: remaps track ids before the sort
	_ = unused
	h := b.HostTrack(1, 1)
	gemm, ar := b.Intern("sgemm"), b.Intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL")
	b.Add(Event{Kind: KindKernel, Name: gemm, Track: s, Start: 0, End: 50, Corr: 1})
	b.AddCollective(Event{Kind: KindKernel, Name: ar, Track: s, Start: 300, End: 400, Corr: 3},
		Collective{Op: "allreduce", Bytes: 4096, GroupSize: 2, Group: "0", DType: "Float", Seq: -1})
	b.Add(Event{Kind: KindKernel, Name: ar, Track: s, Start: 100, End: 200, Corr: 2}) // named only
	b.Add(Event{Kind: KindAPI, Name: b.Intern("cudaLaunchKernel"), Track: h, Start: 250, End: 260, Corr: 3})
	tl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	var comm []int32
	for i := range tl.Events {
		if tl.Events[i].Has(FlagComm) {
			comm = append(comm, int32(i))
		}
	}
	if len(comm) != 2 || tl.Events[comm[0]].Start != 100 || tl.Events[comm[1]].Start != 300 {
		t.Fatalf("comm kernels %v", comm)
	}
	if _, ok := tl.Collective(comm[0]); ok {
		t.Errorf("kernel named only has a collective record")
	}
	c, ok := tl.Collective(comm[1])
	if !ok || c.Op != "allreduce" || c.Bytes != 4096 || c.Group != "0" || c.Event != comm[1] {
		t.Fatalf("collective %+v %v", c, ok)
	}
	if _, ok := tl.Collective(0); ok || tl.Events[0].Has(FlagComm) {
		t.Errorf("sgemm is not communication")
	}
}

func TestValidateCollectives(t *testing.T) {
	b := NewBuilder(Source{Path: "x"})
	s := b.GPUTrack(0, 7)
	b.AddCollective(Event{Kind: KindKernel, Name: b.Intern("nccl"), Track: s, Start: 0, End: 5}, Collective{Op: "allreduce"})
	tl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	tl.Collectives[0].Event = 3
	if tl.Validate() == nil {
		t.Error("collective pointing past the events accepted")
	}
	tl.Collectives[0].Event = 0
	tl.Events[0].Kind = KindMemset
	if tl.Validate() == nil {
		t.Error("communication flag on a memset accepted")
	}
}

// ForProcess keeps one process's host threads and GPU work, with links
// and collectives renumbered; GPUProcesses orders processes by device.
func TestForProcess(t *testing.T) {
	b := NewBuilder(Source{Path: "x"})
	h1, h2 := b.HostTrack(100, 1), b.HostTrack(200, 2)
	g0, g1 := b.GPUTrack(0, 7), b.GPUTrack(1, 7)
	b.AddDevice(Device{ID: 0, Name: "a"})
	b.AddDevice(Device{ID: 1, Name: "b"})
	launch, k, nccl := b.Intern("cudaLaunchKernel"), b.Intern("k"), b.Intern("ncclDevKernel_AllReduce")
	// Process 200 runs on GPU 0, process 100 on GPU 1; both use corr 5.
	b.Add(Event{Kind: KindAPI, Name: launch, Track: h2, Start: 0, End: 1, Corr: 5, Proc: 200})
	b.Add(Event{Kind: KindKernel, Name: k, Track: g0, Start: 2, End: 3, Corr: 5, Proc: 200})
	b.Add(Event{Kind: KindAPI, Name: launch, Track: h1, Start: 1, End: 2, Corr: 5, Proc: 100})
	b.Add(Event{Kind: KindKernel, Name: k, Track: g1, Start: 3, End: 4, Corr: 5, Proc: 100})
	b.AddCollective(Event{Kind: KindKernel, Name: nccl, Track: g1, Start: 5, End: 9, Proc: 100}, Collective{Op: "allreduce", Seq: 4})
	b.Add(Event{Kind: KindRange, Name: b.Intern("step"), Track: h1, Start: 0, End: 10})
	tl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ps := tl.GPUProcesses()
	if len(ps) != 2 || ps[0].PID != 200 || ps[1].PID != 100 || ps[0].Devices[0] != 0 || ps[1].Devices[0] != 1 {
		t.Fatalf("processes %+v", ps)
	}
	p := tl.ForProcess(100)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != 4 || len(p.Tracks) != 2 || len(p.Devices) != 1 || p.Devices[0].ID != 1 {
		t.Fatalf("process 100: %d events, %d tracks, devices %+v", len(p.Events), len(p.Tracks), p.Devices)
	}
	for i := range p.Events {
		e := &p.Events[i]
		if e.Kind == KindKernel && e.Corr == 5 && (e.Link < 0 || p.Events[e.Link].Proc != 100) {
			t.Errorf("kernel lost its launch: link %d", e.Link)
		}
	}
	if len(p.Collectives) != 1 || p.Collectives[0].Seq != 4 || !p.Events[p.Collectives[0].Event].Has(FlagComm) {
		t.Errorf("collectives %+v", p.Collectives)
	}
	if q := tl.ForProcess(200); q.Validate() != nil || len(q.Events) != 2 || len(q.Collectives) != 0 {
		t.Errorf("process 200: %d events", len(q.Events))
	}
	if len(tl.Events) != 6 {
		t.Errorf("the original timeline changed")
	}
}
