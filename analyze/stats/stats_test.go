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
