package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// jobRanks are the sizes of the reduce benchmark: `traceaudit job` over a
// job's per-rank analyses, tiled from the two real ranks of d0_straggler
// with their rank ids rewritten.
var jobRanks = []int{64, 256, 1024}

// jobInput names the reduce input of n ranks.
func jobInput(n int) string { return fmt.Sprintf("job-%d-ranks", n) }

// jobInputs writes, where missing, a folder of n per-rank analyses (the
// JSON of `analyze --format json`, one a rank, as the map tasks of
// deploy/ write them) for each size of jobRanks, and returns them.
func jobInputs(out, bin string) ([]input, error) {
	var docs []map[string]any
	for _, src := range rankSources {
		b, err := exec.Command(bin, "analyze", "--format", "json", src).Output()
		if err != nil {
			return nil, fmt.Errorf("analyze %s: %w", src, err)
		}
		var d map[string]any
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	var ins []input
	for _, n := range jobRanks {
		dir := filepath.Join(out, jobInput(n))
		stamp := dir + ".ranks"
		if _, err := os.Stat(stamp); err != nil {
			fmt.Fprintf(os.Stderr, "generating %s (%d rank analyses)\n", dir, n)
			if err := writeRankDocs(dir, docs, n); err != nil {
				return nil, err
			}
			if err := os.WriteFile(stamp, []byte(fmt.Sprint(n)), 0o644); err != nil {
				return nil, err
			}
		}
		ins = append(ins, input{name: jobInput(n), kind: "rank-json", path: dir, events: int64(n)})
	}
	return ins, nil
}

// writeRankDocs writes n rank analyses into dir, rank r from docs[r % len].
func writeRankDocs(dir string, docs []map[string]any, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for r := range n {
		d := docs[r%len(docs)]
		d["rank"], d["world_size"] = r, n
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank-%04d.json", r)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// rankFiles lists a reduce input's rank analyses, sorted.
func rankFiles(dir string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(dir, "rank-*.json"))
	sort.Strings(m)
	return m, err
}
