package chrome

import (
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline"
)

func parseFixture(t *testing.T, sub, name string) *timeline.Timeline {
	t.Helper()
	tl, warns := parseBytes(t, readFixture(t, testfix.Shared(t, sub, name)))
	for _, w := range warns {
		t.Errorf("warning: %s", w)
	}
	return tl
}

// find returns the indexes of the events named name.
func find(tl *timeline.Timeline, name string) []int {
	var out []int
	for i := range tl.Events {
		if tl.EventName(int32(i)) == name {
			out = append(out, i)
		}
	}
	return out
}

// linkedShare is the share of kernels linked to an API call whose class is
// a launch.
func linkedShare(t *testing.T, tl *timeline.Timeline) float64 {
	kernels, linked := 0, 0
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind != timeline.KindKernel {
			continue
		}
		kernels++
		if e.Link >= 0 {
			api := &tl.Events[e.Link]
			if api.Kind != timeline.KindAPI || api.API != timeline.APILaunch {
				t.Errorf("kernel %d linked to %s %q (%v)", i, api.Kind, tl.EventName(e.Link), api.API)
			}
			linked++
		}
	}
	if kernels == 0 {
		t.Fatal("no kernels")
	}
	return float64(linked) / float64(kernels)
}

func TestH200BaselineTrace(t *testing.T) {
	tl := parseFixture(t, "h200", "r0_baseline.pt.trace.json.gz")
	const base = 1790857026000000000
	start, end := tl.Span()
	if start < 1_780_000_000_000_000_000 || end > 1_800_000_000_000_000_000 {
		t.Errorf("span [%d, %d]: want times near 1.79e18 ns (baseTimeNanoseconds added)", start, end)
	}
	// The first cpu_op of the file: ts 5081063989749.483, dur 213.512.
	found := false
	for _, i := range find(tl, "autograd::engine::evaluate_function: NllLossBackward0") {
		e := &tl.Events[i]
		if e.Start == base+5081063989749483 && e.Dur() == 213512 {
			found = true
		}
	}
	if !found {
		t.Error("NllLossBackward0 op not found at base + 5081063989749.483 us (exact ns)")
	}
	copies := find(tl, "Memcpy HtoD (Pageable -> Device)")
	if len(copies) != 6 {
		t.Fatalf("%d pageable HtoD copies, want 6", len(copies))
	}
	// Per step: the 201 MB batch (64x3x512x512 float32) and its 512-byte labels.
	sizes := map[int64]int{}
	for _, i := range copies {
		e := &tl.Events[i]
		sizes[e.Bytes]++
		if e.Kind != timeline.KindMemcpy || e.Copy != timeline.CopyHtoD ||
			e.Src != timeline.MemPageable || e.Dst != timeline.MemDevice || tl.TrackOf(int32(i)).Kind != timeline.TrackGPU {
			t.Errorf("copy %d: %+v", i, *e)
		}
		if e.Link < 0 || tl.EventName(e.Link) != "cudaMemcpyAsync" {
			t.Errorf("copy %d not linked to its cudaMemcpyAsync", i)
		}
	}
	if sizes[201326592] != 3 || sizes[512] != 3 {
		t.Errorf("copy sizes %v, want 3 of 201326592 and 3 of 512 bytes", sizes)
	}
	steps, loaders := 0, 0
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind != timeline.KindRange {
			continue
		}
		switch e.Range {
		case timeline.RangeStep:
			steps++
			if !strings.HasPrefix(tl.EventName(int32(i)), "ProfilerStep#") {
				t.Errorf("step range %q", tl.EventName(int32(i)))
			}
		case timeline.RangeDataLoader:
			loaders++
		}
	}
	if steps != 3 || loaders != 3 {
		t.Errorf("%d ProfilerStep# ranges and %d DataLoader ranges, want 3 and 3", steps, loaders)
	}
	// 215 of the 1382 kernels have no launch call in the file (launched
	// before the window opened); the other 1167 are linked (checked for
	// every fixture in TestFixturesMatchPlainDecode).
	if s := linkedShare(t, tl); s < 0.84 {
		t.Errorf("only %.1f%% of kernels linked to their launch", 100*s)
	}
	want := timeline.Observed{GPU: true, APICalls: true, HostOps: true, Annotations: true, DataLoader: true, MemoryKinds: true, CanAnnotations: true}
	if tl.Observed != want {
		t.Errorf("Observed = %+v, want %+v", tl.Observed, want)
	}
	if len(tl.Devices) != 1 || tl.Devices[0].Name != "NVIDIA H200" || tl.Devices[0].SMs != 132 || tl.Devices[0].MemoryBytes != 150109880320 {
		t.Errorf("devices %+v", tl.Devices)
	}
	if tl.Source.Format != "chrome-trace" || tl.Source.Version != "kineto-2025" || tl.Source.Path != "test" {
		t.Errorf("source %+v", tl.Source)
	}
	// Thread 692 is named twice, "pt_autograd_0" then "python3" (the
	// process name): the specific name wins.
	names := map[string]bool{}
	for _, tr := range tl.Tracks {
		if tr.Kind == timeline.TrackHost {
			names[tr.Label()] = true
		}
	}
	for _, l := range []string{"host/652/652 (python3)", "host/652/692 (pt_autograd_0)"} {
		if !names[l] {
			t.Errorf("no track %q in %v", l, names)
		}
	}
}

func TestOldFormat2021(t *testing.T) {
	tl := parseFixture(t, "chrome", "kineto_resnet50_nw0_v100_2021-01_oldformat.pt.trace.json.gz")
	if tl.Source.Version != "kineto-2021" {
		t.Errorf("version %q", tl.Source.Version)
	}
	// String tids: "stream 7" on the GPU, "1890023232" on the host.
	var gpu, host []string
	for _, tr := range tl.Tracks {
		if tr.Kind == timeline.TrackGPU {
			gpu = append(gpu, tr.Label())
		} else {
			host = append(host, tr.Label())
		}
	}
	if strings.Join(gpu, " ") != "gpu0/stream7" || !strings.Contains(strings.Join(host, " "), "host/119771/1890023232") {
		t.Errorf("tracks: gpu %v host %v", gpu, host)
	}
	// Exact integer-microsecond timestamps since the epoch: the first
	// Memcpy is at ts 1610366662300521, dur 1947.
	if c := find(tl, "Memcpy HtoD (Pageable -> Device)"); len(c) == 0 || tl.Events[c[0]].Start != 1610366662300521000 || tl.Events[c[0]].Dur() != 1947000 {
		t.Errorf("first copy: %+v", tl.Events[c[0]])
	}
	// Old categories: Runtime, Kernel, Memcpy, Memset; ProfilerStep# as an Operator.
	counts := map[timeline.Kind]int{}
	ranges := map[timeline.RangeKind]int{}
	for i := range tl.Events {
		counts[tl.Events[i].Kind]++
		if tl.Events[i].Kind == timeline.KindRange {
			ranges[tl.Events[i].Range]++
		}
	}
	if counts[timeline.KindKernel] != 9564 || counts[timeline.KindAPI] != 10920 || counts[timeline.KindMemcpy] != 12 || counts[timeline.KindMemset] != 439 {
		t.Errorf("counts %v", counts)
	}
	if ranges[timeline.RangeStep] != 6 || ranges[timeline.RangeDataLoader] != 6 {
		t.Errorf("ranges %v", ranges)
	}
	// Kernels link to Runtime calls through args.correlation (the 2021 files
	// spell the other id "external id").
	if s := linkedShare(t, tl); s < 0.92 { // 708 of 9564 kernels have no Runtime row
		t.Errorf("only %.1f%% of kernels linked", 100*s)
	}
	if o := tl.Observed; !o.HostOps || o.Annotations || !o.DataLoader || !o.MemoryKinds || !o.CanAnnotations || o.CanOSCalls || o.CanNVTX {
		t.Errorf("Observed %+v", tl.Observed)
	}
}

func TestROCmHostMemory(t *testing.T) {
	tl := parseFixture(t, "chrome", "hta_mi250_rocm62_tiny.json.gz")
	copies := find(tl, "Memcpy HtoD (Host -> Device)")
	if len(copies) != 2 {
		t.Fatalf("%d copies", len(copies))
	}
	for _, i := range copies {
		e := &tl.Events[i]
		if e.Src != timeline.MemHost || e.Dst != timeline.MemDevice || e.Copy != timeline.CopyHtoD {
			t.Errorf("copy %+v", *e)
		}
		// The copy row has no bytes; the hipMemcpyWithStream call's "size" does.
		if e.Bytes != 2560 || e.Link < 0 || tl.EventName(e.Link) != "hipMemcpyWithStream" {
			t.Errorf("copy %d: %d bytes, link %d", i, e.Bytes, e.Link)
		}
		if tr := tl.TrackOf(int32(i)); tr.Device != 2 || tr.Stream != 0 {
			t.Errorf("copy on %s, want gpu2/stream0", tr.Label())
		}
	}
	if tl.Observed.MemoryKinds {
		t.Error("ROCm copies do not say pageable or pinned")
	}
	if s := linkedShare(t, tl); s < 0.99 {
		t.Errorf("only %.1f%% of kernels linked", 100*s)
	}
}

func TestB200WithoutMetadata(t *testing.T) {
	tl := parseFixture(t, "chrome", "tracelens_b200_vllm_eager_tp8_rank0.json.gz")
	drivers := 0
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Has(timeline.FlagDriver) {
			drivers++
			if e.Kind != timeline.KindAPI {
				t.Errorf("driver flag on %s", e.Kind)
			}
		}
	}
	if drivers != 221 {
		t.Errorf("%d driver calls, want 221", drivers)
	}
	for _, tr := range tl.Tracks {
		if tr.Kind == timeline.TrackHost && (tr.PID == -1 || tr.Name != "") {
			t.Errorf("track %s: overhead rows are skipped and there are no thread names", tr.Label())
		}
	}
	if s := linkedShare(t, tl); s < 0.95 {
		t.Errorf("only %.1f%% of kernels linked", 100*s)
	}
	if len(find(tl, "cuLaunchKernelEx")) == 0 || tl.Events[find(tl, "cuLaunchKernelEx")[0]].API != timeline.APILaunch {
		t.Error("cuLaunchKernelEx is not a launch")
	}
}

func TestPidZeroCollision(t *testing.T) {
	tl := parseFixture(t, "chrome", "tracelens_h100_qwen1.5-0.5b_inference.json.gz")
	var host0, gpu0 *timeline.Track
	for i := range tl.Tracks {
		tr := &tl.Tracks[i]
		if tr.Kind == timeline.TrackHost && tr.PID == 0 && tr.TID == 0 {
			host0 = tr
		}
		if tr.Kind == timeline.TrackGPU && tr.Device == 0 && tr.Stream == 7 {
			gpu0 = tr
		}
	}
	if host0 == nil || gpu0 == nil {
		t.Fatalf("want both host/0/0 and gpu0/stream7: %v", tl.Tracks)
	}
	if len(host0.Events) != 5 || host0.Name != "python3" {
		t.Errorf("host/0/0: %d events, name %q; want 5 python_function ops named python3", len(host0.Events), host0.Name)
	}
	for _, i := range host0.Events {
		if tl.Events[i].Kind != timeline.KindOp {
			t.Errorf("host/0/0 holds %s", tl.Events[i].Kind)
		}
	}
	for _, i := range gpu0.Events {
		if !tl.Events[i].Kind.OnGPU() {
			t.Errorf("gpu0 holds %s", tl.Events[i].Kind)
		}
	}
}

func TestCudaSyncEvents(t *testing.T) {
	tl := parseFixture(t, "chrome", "hta_a100_event_sync_tiny.json.gz")
	var got []string
	for i := range tl.Events {
		if tl.Events[i].Kind == timeline.KindGPUSync {
			got = append(got, tl.EventName(int32(i))+"@"+tl.TrackOf(int32(i)).Label())
			if tl.Events[i].Link != -1 {
				t.Error("a sync record is not GPU work and links to nothing")
			}
		}
	}
	want := "Stream Sync@gpu0/stream7 Event Sync@gpu0/stream-1 Event Sync@gpu0/stream-1 Context Sync@gpu0/stream-1"
	if strings.Join(got, " ") != want {
		t.Errorf("sync events %v\nwant %s", got, want)
	}
	sync := map[string]int{}
	for i := range tl.Events {
		if tl.Events[i].API == timeline.APISync {
			sync[tl.EventName(int32(i))]++
		}
	}
	if sync["cudaStreamSynchronize"] != 1 || sync["cudaEventSynchronize"] != 1 || sync["cudaDeviceSynchronize"] != 1 {
		t.Errorf("sync calls %v", sync)
	}
	for i, tr := range tl.Tracks {
		if tr.Kind == timeline.TrackHost && tr.Name != "python3.10" {
			t.Errorf("track %d: %s, want the thread named python3.10", i, tr.Label())
		}
	}
}
