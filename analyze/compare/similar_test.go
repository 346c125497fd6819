package compare

import (
	"fmt"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/timeline"
	tt "github.com/traceaudit/traceaudit/timeline/timelinetest"
)

// loop is a 4-step ProfilerStep loop on a GPU of that name, running the
// given kernels in each step.
func loop(t *testing.T, gpu string, kernels ...string) *audit.Analysis {
	t.Helper()
	b := tt.New()
	b.B.AddDevice(timeline.Device{ID: 0, Name: gpu})
	h := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	for i := range 4 {
		t0 := int64(i) * 10 * tt.Ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+10*tt.Ms)
		for k, name := range kernels {
			c := t0 + int64(k)*tt.Ms
			b.Launch(h, s, name, c, c+5*tt.Us, c+10*tt.Us, c+900*tt.Us)
		}
	}
	r, err := audit.RunWith(b.Build(t), analyze.DefaultConfig(), suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestUnrelatedRunsWarn: two runs that share almost no kernel, neither the
// GPU, are not two versions of one program: diff says so beside its
// speedup; two versions of one loop are compared without a warning.
func TestUnrelatedRunsWarn(t *testing.T) {
	a := loop(t, "NVIDIA H100 80GB HBM3", "gemm", "relu", "softmax", "layernorm", "add")
	same := loop(t, "NVIDIA H100 80GB HBM3", "gemm", "relu", "softmax", "layernorm", "add", "dropout")
	other := loop(t, "NVIDIA B200", "conv", "bn", "pool", "fc", "gemm")

	d := Compare(a, same)
	if len(d.Warnings) != 0 || d.Similarity.SharedKernels < 0.8 || !d.Similarity.SameDevices || !d.Similarity.SameSteps {
		t.Errorf("versions of one loop: similarity %+v warnings %q", d.Similarity, d.Warnings)
	}
	d = Compare(a, other)
	if d.Similarity.SharedKernels != 1.0/9 || d.Similarity.SameDevices {
		t.Errorf("unrelated runs: similarity %+v", d.Similarity)
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "share little (11 % of their kernel names; GPUs NVIDIA H100 80GB HBM3 vs NVIDIA B200)") {
		t.Errorf("warnings %q", d.Warnings)
	}
}
