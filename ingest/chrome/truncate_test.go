package chrome

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// eventEnds returns the offset just after each element of traceEvents, found
// with encoding/json's streaming decoder (independently of the scanner).
func eventEnds(t *testing.T, data []byte) []int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		if tok == "traceEvents" {
			break
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dec.Token(); err != nil { // [
		t.Fatal(err)
	}
	var ends []int
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, int(dec.InputOffset()))
	}
	return ends
}

// dump renders a timeline for comparison.
func dump(tl *timeline.Timeline) string {
	var b strings.Builder
	for i := range tl.Events {
		fmt.Fprintf(&b, "%+v %q %s\n", tl.Events[i], tl.EventName(int32(i)), tl.TrackOf(int32(i)).Label())
	}
	fmt.Fprintf(&b, "%+v %+v %+v\n", tl.Devices, tl.Observed, tl.Source)
	return b.String()
}

// checkCut parses data cut at n bytes and compares the result with the
// complete events before the cut, closed properly.
func checkCut(t *testing.T, data []byte, ends []int, cut []byte, opts Options) {
	t.Helper()
	n := len(cut)
	kept := 0
	for kept < len(ends) && ends[kept] <= n {
		kept++
	}
	var warns []string
	opts.Warn = func(m string) { warns = append(warns, m) }
	tl, err := Parse(bytes.NewReader(cut), timeline.Source{Path: "x.json"}, opts)
	if err != nil {
		t.Fatalf("cut at %d: %v", n, err)
	}
	if err := tl.Validate(); err != nil {
		t.Fatalf("cut at %d: %v", n, err)
	}
	// The same events, closed properly: the prefix up to the last complete
	// event, then "]}".
	prefixEnd := bytes.Index(data, []byte(`"traceEvents"`))
	prefixEnd += bytes.IndexByte(data[prefixEnd:], '[') + 1
	if kept > 0 {
		prefixEnd = ends[kept-1]
	}
	repaired := append(append([]byte{}, data[:prefixEnd]...), "]}"...)
	want, rwarns, err := parseString(string(repaired), Options{})
	if err != nil {
		t.Fatalf("repaired prefix: %v", err)
	}
	if g, w := dump(tl), dump(want); g != w {
		t.Errorf("cut at %d: timeline differs from the repaired prefix (%d vs %d events)", n, len(tl.Events), len(want.Events))
	}
	lost := len(cut) - prefixEnd
	msg := fmt.Sprintf("truncated: kept %s complete events, lost the last %s bytes", units.Count64(int64(kept)), units.Count64(int64(lost)))
	if len(warns) != len(rwarns)+1 || !strings.HasPrefix(warns[0], ErrTruncated.Error()) || warns[0] != msg {
		t.Errorf("cut at %d: warnings %q, want %q", n, warns, msg)
	}
}

func TestTruncatedFixture(t *testing.T) {
	data := readFixture(t, testfix.Shared(t, "chrome", "hta_a100_alexnet_cuda_sync.json.gz"))
	ends := eventEnds(t, data)
	mid := ends[len(ends)/2]
	cuts := []int{
		ends[0] - 1,   // inside the first event
		ends[0],       // just after the first event's '}'
		ends[0] + 1,   // after its ','
		mid - 40,      // inside an event
		mid,           // between events
		mid + 3,       // in the whitespace before the next event
		ends[10] + 20, // inside a key of the next event
	}
	for _, size := range []int{0, 64, 4096} {
		for _, n := range cuts {
			checkCut(t, data, ends, data[:n], Options{bufSize: size})
		}
	}
}

func TestTruncatedInEscapedString(t *testing.T) {
	name := `a \"quoted\" name with a \\ backslash and \u00e9`
	e := ev("ph", `"X"`, "cat", `"cpu_op"`, "name", `"`+name+`"`, "pid", "1", "tid", "1", "ts", "1", "dur", "1")
	data := []byte(trace(e, e, e))
	ends := eventEnds(t, data)
	second := bytes.Index(data[ends[0]:], []byte(`\"quoted`)) + ends[0]
	for _, n := range []int{second, second + 1, second + 2, bytes.Index(data[ends[0]:], []byte(`\\`)) + ends[0] + 1, ends[1] - 1, ends[1]} {
		for _, size := range []int{0, 16, 33} {
			checkCut(t, data, ends, data[:n], Options{bufSize: size})
		}
	}
	tl, _, err := parseString(string(data), Options{})
	if err != nil || tl.EventName(0) != `a "quoted" name with a \ backslash and é` {
		t.Errorf("name %q, %v", tl.EventName(0), err)
	}
}

func TestTruncatedGzipAndZeroFill(t *testing.T) {
	data := readFixture(t, testfix.Shared(t, "chrome", "hta_a100_event_sync_tiny.json.gz"))
	ends := eventEnds(t, data)

	// A NUL-filled tail (a crash after the file grew, before its data
	// reached the disk) ends the data like a cut.
	n := ends[20] + 7
	zeroed := append(append([]byte{}, data[:n]...), make([]byte, 1000)...)
	var warns []string
	tl, err := Parse(bytes.NewReader(zeroed), timeline.Source{}, Options{Warn: func(m string) { warns = append(warns, m) }})
	if err != nil || tl.Validate() != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("truncated: kept 21 complete events, lost the last %s bytes", units.Count64(int64(n+1000-ends[20]))); len(warns) != 1 || warns[0] != want {
		t.Errorf("warnings %q, want %q", warns, want)
	}

	// A gzip stream cut short: the reader returns io.ErrUnexpectedEOF.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	zr, err := gzip.NewReader(bytes.NewReader(gz.Bytes()[:gz.Len()/2]))
	if err != nil {
		t.Fatal(err)
	}
	warns = nil
	tl, err = Parse(zr, timeline.Source{}, Options{Warn: func(m string) { warns = append(warns, m) }})
	if err != nil || tl.Validate() != nil || len(tl.Events) == 0 {
		t.Fatalf("%v", err)
	}
	if len(warns) != 1 || !strings.HasPrefix(warns[0], "truncated: kept ") {
		t.Errorf("warnings %q", warns)
	}
}

func TestTruncatedAfterEvents(t *testing.T) {
	data := readFixture(t, testfix.Shared(t, "chrome", "tracelens_h100_qwen1.5-0.5b_inference.json.gz"))
	ends := eventEnds(t, data)
	// baseTimeNanoseconds is the last key: cut inside it.
	n := bytes.LastIndex(data, []byte("1751410836")) + 4
	var warns []string
	tl, err := Parse(bytes.NewReader(data[:n]), timeline.Source{}, Options{Warn: func(m string) { warns = append(warns, m) }})
	if err != nil || tl.Validate() != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("truncated after traceEvents: kept all %s events, lost the last %s bytes (top-level keys there, such as baseTimeNanoseconds, may be missing)",
		units.Count64(int64(len(ends))), units.Count64(int64(n-ends[len(ends)-1])))
	if len(warns) != 1 || warns[0] != want {
		t.Errorf("warnings %q\nwant %q", warns, want)
	}
	full, _ := parseBytes(t, data)
	if len(tl.Events) != len(full.Events) {
		t.Errorf("%d events, want %d", len(tl.Events), len(full.Events))
	}
	if start, _ := tl.Span(); start > 2e15 {
		t.Errorf("start %d: the base was cut off, so times stay relative", start)
	}
}

// TestDeterministic parses a fixture with buffers of many sizes (so chunks
// cut the events differently and workers finish in different orders) and
// demands the same timeline every time.
func TestDeterministic(t *testing.T) {
	data := readFixture(t, testfix.Shared(t, "chrome", "tracelens_h100_qwen1.5-0.5b_inference.json.gz"))
	want, _ := parseBytes(t, data)
	for _, size := range []int{1 << 10, 8 << 10, 100 << 10, 1 << 20} {
		for range 2 {
			got, err := Parse(bytes.NewReader(data), timeline.Source{Path: "test"}, Options{bufSize: size})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("buffer %d: timeline differs", size)
			}
		}
	}
}

func TestProgress(t *testing.T) {
	data := readFixture(t, testfix.Shared(t, "chrome", "hta_a100_ddp16_rank0_pinned_pageable.json.gz"))
	var calls [][2]int64
	_, err := Parse(bytes.NewReader(data), timeline.Source{}, Options{Size: int64(len(data)), Progress: func(d, t int64) { calls = append(calls, [2]int64{d, t}) }})
	if err != nil {
		t.Fatal(err)
	}
	// 25.8 MB: about every 8 MB, then the end.
	if len(calls) < 3 || len(calls) > 5 || calls[len(calls)-1] != [2]int64{int64(len(data)), int64(len(data))} {
		t.Errorf("progress calls %v", calls)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] < calls[i-1][0] {
			t.Errorf("progress went back: %v", calls)
		}
	}
}

// TestWrongCuts feeds text where the pattern chunks are cut at ("}, {" and
// a quote) also occurs inside strings and inside arrays of objects, with
// buffers small enough that many cuts fall there: every parse must equal
// the parse of the whole input as one chunk.
func TestWrongCuts(t *testing.T) {
	var evs []string
	for i := range 60 {
		name := fmt.Sprintf(`"k%d}, {"`, i)
		if i%3 == 0 {
			name = fmt.Sprintf(`"x}, {\"}, {\" %d}, {"`, i)
		}
		evs = append(evs,
			ev("ph", `"X"`, "cat", `"kernel"`, "name", name, "pid", "0", "tid", "7", "ts", fmt.Sprint(100+i), "dur", "1",
				"args", fmt.Sprintf(`{"list": [{"a": 1}, {"b": [{"c": "}, {"}]}], "correlation": %d}`, i+1)),
			ev("ph", `"X"`, "cat", `"cuda_runtime"`, "name", `"cudaLaunchKernel"`, "pid", "1", "tid", "1", "ts", fmt.Sprint(99+i), "dur", "0.5",
				"args", fmt.Sprintf(`{"correlation": %d}`, i+1)))
	}
	in := trace(evs...)
	want, _, err := parseString(in, Options{})
	if err != nil || len(want.Events) != 120 {
		t.Fatalf("%v, %d events", err, len(want.Events))
	}
	for size := 8; size < 400; size += 13 {
		got, _, err := parseString(in, Options{bufSize: size})
		if err != nil {
			t.Fatalf("buffer %d: %v", size, err)
		}
		if dump(got) != dump(want) {
			t.Fatalf("buffer %d: timeline differs", size)
		}
	}
	// The same, cut short: still the complete events before the cut.
	data := []byte(in)
	ends := eventEnds(t, data)
	for _, n := range []int{ends[7] - 3, ends[50] + 2, len(data) - 10} {
		for _, size := range []int{8, 100} {
			checkCut(t, data, ends, data[:n], Options{bufSize: size})
		}
	}
}
