package chrome

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/traceaudit/traceaudit/timeline"
)

// FuzzParse checks that no input makes Parse panic, that a timeline it
// returns is valid, and that the result does not depend on how the input
// is cut into buffers (size picks a small buffer for the second parse).
func FuzzParse(f *testing.F) {
	for _, name := range []string{"hta_a100_event_sync_tiny.json.gz", "hta_mi250_rocm62_tiny.json.gz"} {
		if p := sharedPath("chrome", name); p != "" {
			f.Add(readFixture(f, p), uint16(1000))
		}
	}
	if p := sharedPath("h200", "b0_pageable_sync.pt.trace.json.gz"); p != "" {
		f.Add(readFixture(f, p), uint16(333))
	}
	for _, s := range []string{
		``, `[]`, `{}`, `{"traceEvents": []}`, `{"traceEvents": {}}`, `42`, `"x"`, `nul`,
		trace(kernel, launch),
		`{"traceEvents": [` + kernel + `], "baseTimeNanoseconds": 1790857026000000000}`,
		`{"baseTimeNanoseconds": "17", "deviceProperties": [{"id": 0, "name": "g", "numSms": 1, "totalGlobalMem": 2}], "traceEvents": [` + launch + `]}`,
		trace(ev("ph", `"X"`, "cat", `"Kernel"`, "name", `"k"`, "pid", "0", "tid", `"stream 7 "`, "ts", "1e3", "dur", "0.0005")),
		trace(ev("ph", `"X"`, "cat", `"Memcpy"`, "name", `"Memcpy HtoD (Pageable -> Device)"`, "pid", "0", "tid", `"stream 7"`, "ts", "1", "args", `{"bytes": 8, "correlation": 1}`)),
		trace(ev("ph", `"X"`, "cat", `"cuda_sync"`, "name", `"Event Sync"`, "pid", "0", "tid", "-1", "ts", "1", "dur", "2")),
		`{"distributedInfo": {"rank": 1, "world_size": 2, "backend": "nccl"}, "traceEvents": [` + ev("ph", `"X"`, "cat", `"kernel"`, "name", `"ncclDevKernel_AllReduce_Sum_f32_RING_LL"`,
			"pid", "0", "tid", "7", "ts", "1", "dur", "2", "args", `{"correlation": 3, "Collective name": "allreduce", "In msg nelems": 513000, "Out msg nelems": 513000, "Group size": 2, "dtype": "Float", "Process Group Name": "0", "Seq": 9}`) + `]}`,
		trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"ncclKernel_Broadcast"`, "pid", "0", "tid", "7", "ts", "1", "dur", "2",
			"args", `{"correlation": 4, "Collective name": 5, "In msg nelems": "x", "Group size": -1, "dtype": "Float"}`)),
		trace(ev("ph", `"i"`, "name", `"m"`, "pid", "1", "tid", "1", "ts", "-5")),
		trace(ev("ph", `"M"`, "name", `"thread_name"`, "pid", "1", "tid", "1", "args", `{"name": "thread 1 (x)"}`)),
		trace(ev("ph", `"X"`, "cat", `"cpu_op"`, "name", `"a \"b\" \\ \u00e9"`, "pid", "1", "tid", "1", "ts", "4611686018427387.904")),
		`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": -1}]}`,
		`{"traceEvents": [{"ph": "X", "ts": {}}, {"a": [}]}`,
		`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1}, {"ph"`,
		"{\"traceEvents\": [{\"ph\": \"X\"}\x00\x00\x00",
		"\xef\xbb\xbf[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"x\",\"pid\":1,\"tid\":1,\"ts\":1},]",
	} {
		f.Add([]byte(s), uint16(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, size uint16) {
		tl, err := Parse(bytes.NewReader(data), timeline.Source{}, Options{})
		if err == nil {
			if verr := tl.Validate(); verr != nil {
				t.Fatalf("returned timeline does not validate: %v", verr)
			}
		}
		// The second parse also reads input shapes: they must not change
		// the events, and each must name an operator.
		tl2, err2 := Parse(bytes.NewReader(data), timeline.Source{}, Options{bufSize: 1 + int(size)%4096, Shapes: true})
		if err2 == nil {
			for _, s := range tl2.Shapes {
				if tl2.Events[s.Event].Kind != timeline.KindOp {
					t.Fatalf("shape %q on a %v event", s.Shape, tl2.Events[s.Event].Kind)
				}
			}
		}
		switch {
		case (err == nil) != (err2 == nil):
			t.Fatalf("result depends on the buffer size: %v vs %v", err, err2)
		case err != nil && err.Error() != err2.Error():
			t.Fatalf("error depends on the buffer size:\n%v\n%v", err, err2)
		case err == nil && dump(tl) != dump(tl2):
			t.Fatalf("timeline depends on the buffer size")
		}
	})
}

// TestMain caps the fuzzer's minimization of an interesting input at 5 s
// (the default is 60 s) unless -test.fuzzminimizetime is given: the seeds
// are whole traces of 20-70 kB, and minimizing one byte at a time would
// otherwise take a whole -fuzztime=60s run.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.fuzzminimizetime" })
	if !set {
		if err := flag.Set("test.fuzzminimizetime", "5s"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

// sharedPath is testfix.Shared without skipping: "" when absent, so that
// the fuzz target still runs on its hand-written seeds.
func sharedPath(sub, name string) string {
	base := os.Getenv("TRACEAUDIT_SHARED")
	if base == "" {
		base = filepath.Join("..", "..", "..", "shared")
	}
	p := filepath.Join(base, "fixtures", sub, name)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
