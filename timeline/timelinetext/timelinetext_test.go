package timelinetext

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/timeline"
)

const loop = `# two steps of a small training loop
track host/1/1 "python"
device 0 "NVIDIA H200" sms=132 mem=141GiB
range host/1/1 0 +10ms "ProfilerStep#1"
range host/1/1 0 4ms "get batch"
copy host/1/1 4ms +1ms gpu0/stream7 4.1ms +0.8ms dir=HtoD src=pageable dst=device bytes=64MiB api="cudaMemcpy"
launch host/1/1 5ms +10us gpu0/stream7 5.1ms +4.5ms "gemm"   # a trailing comment
api host/1/1 9.6ms +300us "cudaDeviceSynchronize"
os host/1/1 9.7ms +200us "munmap"
range host/1/1 10ms +10ms "ProfilerStep#2"
api host/1/2 10ms +5us "cuLaunchKernel" corr=3 proc=9 driver
kernel gpu0/stream8 10.1ms +1.5us "k#2" corr=3 proc=9 graph
range host/1/2 10ms +1ms "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
range host/1/2 11ms +1ms "phase" kind=annotation open
marker host/1/2 12ms "mark"
`

// line renders an event for comparison.
func line(tl *timeline.Timeline, i int) string {
	e := &tl.Events[i]
	return fmt.Sprintf("%s %s %d-%d %q corr=%d proc=%d link=%d api=%s range=%s copy=%s %s->%s bytes=%d flags=%d",
		e.Kind, tl.TrackOf(int32(i)).Label(), e.Start, e.End, tl.EventName(int32(i)), e.Corr, e.Proc, e.Link,
		e.API, e.Range, e.Copy, e.Src, e.Dst, e.Bytes, e.Flags)
}

func TestDecode(t *testing.T) {
	tl, spans, err := DecodeSpans([]byte(loop))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range tl.Events {
		got = append(got, line(tl, i))
	}
	want := []string{
		`range host/1/1 (python) 0-10000000 "ProfilerStep#1" corr=0 proc=0 link=-1 api=other range=step copy=unknown unknown->unknown bytes=0 flags=0`,
		`range host/1/1 (python) 0-4000000 "get batch" corr=0 proc=0 link=-1 api=other range=nvtx copy=unknown unknown->unknown bytes=0 flags=0`,
		`api host/1/1 (python) 4000000-5000000 "cudaMemcpy" corr=4 proc=0 link=3 api=memcpy range=other copy=unknown unknown->unknown bytes=0 flags=0`,
		`memcpy gpu0/stream7 4100000-4900000 "Memcpy HtoD" corr=4 proc=0 link=2 api=other range=other copy=HtoD pageable->device bytes=67108864 flags=0`,
		`api host/1/1 (python) 5000000-5010000 "cudaLaunchKernel" corr=5 proc=0 link=5 api=launch range=other copy=unknown unknown->unknown bytes=0 flags=0`,
		`kernel gpu0/stream7 5100000-9600000 "gemm" corr=5 proc=0 link=4 api=other range=other copy=unknown unknown->unknown bytes=0 flags=0`,
		`api host/1/1 (python) 9600000-9900000 "cudaDeviceSynchronize" corr=0 proc=0 link=-1 api=sync range=other copy=unknown unknown->unknown bytes=0 flags=0`,
		`os host/1/1 (python) 9700000-9900000 "munmap" corr=0 proc=0 link=-1 api=other range=other copy=unknown unknown->unknown bytes=0 flags=0`,
		`range host/1/1 (python) 10000000-20000000 "ProfilerStep#2" corr=0 proc=0 link=-1 api=other range=step copy=unknown unknown->unknown bytes=0 flags=0`,
		`range host/1/2 10000000-11000000 "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__" corr=0 proc=0 link=-1 api=other range=dataloader copy=unknown unknown->unknown bytes=0 flags=0`,
		`api host/1/2 10000000-10005000 "cuLaunchKernel" corr=3 proc=9 link=11 api=launch range=other copy=unknown unknown->unknown bytes=0 flags=1`,
		`kernel gpu0/stream8 10100000-10101500 "k#2" corr=3 proc=9 link=10 api=other range=other copy=unknown unknown->unknown bytes=0 flags=2`,
		`range host/1/2 11000000-12000000 "phase" corr=0 proc=0 link=-1 api=other range=annotation copy=unknown unknown->unknown bytes=0 flags=4`,
		`marker host/1/2 12000000-12000000 "mark" corr=0 proc=0 link=-1 api=other range=other copy=unknown unknown->unknown bytes=0 flags=0`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantObs := timeline.Observed{GPU: true, APICalls: true, OSCalls: true, NVTX: true, Annotations: true, DataLoader: true,
		MemoryKinds: true, CanOSCalls: true, CanNVTX: true, CanAnnotations: true}
	if tl.Observed != wantObs {
		t.Errorf("observed %+v\nwant     %+v", tl.Observed, wantObs)
	}
	if len(tl.Devices) != 1 || tl.Devices[0] != (timeline.Device{ID: 0, Name: "NVIDIA H200", SMs: 132, MemoryBytes: 141 << 30}) {
		t.Errorf("devices %+v", tl.Devices)
	}
	wantSpans := map[int][]Span{
		6: {{"host/1/1", 4_000_000, 5_000_000}, {"gpu0/stream7", 4_100_000, 4_900_000}},
		7: {{"host/1/1", 5_000_000, 5_010_000}, {"gpu0/stream7", 5_100_000, 9_600_000}},
		9: {{"host/1/1", 9_700_000, 9_900_000}},
	}
	for n, w := range wantSpans {
		if !reflect.DeepEqual(spans[n], w) {
			t.Errorf("line %d spans %v, want %v", n, spans[n], w)
		}
	}
	if len(spans) != 12 {
		t.Errorf("%d lines with spans, want 12", len(spans))
	}
}

func TestObservedLine(t *testing.T) {
	tl, err := Decode([]byte("observed gpu can-os\nkernel gpu0/stream1 0 +1ms \"k\"\nos host/1/1 0 +1us \"poll\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (timeline.Observed{GPU: true, CanOSCalls: true}); tl.Observed != want {
		t.Errorf("observed %+v, want %+v: an observed line replaces what the events imply", tl.Observed, want)
	}
}

func TestOrigin(t *testing.T) {
	tl, err := Decode([]byte("origin 1s\nkernel gpu0/stream1 2ms 3ms \"k\"\nkernel gpu0/stream1 -1ms +1ms \"before\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if e := tl.Events[1]; e.Start != 1_002_000_000 || e.End != 1_003_000_000 {
		t.Errorf("absolute end after origin: %d-%d", e.Start, e.End)
	}
	if e := tl.Events[0]; e.Start != 999_000_000 || e.End != 1_000_000_000 {
		t.Errorf("negative offset: %d-%d", e.Start, e.End)
	}
}

func TestRepeat(t *testing.T) {
	text := `track host/1/1 "python"
repeat 3 10ms
range host/1/1 0 +10ms "ProfilerStep#1"
repeat 2 1ms
launch host/1/1 1ms +10us gpu0/stream7 1.5ms +200us "k"
end
repeat 0 1s
os host/1/1 0 "never"
end
end
kernel gpu0/stream7 100ms +1ms "after"
`
	tl, spans, err := DecodeSpans([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range tl.Events {
		if e := &tl.Events[i]; e.Kind != timeline.KindAPI {
			got = append(got, fmt.Sprintf("%s %s-%s corr=%d link=%d", tl.EventName(int32(i)), FormatTime(e.Start), FormatTime(e.End), e.Corr, e.Link))
		}
	}
	want := []string{
		"ProfilerStep#1 0-10ms corr=0 link=-1", "k 1.5ms-1.7ms corr=1 link=1", "k 2.5ms-2.7ms corr=2 link=3",
		"ProfilerStep#1 10ms-20ms corr=0 link=-1", "k 11.5ms-11.7ms corr=3 link=6", "k 12.5ms-12.7ms corr=4 link=8",
		"ProfilerStep#1 20ms-30ms corr=0 link=-1", "k 21.5ms-21.7ms corr=5 link=11", "k 22.5ms-22.7ms corr=6 link=13",
		"after 100ms-101ms corr=0 link=-1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(spans[5]) != 12 || len(spans[3]) != 3 || spans[8] != nil {
		t.Errorf("spans: line 5 %d, line 3 %d, line 8 %d; want 12, 3, 0", len(spans[5]), len(spans[3]), len(spans[8]))
	}
	defer func(n int) { maxRepeated = n }(maxRepeated)
	maxRepeated = 1000
	for _, c := range []struct{ text, want string }{
		{"repeat 2 1ms\nkernel gpu0/stream1 0 \"k\"", "line 1: repeat without end"},
		{"kernel gpu0/stream1 0 \"k\"\nend", "line 2: end without repeat"},
		{"repeat 2 1ms\ntrack host/1/1\nend", "line 2: track inside a repeat block"},
		{"repeat x 1ms\nend", `line 1: repeat: bad count "x"`},
		{"repeat 2\nend", "line 1: repeat: want a count and a period"},
		{"repeat 2 -1ms\nend", "line 1: repeat: period out of range"},
		{"repeat 1000 1ns\nrepeat 1000 1ns\nmarker host/1/1 0\nend\nend", "line 3: repeat blocks expand to more than 1000 lines"},
	} {
		if _, err := Decode([]byte(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.text, err, c.want)
		}
	}
}

// encode writes tl, failing the test on error.
func encode(t testing.TB, tl *timeline.Timeline) string {
	t.Helper()
	var b bytes.Buffer
	if err := Encode(&b, tl); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestRoundTrip(t *testing.T) {
	tl, err := Decode([]byte(loop))
	if err != nil {
		t.Fatal(err)
	}
	text := encode(t, tl)
	back, err := Decode([]byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if len(back.Events) != len(tl.Events) {
		t.Fatalf("%d events back, want %d", len(back.Events), len(tl.Events))
	}
	for i := range tl.Events {
		if a, b := line(tl, i), line(back, i); a != b {
			t.Errorf("event %d:\n got %s\nwant %s", i, b, a)
		}
	}
	if back.Observed != tl.Observed || !reflect.DeepEqual(back.Devices, tl.Devices) || back.Source != tl.Source {
		t.Errorf("header: %+v %+v %+v, want %+v %+v %+v", back.Observed, back.Devices, back.Source, tl.Observed, tl.Devices, tl.Source)
	}
	if again := encode(t, back); again != text {
		t.Errorf("second encoding differs:\n%s\nfirst:\n%s", again, text)
	}
	for _, want := range []string{
		"\ntrack host/1/1 \"python\"\n",
		"\nmemcpy gpu0/stream7 4.1ms +800us \"Memcpy HtoD\" corr=4 dir=HtoD src=pageable dst=device bytes=64MiB\n",
		"\nrange host/1/2 11ms +1ms \"phase\" kind=annotation open\n",
		"\nkernel gpu0/stream8 10.1ms +1.5us \"k#2\" corr=3 proc=9 graph\n",
		"\nmarker host/1/2 12ms \"mark\"\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("encoding lacks %q:\n%s", strings.TrimSpace(want), text)
		}
	}
}

// Collectives and the job a trace belongs to survive the text form.
func TestCollectivesRoundTrip(t *testing.T) {
	text := `dist rank=1 world=8 backend="nccl"
kernel gpu0/stream20 0 +2ms "ncclDevKernel_AllReduce_Sum_f32_RING_LL" corr=1 coll="allreduce" group="0" ranks=8 dtype="Float" bytes=64MiB
kernel gpu0/stream20 3ms +1ms "ncclDevKernel_AllGather_RING_LL" corr=2 coll="_allgather_base" seq=7
kernel gpu0/stream20 5ms +1ms "ncclDevKernel_Broadcast_RING_LL" corr=3
`
	tl, err := Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []timeline.Collective{
		{Event: 0, Op: "allreduce", Group: "0", GroupSize: 8, DType: "Float", Bytes: 64 << 20, Seq: -1},
		{Event: 1, Op: "_allgather_base", Seq: 7},
	}
	if !reflect.DeepEqual(tl.Collectives, want) || tl.Dist != (timeline.Distributed{Known: true, Rank: 1, WorldSize: 8, Backend: "nccl"}) {
		t.Fatalf("collectives %+v, dist %+v", tl.Collectives, tl.Dist)
	}
	for i := range tl.Events {
		if !tl.Events[i].Has(timeline.FlagComm) || tl.Events[i].Bytes != 0 {
			t.Errorf("event %d: %+v", i, tl.Events[i])
		}
	}
	back, err := Decode([]byte(encode(t, tl)))
	if err != nil || !reflect.DeepEqual(back.Collectives, tl.Collectives) || back.Dist != tl.Dist {
		t.Errorf("round trip: %v %+v", err, back)
	}
	for _, c := range []struct{ text, want string }{
		{`memcpy gpu0/stream7 0 +1ms coll="allreduce"`, "only kernels are collectives"},
		{`dist world=2`, "want rank=N"},
		{"dist rank=0\ndist rank=1", "a second dist line"},
		{`kernel gpu0/stream7 0 +1ms "k" ranks=x`, "ranks"},
	} {
		if _, err := Decode([]byte(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.text, err, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"kernel host/1/1 0 +1ms \"k\"", `line 1: kernel on host/1/1: kernel events live on GPU tracks`},
		{"\napi gpu0/stream1 0 \"x\"", `line 2: api on gpu0/stream1`},
		{"kernal gpu0/stream1 0", `line 1: unknown line "kernal"`},
		{"kernel gpu0/s1 0", `bad track "gpu0/s1"`},
		{"kernel gpu0/stream1 5ms 4ms", `ends (4ms) before it starts (5ms)`},
		{"kernel gpu0/stream1 1.5ns", `bad time "1.5ns"`},
		{"kernel gpu0/stream1 1e3", `bad time "1e3"`},
		{"kernel gpu0/stream1 5000000000s", `beyond ±2^62 ns`},
		{"kernel gpu0/stream1 0 \"k", `unterminated string`},
		{"kernel gpu0/stream1 0 \"k\" \"l\"", `a second name`},
		{"memcpy gpu0/stream1 0 dir=sideways", `dir: unknown value "sideways" (unknown, HtoD, DtoH, DtoD, HtoH, PtoP, unified, array)`},
		{"memcpy gpu0/stream1 0 bytes=-1", `bad size "-1": negative`},
		{"memcpy gpu0/stream1 0 bytes=0.5B", `bad size "0.5B"`},
		{"memcpy gpu0/stream1 0 colour=red", `unknown key "colour"`},
		{"memcpy gpu0/stream1 0 fast", `unknown flag "fast"`},
		{"marker host/1/1 0 +1us", `marker with a duration`},
		{"observed gpu cpu", `observed: unknown word "cpu"`},
		{"observed\nobserved", `line 2: a second observed line`},
		{"launch host/1/1 0 +1us gpu0/stream1 0", `launch: want the kernel's "name"`},
		{"launch gpu0/stream1 0 +1us host/1/1 0 \"k\"", `launch: want a host thread, then a GPU stream`},
		{"copy host/1/1 0 +1us", `copy: want HOST START [END] STREAM START [END]`},
		{"track gpu0/stream1 \"x\"", `GPU tracks have no name`},
		{"device x", `device: bad id "x"`},
		{"source colour=\"red\"", `source: unknown key "colour"`},
		{"origin", `origin: want one time`},
	} {
		_, err := Decode([]byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.text, err, c.want)
		}
	}
}

func TestTimes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"17", 17}, {"-3us", -3000}, {"4.2ms", 4_200_000}, {"1.5s", 1_500_000_000}, {"250µs", 250_000},
		{"1.234us", 1234}, {"0.000000001s", 1}, {"12ns", 12}, {"4611686018427387904", 1 << 62},
		{"2.50000ms", 2_500_000},
	} {
		got, err := ParseTime(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "ms", "1.", ".5ms", "1,5ms", "--1", "1.0000000000000000001s", "9223372036854775808", "10000000000s", "1h"} {
		if v, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) = %d, want an error", bad, v)
		}
	}
	for _, c := range []struct {
		ns   int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1us"}, {1234, "1.234us"}, {1_234_500, "1234.5us"}, {1_234_000, "1.234ms"}, {1_234_567, "1234.567us"},
		{10_000_000, "10ms"}, {-4_200_000, "-4.2ms"}, {1_500_000_000, "1.5s"}, {math.MinInt64, "-9223372036854775.808us"}} {
		if got := FormatTime(c.ns); got != c.want {
			t.Errorf("FormatTime(%d) = %q, want %q", c.ns, got, c.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		v := r.Int64N(1<<62) * (1 - 2*r.Int64N(2))
		switch r.IntN(3) {
		case 0:
			v -= v % 1000
		case 1:
			v -= v % 1_000_000
		}
		if got, err := ParseTime(FormatTime(v)); err != nil || got != v {
			t.Fatalf("ParseTime(FormatTime(%d) = %q) = %d, %v", v, FormatTime(v), got, err)
		}
	}
}

func TestSizes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"0", 0}, {"4096", 4096}, {"64MiB", 64 << 20}, {"1.5GiB", 3 << 29}, {"2kB", 2000}, {"1.5GB", 1_500_000_000}, {"7B", 7}} {
		if got, err := ParseSize(c.in); err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0"}, {1000, "1000"}, {4096, "4KiB"}, {1536 << 10, "1536KiB"}, {64 << 20, "64MiB"}, {3 << 30, "3GiB"}} {
		if got := FormatSize(c.n); got != c.want {
			t.Errorf("FormatSize(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestTestdataDecodes(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if len(files) == 0 {
		t.Fatal("no testdata/*.txt")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// FuzzDecode checks that any text either fails with an error or decodes to
// a valid timeline whose encoding decodes back to the same encoding.
func FuzzDecode(f *testing.F) {
	maxRepeated = 1 << 12 // keep each input quick
	f.Add([]byte(loop))
	files, _ := filepath.Glob(filepath.Join("testdata", "*.txt"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tl, err := Decode(data)
		if err != nil {
			return
		}
		if err := tl.Validate(); err != nil {
			t.Fatalf("decoded an invalid timeline: %v", err)
		}
		text := encode(t, tl)
		back, err := Decode([]byte(text))
		if err != nil {
			t.Fatalf("encoding does not decode: %v\n%s", err, text)
		}
		if again := encode(t, back); again != text {
			t.Fatalf("encoding not stable:\n%s\nthen:\n%s", text, again)
		}
	})
}
