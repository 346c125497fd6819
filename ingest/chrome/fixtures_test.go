package chrome

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// gunzipCache keeps decompressed fixtures for the tests of one run.
var gunzipCache sync.Map

// readFixture returns the decompressed bytes of a .json.gz fixture.
func readFixture(t testing.TB, path string) []byte {
	t.Helper()
	if b, ok := gunzipCache.Load(path); ok {
		return b.([]byte)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	gunzipCache.Store(path, b)
	return b
}

// allFixtures lists the shared Chrome traces: the public corpus and the
// H200 captures.
func allFixtures(t *testing.T) []string {
	files := testfix.SharedGlob(t, "chrome", "*.json.gz")
	return append(files, testfix.SharedGlob(t, "h200", "*.pt.trace.json.gz")...)
}

func parseBytes(t testing.TB, data []byte) (*timeline.Timeline, []string) {
	t.Helper()
	var warns []string
	tl, err := Parse(bytes.NewReader(data), timeline.Source{Path: "test"}, Options{Warn: func(m string) { warns = append(warns, m) }})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if err := tl.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return tl, warns
}

// figures are the counts the fixture test compares.
type figures struct {
	Kernels, Memcpys, Memsets, APICalls, HostRanges, Ops, GPUSyncs int
	LinkedGPUWork                                                  int              // kernels, copies and memsets whose correlation names an API call
	MemcpyBytes                                                    map[string]int64 // "HtoD/pageable/device" -> bytes
}

// plainEvent is the subset of an event the independent count reads.
type plainEvent struct {
	Ph   string         `json:"ph"`
	Cat  string         `json:"cat"`
	Name string         `json:"name"`
	Pid  any            `json:"pid"`
	Args map[string]any `json:"args"`
}

// countPlain computes the figures a second, simple way: encoding/json and
// counting by category.
func countPlain(t testing.TB, data []byte) figures {
	t.Helper()
	var obj struct {
		TraceEvents []plainEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	fig := figures{MemcpyBytes: map[string]int64{}}
	hipSize := map[float64]int64{}
	apiCorr := map[float64]bool{}
	for _, e := range obj.TraceEvents {
		if e.Ph == "X" && strings.HasPrefix(e.Name, "hipMemcpy") {
			if s, ok := e.Args["size"].(string); ok {
				n, _ := strconv.ParseInt(s, 10, 64)
				hipSize[e.Args["correlation"].(float64)] = n
			}
		}
		switch e.Cat {
		case "cuda_runtime", "Runtime", "cuda_driver":
			if c, ok := e.Args["correlation"].(float64); ok && c != 0 {
				apiCorr[c] = true
			}
		}
	}
	for _, e := range obj.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		if s, ok := e.Pid.(string); ok {
			if _, err := strconv.Atoi(s); err != nil {
				continue
			}
		}
		isStep := strings.HasPrefix(e.Name, "ProfilerStep#") || strings.Contains(e.Name, "DataLoaderIter.__next__") ||
			strings.HasPrefix(e.Name, "enumerate(DataLoader)#") || strings.HasPrefix(e.Name, "enumerate(DataPipe)#")
		switch e.Cat {
		case "kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset":
			if c, ok := e.Args["correlation"].(float64); ok && apiCorr[c] {
				fig.LinkedGPUWork++
			}
		}
		switch e.Cat {
		case "kernel", "Kernel":
			fig.Kernels++
		case "gpu_memcpy", "Memcpy":
			fig.Memcpys++
			f := strings.FieldsFunc(e.Name, func(r rune) bool { return r == ' ' || r == '(' || r == ')' })
			// Memcpy DIR SRC -> DST
			key := fmt.Sprintf("%s/%s/%s", f[1], strings.ToLower(f[2]), strings.ToLower(f[4]))
			n, ok := e.Args["bytes"].(float64)
			if !ok {
				n = float64(hipSize[e.Args["correlation"].(float64)])
			}
			fig.MemcpyBytes[key] += int64(n)
		case "gpu_memset", "Memset":
			fig.Memsets++
		case "cuda_runtime", "Runtime", "cuda_driver":
			fig.APICalls++
		case "user_annotation":
			fig.HostRanges++
		case "cpu_op", "Operator", "python_function":
			if isStep {
				fig.HostRanges++
			} else {
				fig.Ops++
			}
		case "cuda_sync":
			fig.GPUSyncs++
		}
	}
	return fig
}

// countTimeline computes the same figures from a parsed timeline.
func countTimeline(tl *timeline.Timeline) figures {
	fig := figures{MemcpyBytes: map[string]int64{}}
	for i := range tl.Events {
		e := &tl.Events[i]
		if e.Kind.IsGPUWork() && e.Link >= 0 {
			fig.LinkedGPUWork++
		}
		switch e.Kind {
		case timeline.KindKernel:
			fig.Kernels++
		case timeline.KindMemcpy:
			fig.Memcpys++
			fig.MemcpyBytes[fmt.Sprintf("%s/%s/%s", e.Copy, e.Src, e.Dst)] += e.Bytes
		case timeline.KindMemset:
			fig.Memsets++
		case timeline.KindAPI:
			fig.APICalls++
		case timeline.KindRange:
			fig.HostRanges++
		case timeline.KindOp:
			fig.Ops++
		case timeline.KindGPUSync:
			fig.GPUSyncs++
		}
	}
	return fig
}

func TestFixturesMatchPlainDecode(t *testing.T) {
	for _, path := range allFixtures(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data := readFixture(t, path)
			t0 := time.Now()
			tl, warns := parseBytes(t, data)
			dt := time.Since(t0)
			got := countTimeline(tl)
			want := countPlain(t, data)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("timeline figures differ from the plain decode:\n got %+v\nwant %+v", got, want)
			}
			for _, w := range warns {
				t.Errorf("unexpected warning: %s", w)
			}
			t.Logf("%d events, %d tracks, %d names, %s in %v (%.0f MB/s); version %q; %+v",
				len(tl.Events), len(tl.Tracks), tl.NumNames(), units.Count64(int64(len(data))), dt.Round(time.Millisecond),
				float64(len(data))/dt.Seconds()/1e6, tl.Source.Version, got)
		})
	}
}
