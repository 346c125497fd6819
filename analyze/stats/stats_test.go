package stats

import (
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"math"
	"os"
	"testing"

	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"

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
// time) with a 5 µs cudaLaunchKernel, and linear launches a copy itself
// (a 3 µs call, 3 µs of GPU time). Self host time leaves out what an
// operator encloses, API calls included; self GPU time is what was
// launched directly under an operator, total GPU time what was launched
// under it or any operator it called. API calls and GPU work are rows of
// their own, as in the profiler's table.
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
	tab, err := NewTable(b.Build(t), "ops", TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Row{}
	for _, r := range tab.Rows {
		got[r.Name] = r
	}
	lin, mm, launch, gemm := got["aten::linear"], got["aten::addmm"], got["cudaLaunchKernel"], got["gemm"]
	if lin.Count != 1 || lin.TotalNS != 100*us || lin.SelfNS != 27*us || lin.CUDASelfNS != 3*us || lin.CUDATotalNS != 15*us {
		t.Errorf("aten::linear %+v: want 1 call, 100 µs total, 27 µs self, 3 µs self GPU, 15 µs GPU in total", lin)
	}
	if mm.Count != 2 || mm.TotalNS != 70*us || mm.SelfNS != 60*us || mm.CUDASelfNS != 12*us || mm.CUDATotalNS != 12*us ||
		mm.StddevNS != 7071 || mm.AvgNS != 35*us {
		t.Errorf("aten::addmm %+v: want 2 calls, 70 µs, 60 µs self, 12 µs of GPU time, stddev 7.07 µs", mm)
	}
	if launch.Count != 2 || launch.SelfNS != 10*us || launch.CUDASelfNS != 0 {
		t.Errorf("cudaLaunchKernel %+v: want 2 calls, 10 µs of self host time, no GPU time of its own", launch)
	}
	if gemm.Count != 2 || gemm.TotalNS != 0 || gemm.CUDASelfNS != 12*us {
		t.Errorf("gemm %+v: want 2 kernels, 12 µs of GPU time, no host time", gemm)
	}
	if tab.Rows[0].Name != "aten::linear" || tab.TotalNS != 100*us || tab.Rows[0].Share != 0.27 || len(tab.Rows) != 6 {
		t.Errorf("rows %+v, total %d: want 6 rows, linear first (most host time) and self times summing to 100 µs", tab.Rows, tab.TotalNS)
	}
}

// TestOpsTableByShape: key_averages(group_by_input_shape=True) on a real
// trace made with record_shapes: each operator's rows by shape add up to
// its row by name, and the batch copy is one row of its own shapes.
func TestOpsTableByShape(t *testing.T) {
	path := testfix.Shared(t, "chrome", "kineto_resnet50_nw4_v100_2021-06.pt.trace.json.gz")
	tl, err := ingest.Open(path, ingest.Options{Shapes: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewTable(tl, "ops", TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byShape, err := NewTable(tl, "ops", TableOptions{ByShape: true})
	if err != nil {
		t.Fatal(err)
	}
	if byShape.GroupBy != "shape" || len(byShape.Rows) <= len(plain.Rows) {
		t.Fatalf("by shape: group %q, %d rows; want more rows than the %d names", byShape.GroupBy, len(byShape.Rows), len(plain.Rows))
	}
	type sum struct{ count, self, cuda int64 }
	sums := map[string]sum{}
	for _, r := range byShape.Rows {
		s := sums[r.Name]
		sums[r.Name] = sum{s.count + int64(r.Count), s.self + r.SelfNS, s.cuda + r.CUDASelfNS}
		if r.Name == "aten::copy_" && r.InputShapes == "[[32, 3, 224, 224], [32, 3, 224, 224], []]" && r.Count != 6 {
			t.Errorf("the batch's copy: %d calls, want 6 (one a step)", r.Count)
		}
	}
	for _, r := range plain.Rows {
		if s := sums[r.Name]; s != (sum{int64(r.Count), r.SelfNS, r.CUDASelfNS}) {
			t.Errorf("%s: by shape %+v, by name %d calls, %d self, %d self CUDA", r.Name, s, r.Count, r.SelfNS, r.CUDASelfNS)
		}
	}
	if tl2, err := ingest.Open(path, ingest.Options{}); err != nil || len(tl2.Shapes) != 0 {
		t.Errorf("shapes read without Options.Shapes: %d (err %v)", len(tl2.Shapes), err)
	}
	tiny, err := ingest.Open(testfix.Shared(t, "chrome", "hta_a100_event_sync_tiny.json.gz"), ingest.Options{Shapes: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewTable(tiny, "ops", TableOptions{ByShape: true}); !errors.Is(err, ErrNoShapes) {
		t.Errorf("a trace without shapes: %v, want ErrNoShapes", err)
	}
}

// TestOpsTableMatchesKeyAverages: on a trace captured on the H200 with
// record_shapes, every row of the profiler's own key_averages() and
// key_averages(group_by_input_shape=True) (written beside it by
// fixtures/capture/keyavg.py) has its row here with the same calls, and
// self CUDA, CUDA total, CPU total and self CPU within 1 %. The profiler
// adds a second row for a record_function range, the GPU span of the work
// under it (gpu_user_annotation events, which traceaudit does not read):
// those rows are left out.
func TestOpsTableMatchesKeyAverages(t *testing.T) {
	tl, err := ingest.Open(testfix.Project("keyavg/keyavg.pt.trace.json.gz"), ingest.Options{Shapes: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(testfix.Project("keyavg/keyavg.keyavg.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	type kaRow struct {
		Key         string  `json:"key"`
		InputShapes string  `json:"input_shapes"`
		Count       int     `json:"count"`
		SelfCPU     float64 `json:"self_cpu_us"`
		CPU         float64 `json:"cpu_us"`
		SelfCUDA    float64 `json:"self_cuda_us"`
		CUDA        float64 `json:"cuda_us"`
	}
	var ka struct{ Plain, Shape []kaRow }
	if err := json.NewDecoder(zr).Decode(&ka); err != nil {
		t.Fatal(err)
	}
	near := func(ns int64, us float64) bool { return math.Abs(float64(ns)/1e3-us) <= 0.01*math.Abs(us)+0.0015 }
	for _, byShape := range []bool{false, true} {
		want := ka.Plain
		if byShape {
			want = ka.Shape
		}
		tab, err := NewTable(tl, "ops", TableOptions{FullNames: true, ByShape: byShape})
		if err != nil {
			t.Fatal(err)
		}
		got := map[[2]string]Row{}
		for _, r := range tab.Rows {
			got[[2]string{r.Name, r.InputShapes}] = r
		}
		cpuRange := map[string]bool{}
		for _, w := range want {
			if w.CPU > 0 {
				cpuRange[w.Key] = true
			}
		}
		checked := 0
		for _, w := range want {
			if w.CPU == 0 && w.SelfCUDA > 0 && cpuRange[w.Key] {
				continue // the range's GPU span
			}
			k := [2]string{w.Key, ""}
			if byShape {
				k[1] = cmp.Or(w.InputShapes, "[]")
			}
			r, ok := got[k]
			if !ok {
				t.Errorf("by shape %v: no row for %q", byShape, k)
				continue
			}
			checked++
			if r.Count != w.Count || !near(r.CUDASelfNS, w.SelfCUDA) || !near(r.CUDATotalNS, w.CUDA) ||
				!near(r.TotalNS, w.CPU) || !near(r.SelfNS, w.SelfCPU) {
				t.Errorf("by shape %v, %q: %d calls, self CUDA %d ns, CUDA %d ns, CPU %d ns, self CPU %d ns; key_averages %+v",
					byShape, k, r.Count, r.CUDASelfNS, r.CUDATotalNS, r.TotalNS, r.SelfNS, w)
			}
		}
		if checked < 100 || len(tab.Rows) != checked {
			t.Errorf("by shape %v: %d rows checked of our %d", byShape, checked, len(tab.Rows))
		}
	}
}
