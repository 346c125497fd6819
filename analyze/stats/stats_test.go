package stats

import (
	"testing"

	"github.com/traceaudit/traceaudit/timeline"
	tt "github.com/traceaudit/traceaudit/timeline/timelinetest"
)

// TestGraphExecutionsAreNotKernels: a whole-graph execution (nsys
// CUPTI_ACTIVITY_KIND_GRAPH_TRACE) counts as GPU busy time, not as a kernel
// (issue 11: stats counted them as kernels).
func TestGraphExecutionsAreNotKernels(t *testing.T) {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	b.Launch(h, s, "gemm", 0, 10, 20, 1020)
	b.B.Add(timeline.Event{Kind: timeline.KindKernel, Name: b.B.Intern("CUDA Graph 5"), Track: s, Start: 2000, End: 5000,
		Flags: timeline.FlagGraph | timeline.FlagGraphExec})
	st := Compute(b.Build(t))
	if st.GPU.Kernels != 1 || st.Detail.GraphExecs != 1 {
		t.Errorf("kernels %d, graph executions %d; want 1 and 1", st.GPU.Kernels, st.Detail.GraphExecs)
	}
	if st.GPU.BusyNS != 1000+3000 || st.Detail.KernelNS != 1000 {
		t.Errorf("busy %d, kernel time %d", st.GPU.BusyNS, st.Detail.KernelNS)
	}
}

// TestOpsTable: key_averages' view. aten::linear (0-100) calls aten::addmm
// twice (10-40, 50-90); each addmm launches a kernel (5 and 7 µs of GPU
// time), and linear launches a copy itself (3 µs). Self host time leaves
// out the operators called; self GPU time is what was launched directly
// under an operator, total GPU time what was launched under it or any
// operator it called.
func TestOpsTable(t *testing.T) {
	const us = tt.Us
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	b.Op(h, "aten::linear", 0, 100*us)
	b.Op(h, "aten::addmm", 10*us, 40*us)
	b.Launch(h, s, "gemm", 20*us, 25*us, 30*us, 35*us)
	b.Op(h, "aten::addmm", 50*us, 90*us)
	b.Launch(h, s, "gemm", 60*us, 65*us, 70*us, 77*us)
	b.Memcpy(h, s, tt.Pinned(1<<20), 92*us, 95*us, 96*us, 99*us)
	tab, err := NewTable(b.Build(t), "ops", false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Row{}
	for _, r := range tab.Rows {
		got[r.Name] = r
	}
	lin, mm := got["aten::linear"], got["aten::addmm"]
	if lin.Count != 1 || lin.TotalNS != 100*us || lin.SelfNS != 30*us || lin.CUDASelfNS != 3*us || lin.CUDATotalNS != 15*us {
		t.Errorf("aten::linear %+v: want 1 call, 100 µs total, 30 µs self, 3 µs self GPU, 15 µs GPU in total", lin)
	}
	if mm.Count != 2 || mm.TotalNS != 70*us || mm.SelfNS != 70*us || mm.CUDASelfNS != 12*us || mm.CUDATotalNS != 12*us ||
		mm.StddevNS != 7071 || mm.AvgNS != 35*us {
		t.Errorf("aten::addmm %+v: want 2 calls, 70 µs, self the same, 12 µs of GPU time, stddev 7.07 µs", mm)
	}
	if tab.Rows[0].Name != "aten::linear" || tab.TotalNS != 100*us || tab.Rows[0].Share != 0.3 {
		t.Errorf("rows %+v, total %d: want linear first (most host time) and self times summing to 100 µs", tab.Rows, tab.TotalNS)
	}
}
