package index

import "testing"

func TestLinkReference(t *testing.T) {
	cases := []struct {
		gpu  string
		gbps float64
	}{
		{"NVIDIA H200", 50}, {"NVIDIA H100 80GB HBM3", 50}, {"NVIDIA B200", 50},
		{"NVIDIA A100-SXM4-80GB", 24}, {"NVIDIA A100-PG509-200", 24}, {"NVIDIA A10", 24}, {"NVIDIA L40S", 24}, {"NVIDIA L4", 24},
		{"NVIDIA GeForce RTX 3090", 24}, {"NVIDIA GeForce RTX 4060 Ti", 12},
		{"Tesla V100-SXM2-32GB", 12}, {"Tesla V100-DGXS-32GB", 12}, {"Tesla T4", 12},
		{"AMD Radeon Graphics", 0}, {"NVIDIA A2000", 0}, {"", 0},
	}
	for _, c := range cases {
		got, _, ok := LinkReference(c.gpu)
		if got != c.gbps || ok != (c.gbps > 0) {
			t.Errorf("LinkReference(%q) = %v, %v; want %v", c.gpu, got, ok, c.gbps)
		}
	}
}

func TestIsLibraryRange(t *testing.T) {
	for name, want := range map[string]bool{
		"ncclAllReduce": true, "nccl:all_reduce": true, "MPI_Send": true, "PMPI_Recv": true, "Fusion::resetTvUses": true,
		"aten::mm, seq = 3": true, "AllToAll4D, seq = 46286, op_id = 993812": true, "cudnnConvolutionForward": true,
		"module.py(1501): _call_impl": true,
		"get batch":                   false, "compute": false, "ProfilerStep#3": false, "train step": false, "saxpy": false,
	} {
		if got := IsLibraryRange(name); got != want {
			t.Errorf("IsLibraryRange(%q) = %v", name, got)
		}
	}
}
