package chrome

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/timeline"
)

// Communication kernels and their collective metadata, checked against a
// plain JSON decode of every multi-GPU trace: each NCCL kernel carries
// FlagComm, each one with "Collective name" a Collective with its bytes
// (the larger element count times the dtype's size), group and group size;
// distributedInfo gives the rank and world size.
func TestCollectivesAgainstPlainDecode(t *testing.T) {
	files := []string{
		testfix.Project(filepath.Join("h200-ddp", "d0_straggler.rank0.pt.trace.json.gz")),
		testfix.Project(filepath.Join("h200-ddp", "d0_straggler.rank1.pt.trace.json.gz")),
		testfix.Project(filepath.Join("h200-ddp", "d1_balanced.rank1.pt.trace.json.gz")),
	}
	for _, n := range []string{"hta_a100_ddp2_rank0_nccl_reltime.json.gz", "hta_a100_ddp16_rank0_pinned_pageable.json.gz",
		"hta_a100_ddp8_rank3_dataloader_async_cpu_to_gpu.json.gz", "tracelens_b200_vllm_eager_tp8_rank0.json.gz"} {
		files = append(files, testfix.Shared(t, "chrome", n))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data := readFixture(t, path)
			var doc struct {
				Dist *struct {
					Rank      int    `json:"rank"`
					WorldSize int    `json:"world_size"`
					Backend   string `json:"backend"`
				} `json:"distributedInfo"`
				Events []struct {
					Cat  string         `json:"cat"`
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"traceEvents"`
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			wantComm, wantColl := 0, 0
			var wantBytes int64
			for _, e := range doc.Events {
				if e.Cat != "kernel" && e.Cat != "Kernel" {
					continue
				}
				lower := strings.ToLower(e.Name)
				if strings.HasPrefix(lower, "nccl") || strings.Contains(e.Name, "multimem_all_reduce") {
					wantComm++
				}
				if op, ok := e.Args["Collective name"].(string); ok && op != "" {
					wantColl++
					in, _ := e.Args["In msg nelems"].(float64)
					out, _ := e.Args["Out msg nelems"].(float64)
					size := map[string]int64{"Float": 4, "BFloat16": 2, "Long": 8, "Half": 2}[e.Args["dtype"].(string)]
					wantBytes += int64(max(in, out)) * size
				}
			}
			tl, _ := parseBytes(t, data)
			comm := 0
			for i := range tl.Events {
				if tl.Events[i].Has(timeline.FlagComm) {
					comm++
				}
			}
			var gotBytes int64
			for _, c := range tl.Collectives {
				gotBytes += c.Bytes
				if c.Group == "" || c.GroupSize < 2 || c.Seq != -1 {
					t.Errorf("collective %+v: group or seq not read", c)
				}
			}
			if comm != wantComm || len(tl.Collectives) != wantColl || gotBytes != wantBytes {
				t.Errorf("comm kernels %d, collectives %d of %d bytes; want %d, %d, %d", comm, len(tl.Collectives), gotBytes, wantComm, wantColl, wantBytes)
			}
			if wantComm == 0 {
				t.Errorf("a multi-GPU trace without communication kernels")
			}
			if d := doc.Dist; d != nil {
				if want := (timeline.Distributed{Known: true, Rank: d.Rank, WorldSize: d.WorldSize, Backend: d.Backend}); tl.Dist != want {
					t.Errorf("distributed %+v, want %+v", tl.Dist, want)
				}
			}
		})
	}
}

func TestDistributedInfoMalformed(t *testing.T) {
	for _, c := range []struct {
		top  string
		want timeline.Distributed
	}{
		{`"distributedInfo": {"rank": 3, "world_size": 8, "backend": "nccl"}`, timeline.Distributed{Known: true, Rank: 3, WorldSize: 8, Backend: "nccl"}},
		{`"distributedInfo": {"rank": 0}`, timeline.Distributed{Known: true}},
		{`"distributedInfo": {"rank": 9, "world_size": 8}`, timeline.Distributed{}},
		{`"distributedInfo": {"rank": -1}`, timeline.Distributed{}},
		{`"distributedInfo": {"rank": "0"}`, timeline.Distributed{}},
		{`"distributedInfo": {"rank": 1.5}`, timeline.Distributed{}},
		{`"distributedInfo": [1]`, timeline.Distributed{}},
		{`"distributedInfo": null`, timeline.Distributed{}},
	} {
		doc := `{` + c.top + `, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"device": 0}}]}`
		tl, _ := parseBytes(t, []byte(doc))
		if tl.Dist != c.want {
			t.Errorf("%s: got %+v, want %+v", c.top, tl.Dist, c.want)
		}
	}
}
