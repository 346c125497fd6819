package timeline

import (
	"strings"
	"testing"
)

func TestClassifyAPI(t *testing.T) {
	cases := []struct {
		name string
		want APIClass
	}{
		{"cudaLaunchKernel", APILaunch},
		{"cudaLaunchKernel_v7000", APILaunch},
		{"cudaLaunchKernel_ptsz_v7000", APILaunch},
		{"cuLaunchKernel", APILaunch},
		{"cuLaunchKernelEx", APILaunch},
		{"cudaGraphLaunch_v10000", APILaunch},
		{"hipExtLaunchKernel", APILaunch},
		{"cudaLaunchHostFunc", APIOther},
		{"cudaMemcpy", APIMemcpy},
		{"cudaMemcpy_v3020", APIMemcpy},
		{"cudaMemcpy2D", APIMemcpy},
		{"cudaMemcpyAsync_v3020", APIMemcpyAsync},
		{"cudaMemcpy2DAsync_v3020", APIMemcpyAsync},
		{"cuMemcpyHtoD_v2", APIMemcpy},
		{"cuMemcpyHtoDAsync_v2", APIMemcpyAsync},
		{"hipMemcpyWithStream", APIMemcpy},
		{"hipMemcpyAsync", APIMemcpyAsync},
		{"cudaMemsetAsync", APIMemset},
		{"cudaDeviceSynchronize", APISync},
		{"cudaThreadSynchronize_v3020", APISync},
		{"cudaStreamSynchronize_v3020", APISync},
		{"cudaEventSynchronize", APISync},
		{"cuStreamSynchronize", APISync},
		{"cuCtxSynchronize", APISync},
		{"hipDeviceSynchronize", APISync},
		{"cudaStreamWaitEvent", APIStreamWait},
		{"cudaMalloc_v3020", APIAlloc},
		{"cudaHostAlloc", APIAlloc},
		{"cuMemAlloc_v2", APIAlloc},
		{"cudaGetDevice", APIOther},
		{"cudaEventRecord", APIOther},
		{"cuGetProcAddress_v2", APIOther},
		{"aten::copy_", APIOther},
		{"", APIOther},
	}
	for _, c := range cases {
		if got := ClassifyAPI(c.name); got != c.want {
			t.Errorf("ClassifyAPI(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestBaseAPIName(t *testing.T) {
	for in, want := range map[string]string{
		"cudaMemcpyAsync_v3020":       "cudaMemcpyAsync",
		"cudaLaunchKernel_ptsz_v7000": "cudaLaunchKernel",
		"cuMemcpyHtoD_v2":             "cuMemcpyHtoD",
		"cuda_v2_thing":               "cuda_v2_thing",
		"_v2":                         "_v2",
		"plain":                       "plain",
	} {
		if got := BaseAPIName(in); got != want {
			t.Errorf("BaseAPIName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBuildLinksByProcessAndCorrelation(t *testing.T) {
	b := NewBuilder(Source{Format: "test"})
	h1 := b.HostTrack(1, 1)
	h2 := b.HostTrack(2, 2)
	g := b.GPUTrack(0, 7)
	launch := b.Intern("cudaLaunchKernel")
	k := b.Intern("kern")
	b.Add(Event{Kind: KindKernel, Start: 50, End: 60, Corr: 5, Proc: 2, Track: g, Name: k})
	b.Add(Event{Kind: KindKernel, Start: 30, End: 40, Corr: 5, Proc: 1, Track: g, Name: k})
	b.Add(Event{Kind: KindAPI, Start: 10, End: 12, Corr: 5, Proc: 1, Track: h1, Name: launch})
	b.Add(Event{Kind: KindAPI, Start: 20, End: 22, Corr: 5, Proc: 2, Track: h2, Name: launch})
	b.Add(Event{Kind: KindKernel, Start: 70, End: 80, Corr: 9, Proc: 2, Track: g, Name: k}) // no API row
	tl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by start: api(p1)@10, api(p2)@20, kern(p1)@30, kern(p2)@50, kern@70.
	want := []int32{2, 3, 0, 1, -1}
	for i, e := range tl.Events {
		if e.Link != want[i] {
			t.Errorf("event %d (%s@%d) link %d, want %d", i, e.Kind, e.Start, e.Link, want[i])
		}
	}
	if tl.Events[0].API != APILaunch {
		t.Errorf("API class %v, want launch", tl.Events[0].API)
	}
	if got := tl.Tracks[tl.Events[0].Track].Label(); got != "host/1/1" {
		t.Errorf("label %q", got)
	}
	if got := tl.Tracks[g].Label(); got != "gpu0/stream7" {
		t.Errorf("label %q", got)
	}
}

func TestBuildDropsEmptyTracksAndSorts(t *testing.T) {
	b := NewBuilder(Source{})
	b.HostTrack(9, 9) // never used
	h := b.HostTrack(1, 1)
	b.SetThreadName(1, 1, "python3")
	outer := b.Intern("outer")
	inner := b.Intern("inner")
	b.Add(Event{Kind: KindRange, Start: 10, End: 20, Track: h, Name: inner})
	b.Add(Event{Kind: KindRange, Start: 10, End: 100, Track: h, Name: outer})
	tl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Tracks) != 1 || tl.Tracks[0].Label() != "host/1/1 (python3)" {
		t.Fatalf("tracks %+v", tl.Tracks)
	}
	if tl.EventName(0) != "outer" || tl.EventName(1) != "inner" {
		t.Errorf("enclosing range must sort first: %q %q", tl.EventName(0), tl.EventName(1))
	}
	if s, e := tl.Span(); s != 10 || e != 100 {
		t.Errorf("span %d %d", s, e)
	}
}

func TestValidateRejects(t *testing.T) {
	cases := []struct {
		name string
		ev   Event
		gpu  bool
		want string
	}{
		{"backwards", Event{Kind: KindAPI, Start: 10, End: 5}, false, "ends before it starts"},
		{"kernel on host", Event{Kind: KindKernel, Start: 1, End: 2}, false, "wrong kind of track"},
		{"api on gpu", Event{Kind: KindAPI, Start: 1, End: 2}, true, "wrong kind of track"},
		{"negative bytes", Event{Kind: KindMemcpy, Start: 1, End: 2, Bytes: -1}, true, "negative size"},
		{"huge time", Event{Kind: KindOS, Start: 1, End: MaxTime + 1}, false, "out of range"},
		{"marker with duration", Event{Kind: KindMarker, Start: 1, End: 2}, false, "marker"},
		{"bad kind", Event{Kind: 200, Start: 1, End: 2}, false, "invalid kind"},
		{"bad mem kind", Event{Kind: KindMemcpy, Start: 1, End: 2, Src: 99}, true, "memory kind"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuilder(Source{})
			var tr TrackID
			if c.gpu {
				tr = b.GPUTrack(0, 1)
			} else {
				tr = b.HostTrack(1, 1)
			}
			c.ev.Track = tr
			b.Add(c.ev)
			_, err := b.Build()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestValidateCatchesTamperedTimeline(t *testing.T) {
	b := NewBuilder(Source{})
	h := b.HostTrack(1, 1)
	b.Add(Event{Kind: KindOS, Start: 1, End: 2, Track: h})
	b.Add(Event{Kind: KindOS, Start: 3, End: 4, Track: h})
	tl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	tl.Events[0], tl.Events[1] = tl.Events[1], tl.Events[0]
	if err := tl.Validate(); err == nil || !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("err = %v", err)
	}
	tl.Events[0], tl.Events[1] = tl.Events[1], tl.Events[0]
	tl.Tracks[0].Events = tl.Tracks[0].Events[:1]
	if err := tl.Validate(); err == nil {
		t.Fatal("missing track index not caught")
	}
}

func TestClassifyRange(t *testing.T) {
	for name, want := range map[string]RangeKind{
		"ProfilerStep#5": RangeStep,
		"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__":   RangeDataLoader,
		"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__": RangeDataLoader,
		"enumerate(DataPipe)#ShufflerIterDataPipe":                      RangeDataLoader,
		"get batch":                RangeNVTX,
		"Optimizer.step#Adam.step": RangeNVTX,
	} {
		if got := ClassifyRange(name, RangeNVTX); got != want {
			t.Errorf("ClassifyRange(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestLinkWithIDsTooLargeToPack(t *testing.T) {
	b := NewBuilder(Source{})
	h := b.HostTrack(1, 1)
	g := b.GPUTrack(0, 7)
	big := int64(1) << 50
	b.Add(Event{Kind: KindAPI, Start: 1, End: 2, Corr: big, Proc: 1, Track: h, Name: b.Intern("cudaLaunchKernel")})
	b.Add(Event{Kind: KindAPI, Start: 3, End: 4, Corr: big + 1, Proc: 1 << 30, Track: h, Name: b.Intern("cudaLaunchKernel")})
	b.Add(Event{Kind: KindKernel, Start: 5, End: 6, Corr: big, Proc: 1, Track: g})
	b.Add(Event{Kind: KindKernel, Start: 7, End: 8, Corr: big + 1, Proc: 1 << 30, Track: g})
	b.Add(Event{Kind: KindKernel, Start: 9, End: 10, Corr: big + 1, Proc: 1, Track: g}) // no API in its process
	tl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int32{2, 3, 0, 1, -1} {
		if tl.Events[i].Link != want {
			t.Errorf("event %d link %d, want %d", i, tl.Events[i].Link, want)
		}
	}
}

// TestGraphLaunchedWork: in Chrome traces the kernels a cudaGraphLaunch
// replays carry its correlation id; Build marks them as graph work.
func TestGraphLaunchedWork(t *testing.T) {
	b := NewBuilder(Source{Path: "g", Format: "chrome-trace"})
	h, s := b.HostTrack(1, 1), b.GPUTrack(0, 7)
	b.Add(Event{Kind: KindAPI, Name: b.Intern("cudaGraphLaunch"), Track: h, Start: 0, End: 10, Corr: 3})
	b.Add(Event{Kind: KindKernel, Name: b.Intern("k1"), Track: s, Start: 20, End: 30, Corr: 3})
	b.Add(Event{Kind: KindKernel, Name: b.Intern("k2"), Track: s, Start: 30, End: 40, Corr: 3})
	b.Add(Event{Kind: KindAPI, Name: b.Intern("cudaLaunchKernel"), Track: h, Start: 50, End: 60, Corr: 4})
	b.Add(Event{Kind: KindKernel, Name: b.Intern("k3"), Track: s, Start: 70, End: 80, Corr: 4})
	tl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind != KindKernel {
			continue
		}
		if want := tl.Name(e.Name) != "k3"; e.Has(FlagGraph) != want || e.Has(FlagGraphExec) {
			t.Errorf("%s: flags %b", tl.Name(e.Name), e.Flags)
		}
	}
	if !IsGraphLaunch("cudaGraphLaunch_v10000") || !IsGraphLaunch("hipGraphLaunch") || IsGraphLaunch("cudaLaunchKernel") {
		t.Error("IsGraphLaunch")
	}
}

func TestStepNumber(t *testing.T) {
	for _, c := range []struct {
		name, want string
		ok         bool
	}{
		{"ProfilerStep#12", "#12", true},
		{"ProfilerStep#", "", false},
		{"ProfilerStep", "", false},
		{"get batch", "", false},
	} {
		if got, ok := StepNumber(c.name); got != c.want || ok != c.ok {
			t.Errorf("StepNumber(%q) = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if ClassifyRange("ProfilerStep#3", RangeNVTX) != RangeStep {
		t.Error("ProfilerStep#3 is not a step range")
	}
}

// TestValidateLargeFirstViolation checks that Validate, which checks a
// large timeline's events in parts at once, reports the violation a pass
// in order finds first: the lowest event's, in whichever part it lies,
// and an order violation at a part's first event.
func TestValidateLargeFirstViolation(t *testing.T) {
	const n = 1 << 17
	b := NewBuilder(Source{})
	gpu, host := b.GPUTrack(0, 7), b.HostTrack(1, 1)
	k, api := b.Intern("k"), b.Intern("cudaLaunchKernel")
	for i := range n / 2 {
		ts := int64(i) * 10
		b.Add(Event{Start: ts, End: ts + 5, Kind: KindAPI, Track: host, Name: api, Corr: int64(i + 1)})
		b.Add(Event{Start: ts + 6, End: ts + 9, Kind: KindKernel, Track: gpu, Name: k, Corr: int64(i + 1)})
	}
	tl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	// With two parts (GOMAXPROCS 2 or more) the second starts at event
	// n/2, whose order check reads the first part's last event.
	ev := tl.Events
	ev[n-3].End = ev[n-3].Start - 1     // ends before it starts
	ev[n/2].Start = ev[n/2-1].Start - 1 // out of order, at the boundary of 2 parts
	ev[n/2].End = ev[n/2].Start + 1
	ev[n/4+1].Bytes = -5 // negative size
	for _, want := range []string{"event 32769 ", "event 65536: out of order", "event 131069 "} {
		err := tl.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want the error of %q", err, want)
		}
		switch want {
		case "event 32769 ":
			ev[n/4+1].Bytes = 0
		case "event 65536: out of order":
			ev[n/2].Start, ev[n/2].End = ev[n/2-1].Start+1, ev[n/2-1].Start+4
		}
	}
}
