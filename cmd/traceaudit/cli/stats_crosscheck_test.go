package cli

// These tests check `traceaudit stats --format json` against figures computed
// a second, simple way straight from the raw files: SQL over the nsys export,
// a plain encoding/json decode of the Chrome trace, and a naive interval
// union. Nothing here imports ingest/ or the stats package.

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"encoding/json"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/internal/version"
)

// rawStats mirrors the stats JSON contract.
type rawStats struct {
	SchemaVersion int    `json:"schema_version"`
	ToolVersion   string `json:"tool_version"`
	File          string `json:"file"`
	Format        string `json:"format"`
	GPU           struct {
		Kernels int   `json:"kernels"`
		Memcpys int   `json:"memcpys"`
		Memsets int   `json:"memsets"`
		BusyNS  int64 `json:"busy_ns"`
		SpanNS  int64 `json:"span_ns"`
	} `json:"gpu"`
	MemcpyBytes struct {
		HtoDPageable int64 `json:"htod_pageable"`
		HtoDPinned   int64 `json:"htod_pinned"`
		HtoDOther    int64 `json:"htod_other"`
		DtoH         int64 `json:"dtoh"`
		DtoD         int64 `json:"dtod"`
		Other        int64 `json:"other"`
	} `json:"memcpy_bytes"`
	Host struct {
		APICalls int `json:"api_calls"`
		Ranges   int `json:"ranges"`
		OSCalls  int `json:"os_calls"`
		Threads  int `json:"threads"`
	} `json:"host"`
	Devices int `json:"devices"`
	Streams int `json:"streams"`
	Events  int `json:"events"`
}

func runStatsJSON(t *testing.T, path string) rawStats {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run([]string{"stats", "--format", "json", path}, &IO{Out: &out, Err: &errb})
	if code != 0 {
		t.Fatalf("stats %s: exit %d: %s", path, code, errb.String())
	}
	var s rawStats
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("stats %s: %v", path, err)
	}
	return s
}

// naiveUnion merges intervals the obvious way.
func naiveUnion(iv [][2]int64) (busy, span int64) {
	if len(iv) == 0 {
		return 0, 0
	}
	sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
	cs, ce := iv[0][0], iv[0][1]
	lo, hi := iv[0][0], iv[0][1]
	for _, x := range iv[1:] {
		if x[1] > hi {
			hi = x[1]
		}
		if x[0] > ce {
			busy += ce - cs
			cs, ce = x[0], x[1]
		} else if x[1] > ce {
			ce = x[1]
		}
	}
	busy += ce - cs
	return busy, hi - lo
}

func TestStatsMatchSQLOverNsysExports(t *testing.T) {
	files := append(testfix.SharedGlob(t, "nsys", "*.sqlite"), testfix.SharedGlob(t, "h200", "*.sqlite")...)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := sqlStats(t, path)
			got := runStatsJSON(t, path)
			want.File = path
			if got.Events < got.GPU.Kernels+got.GPU.Memcpys+got.GPU.Memsets+got.Host.APICalls+got.Host.Ranges+got.Host.OSCalls {
				t.Errorf("events %d fewer than the counted kinds", got.Events)
			}
			want.Events = got.Events
			want.SchemaVersion, want.ToolVersion = version.Schema, version.Tool()
			if got != want {
				t.Errorf("stats disagree with SQL\n got  %+v\n want %+v", got, want)
			}
		})
	}
}

func sqlStats(t *testing.T, path string) rawStats {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables := map[string]bool{}
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type='table'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables[n] = true
	}
	rows.Close()
	one := func(q string) int64 {
		var v sql.NullInt64
		if err := db.QueryRow(q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v.Int64
	}
	var s rawStats
	s.Format = "nsys-sqlite"
	const k, mc, ms = "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"
	var work []string
	if tables[k] {
		s.GPU.Kernels = int(one("SELECT count(*) FROM " + k))
		work = append(work, k)
	}
	if tables["CUPTI_ACTIVITY_KIND_GRAPH_TRACE"] {
		s.GPU.Kernels += int(one("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE"))
		work = append(work, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
	}
	if tables[mc] {
		s.GPU.Memcpys = int(one("SELECT count(*) FROM " + mc))
		work = append(work, mc)
		s.MemcpyBytes.HtoDPageable = one("SELECT sum(bytes) FROM " + mc + " WHERE copyKind=1 AND srcKind=0")
		s.MemcpyBytes.HtoDPinned = one("SELECT sum(bytes) FROM " + mc + " WHERE copyKind=1 AND srcKind=1")
		s.MemcpyBytes.HtoDOther = one("SELECT sum(bytes) FROM " + mc + " WHERE copyKind=1 AND srcKind NOT IN (0,1)")
		s.MemcpyBytes.DtoH = one("SELECT sum(bytes) FROM " + mc + " WHERE copyKind=2")
		s.MemcpyBytes.DtoD = one("SELECT sum(bytes) FROM " + mc + " WHERE copyKind=8")
		s.MemcpyBytes.Other = one("SELECT sum(bytes) FROM " + mc + " WHERE copyKind NOT IN (1,2,8)")
	}
	if tables[ms] {
		s.GPU.Memsets = int(one("SELECT count(*) FROM " + ms))
		work = append(work, ms)
	}
	var iv [][2]int64
	devs, streams := map[int64]bool{}, map[[2]int64]bool{}
	for _, tb := range work {
		rows, err := db.Query("SELECT start, end, deviceId, streamId FROM " + tb)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a, b, d, st int64
			if err := rows.Scan(&a, &b, &d, &st); err != nil {
				t.Fatal(err)
			}
			iv = append(iv, [2]int64{a, b})
			devs[d] = true
			streams[[2]int64{d, st}] = true
		}
		rows.Close()
	}
	s.GPU.BusyNS, s.GPU.SpanNS = naiveUnion(iv)
	s.Devices, s.Streams = len(devs), len(streams)

	threads := map[int64]bool{}
	addThreads := func(q string) {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var g int64
			rows.Scan(&g)
			threads[g&0xFFFFFFFFFFFF] = true // (pid, tid) without the VM/hardware bytes
		}
	}
	if tables["CUPTI_ACTIVITY_KIND_RUNTIME"] {
		s.Host.APICalls = int(one("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass != 67"))
		addThreads("SELECT DISTINCT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass != 67")
	}
	if tables["OSRT_API"] {
		// eventClass 31 and 32 mark profiling start and stop ("[Unknown]",
		// zero length): nsys's own markers, not OS calls.
		s.Host.OSCalls = int(one("SELECT count(*) FROM OSRT_API WHERE eventClass NOT IN (31, 32)"))
		addThreads("SELECT DISTINCT globalTid FROM OSRT_API WHERE eventClass NOT IN (31, 32)")
	}
	if tables["NVTX_EVENTS"] {
		s.Host.Ranges = int(one("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)"))
		addThreads("SELECT DISTINCT globalTid FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)")
	}
	s.Host.Threads = len(threads)
	return s
}

func TestStatsMatchJSONDecodeOfChromeTraces(t *testing.T) {
	files := append(testfix.SharedGlob(t, "chrome", "*.json.gz"), testfix.SharedGlob(t, "h200", "*.json.gz")...)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := jsonStats(t, path)
			got := runStatsJSON(t, path)
			want.File = path
			if got.Events < got.GPU.Kernels+got.GPU.Memcpys+got.GPU.Memsets+got.Host.APICalls+got.Host.Ranges {
				t.Errorf("events %d fewer than the counted kinds", got.Events)
			}
			want.Events = got.Events
			want.SchemaVersion, want.ToolVersion = version.Schema, version.Tool()
			if got != want {
				t.Errorf("stats disagree with a plain JSON decode\n got  %+v\n want %+v", got, want)
			}
		})
	}
}

// usToNS converts a decimal microsecond literal to nanoseconds exactly.
func usToNS(t *testing.T, n json.Number) int64 {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		t.Fatalf("bad number %q", n)
	}
	r.Mul(r, big.NewRat(1000, 1))
	f, _ := r.Float64()
	if r.IsInt() {
		return r.Num().Int64()
	}
	// Round half away from zero.
	q := new(big.Int).Quo(r.Num(), r.Denom())
	rem := new(big.Rat).Sub(r, new(big.Rat).SetInt(q))
	if rem.Abs(rem).Cmp(big.NewRat(1, 2)) >= 0 {
		if f < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q.Int64()
}

func numID(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case string:
		x = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(x), "stream"))
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func jsonStats(t *testing.T, path string) rawStats {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var s rawStats
	s.Format = "chrome-trace"
	// ROCm memcpy events carry no bytes; their HIP call's args.size does.
	apiSize := map[string]int64{}
	for _, e := range doc.TraceEvents {
		if cat, _ := e["cat"].(string); cat != "cuda_runtime" || e["ph"] != "X" {
			continue
		}
		args, _ := e["args"].(map[string]any)
		corr, _ := args["correlation"].(json.Number)
		if size, ok := args["size"].(string); ok {
			if n, err := strconv.ParseInt(size, 10, 64); err == nil {
				apiSize[corr.String()] = n
			}
		}
	}
	var iv [][2]int64
	devs, streams, threads := map[int64]bool{}, map[[2]int64]bool{}, map[[2]int64]bool{}
	for _, e := range doc.TraceEvents {
		if e["ph"] != "X" {
			continue
		}
		cat, _ := e["cat"].(string)
		name, _ := e["name"].(string)
		pid, pidOK := numID(e["pid"])
		tid, tidOK := numID(e["tid"])
		gpu := false
		switch cat {
		case "kernel", "Kernel":
			s.GPU.Kernels++
			gpu = true
		case "gpu_memcpy", "Memcpy":
			s.GPU.Memcpys++
			gpu = true
			var bytes int64
			if args, ok := e["args"].(map[string]any); ok {
				if b, ok := args["bytes"].(json.Number); ok {
					bytes, _ = b.Int64()
				} else if c, ok := args["correlation"].(json.Number); ok {
					bytes = apiSize[c.String()]
				}
			}
			switch {
			case strings.HasPrefix(name, "Memcpy HtoD (Pageable"):
				s.MemcpyBytes.HtoDPageable += bytes
			case strings.HasPrefix(name, "Memcpy HtoD (Pinned"):
				s.MemcpyBytes.HtoDPinned += bytes
			case strings.HasPrefix(name, "Memcpy HtoD"):
				s.MemcpyBytes.HtoDOther += bytes
			case strings.HasPrefix(name, "Memcpy DtoH"):
				s.MemcpyBytes.DtoH += bytes
			case strings.HasPrefix(name, "Memcpy DtoD"):
				s.MemcpyBytes.DtoD += bytes
			default:
				s.MemcpyBytes.Other += bytes
			}
		case "gpu_memset", "Memset":
			s.GPU.Memsets++
			gpu = true
		case "cuda_runtime", "cuda_driver", "Runtime":
			s.Host.APICalls++
		case "user_annotation":
			s.Host.Ranges++
		case "cpu_op", "Operator", "python_function":
			if strings.HasPrefix(name, "ProfilerStep#") || strings.HasPrefix(name, "enumerate(DataLoader)#") || strings.HasPrefix(name, "enumerate(DataPipe)#") {
				s.Host.Ranges++
			}
		default:
			continue
		}
		if !pidOK || !tidOK {
			continue
		}
		if gpu {
			ts := usToNS(t, e["ts"].(json.Number))
			dur := int64(0)
			if d, ok := e["dur"].(json.Number); ok {
				dur = usToNS(t, d)
			}
			iv = append(iv, [2]int64{ts, ts + dur})
			devs[pid] = true
			streams[[2]int64{pid, tid}] = true
		} else {
			threads[[2]int64{pid, tid}] = true
		}
	}
	s.GPU.BusyNS, s.GPU.SpanNS = naiveUnion(iv)
	s.Devices, s.Streams, s.Host.Threads = len(devs), len(streams), len(threads)
	return s
}
