package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/traceaudit/traceaudit/driver"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// The tiled rank folder is one job of its ranks, as the real one is: the
// straggler of the original (rank 1's copies, which build batches on the
// main thread) is an odd rank, and tiling keeps what the traces say.
func TestTileRanks(t *testing.T) {
	t.Chdir(testfix.Root())
	dir := filepath.Join(t.TempDir(), "ranks")
	events, err := tileRanks(dir, 4, 10e6)
	if err != nil {
		t.Fatal(err)
	}
	res, err := driver.Analyze([]string{dir}, driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := res.Job
	if res.Kind != driver.KindJob || j.Job.Ranks != 4 || j.Job.WorldSize == nil || *j.Job.WorldSize != 4 || events < 4*30000 {
		t.Fatalf("kind %s, %d events: %+v", res.Kind, events, j)
	}
	if s := j.Job.Straggler; s == nil || s.Rank%2 != 1 || s.Cause != "dataloader-wait" {
		t.Errorf("straggler %+v", s)
	}
	for i, r := range j.Ranks {
		if *r.Rank != i || r.Steps.Count < 6 {
			t.Errorf("rank %d: %d steps", *r.Rank, r.Steps.Count)
		}
	}
}

// TestWriteRankDocs: the reduce benchmark's rank analyses alternate the
// sources and carry their own rank of the job's world size.
func TestWriteRankDocs(t *testing.T) {
	dir := t.TempDir()
	docs := []map[string]any{{"file": "a"}, {"file": "b"}}
	if err := writeRankDocs(dir, docs, 5); err != nil {
		t.Fatal(err)
	}
	files, err := rankFiles(dir)
	if err != nil || len(files) != 5 {
		t.Fatalf("%d files (%v), want 5", len(files), err)
	}
	for r, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			File      string `json:"file"`
			Rank      int    `json:"rank"`
			WorldSize int    `json:"world_size"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		if want := []string{"a", "b"}[r%2]; d.File != want || d.Rank != r || d.WorldSize != 5 {
			t.Errorf("%s: %+v, want file %s, rank %d of 5", f, d, want, r)
		}
	}
}
