package report

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/compare"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/suite"
	"github.com/traceaudit/traceaudit/timeline"
)

// timelineFrom decodes fuzz bytes into a small timeline: each 12-byte
// record is one event (kind, track, name, start, duration, size, memory
// kinds). Invalid combinations are skipped by the builder's validation.
func timelineFrom(data []byte) *timeline.Timeline {
	b := timeline.NewBuilder(timeline.Source{Path: "fuzz", Format: "fuzz"})
	b.Observed = timeline.Observed{GPU: true, APICalls: true, OSCalls: data != nil && len(data)%2 == 0, NVTX: true, MemoryKinds: true}
	hosts := []timeline.TrackID{b.HostTrack(1, 1), b.HostTrack(1, 2), b.HostTrack(2, 3)}
	gpus := []timeline.TrackID{b.GPUTrack(0, 7), b.GPUTrack(0, 8), b.GPUTrack(1, 7)}
	names := []string{"ProfilerStep#1", "get batch", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
		"cudaLaunchKernel", "cudaMemcpyAsync", "cudaDeviceSynchronize", "munmap", "poll", "gemm", "compute", "cudaMemcpy"}
	for len(data) >= 12 {
		r := data[:12]
		data = data[12:]
		kind := timeline.Kind(1 + r[0]%9)
		e := timeline.Event{Kind: kind, Name: b.Intern(names[int(r[1])%len(names)]),
			Start: int64(binary.LittleEndian.Uint16(r[2:])) * 1000, Corr: int64(r[8] % 8), Proc: uint32(1 + r[9]%2)}
		e.End = e.Start + int64(binary.LittleEndian.Uint16(r[4:]))*100
		e.Bytes = int64(binary.LittleEndian.Uint16(r[6:])) << 8
		e.Copy = timeline.CopyKind(r[10] % 8)
		e.Src, e.Dst = timeline.MemKind(r[11]%7), timeline.MemKind((r[11]>>4)%7)
		if kind.OnGPU() {
			e.Track = gpus[int(r[1])%len(gpus)]
		} else {
			e.Track = hosts[int(r[1])%len(hosts)]
		}
		if kind == timeline.KindRange {
			e.Range = timeline.ClassifyRange(names[int(r[1])%len(names)], timeline.RangeNVTX)
		}
		if kind == timeline.KindMarker {
			e.End = e.Start
		}
		b.Add(e)
	}
	tl, err := b.Build()
	if err != nil {
		return nil
	}
	return tl
}

// FuzzRenderers runs the analysis and every renderer on synthetic
// timelines: no panic, and the JSON forms parse.
func FuzzRenderers(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{6, 0, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0, 2, 8, 10, 0, 50, 0, 0, 0, 1, 0, 0, 0}, 4))
	f.Add([]byte{6, 1, 0, 0, 0, 200, 0, 0, 0, 0, 0, 0, 1, 8, 5, 0, 10, 0, 0, 0, 3, 0, 0, 0, 2, 4, 6, 0, 9, 0, 0, 16, 3, 0, 1, 0x21})
	f.Fuzz(func(t *testing.T, data []byte) {
		tl := timelineFrom(data)
		if tl == nil {
			return
		}
		r, err := audit.RunWith(tl, analyze.DefaultConfig(), suite.Default)
		if err != nil {
			t.Fatal(err)
		}
		d := compare.Compare(r, r)
		for _, doc := range []*Document{ForAnalysis(r), ForAnalyses([]*audit.Analysis{r, r}), ForDiff(d)} {
			for _, f := range []Format{Text, Markdown, JSON, HTML, ChromeTrace} {
				var buf bytes.Buffer
				err := doc.Render(&buf, f, Options{Command: "x"})
				if errors.Is(err, ErrFormat) && (f == HTML || f == ChromeTrace) {
					continue // not every document has these forms
				}
				if err != nil {
					t.Fatalf("%s of %T: %v", f, doc.value, err)
				}
				if (f == JSON || f == ChromeTrace) && !json.Valid(buf.Bytes()) {
					t.Fatalf("%s of %T does not parse", f, doc.value)
				}
			}
		}
		for _, fd := range r.Findings {
			if fd.Share < 0 || fd.Share > 1 || fd.EstimatedSpeedup < 1 || fd.WastedNS < 0 {
				t.Fatalf("finding out of range: %+v", fd)
			}
		}
		b := r.Steps.BreakdownNS
		if b[index.Compute] < 0 || b[index.Copy] < 0 || b[index.Sync] < 0 || b[index.OS] < 0 || b[index.Data] < 0 || b[index.Other] < 0 {
			t.Fatalf("negative bucket: %+v", b)
		}
	})
}
