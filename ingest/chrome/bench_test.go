package chrome

import (
	"bytes"
	"slices"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline"
)

const benchFixture = "hta_v100_ddp2_rank1_profile_memory_216k.json.gz"

// BenchmarkParse parses the largest fixture (53.7 MB of JSON, 216 k
// events) from memory, reporting MB/s and events/s.
func BenchmarkParse(b *testing.B) {
	data := readFixture(b, testfix.Shared(b, "chrome", benchFixture))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		tl, err := Parse(bytes.NewReader(data), timeline.Source{}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		events = len(tl.Events)
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkWorker measures one worker reading all events of the largest
// fixture as a single chunk, on one goroutine: the per-core speed of the
// event lexer and mapping, without reading, merging or Build.
func BenchmarkWorker(b *testing.B) {
	data := readFixture(b, testfix.Shared(b, "chrome", benchFixture))
	lo := bytes.Index(data, []byte(`"traceEvents"`))
	lo += bytes.IndexByte(data[lo:], '[') + 1
	b.SetBytes(int64(len(data) - lo))
	b.ReportAllocs()
	w := newWorker()
	for b.Loop() {
		c := &chunk{data: data, lo: lo, hi: len(data), start: stElem}
		w.run(c)
		if c.res.err != nil || c.res.arrayEnd < 0 {
			b.Fatalf("%+v", c.res.err)
		}
	}
}

// BenchmarkSortChunk measures the sort of one 2 MB chunk's events of the
// project's real H200 trace (Kineto order: several hundred short runs).
func BenchmarkSortChunk(b *testing.B) {
	data := readFixture(b, testfix.Project("r0_baseline.pt.trace.json.gz"))
	lo := bytes.Index(data, []byte(`"traceEvents"`))
	lo += bytes.IndexByte(data[lo:], '[') + 1
	hi := findCut(data[:min(len(data), lo+defaultBufSize)], lo)
	w := newWorker()
	c := &chunk{data: data, lo: lo, hi: hi, start: stElem}
	w.parse(c)
	events := slices.Clone(c.res.events)
	src := make([]timeline.Event, len(events))
	dst := make([]timeline.Event, len(events))
	var buf []timeline.Event
	for b.Loop() {
		copy(src, events)
		buf = sortedCopy(dst, src, buf)
	}
	b.ReportMetric(float64(len(events)), "events")
	b.ReportMetric(float64(len(runBounds(events))-1), "runs")
}
