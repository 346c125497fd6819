package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// rankSources are the real rank traces a job folder is tiled from: the two
// ranks of the H200 DDP capture d0_straggler.
var rankSources = []string{
	filepath.Join("fixtures", "h200-ddp", "d0_straggler.rank0.pt.trace.json.gz"),
	filepath.Join("fixtures", "h200-ddp", "d0_straggler.rank1.pt.trace.json.gz"),
}

// tileRanks writes a job folder of ranks rank traces into dir: rank r is
// rankSources[r % 2] tiled in time to about perRank bytes, with its
// distributedInfo saying rank r of world size ranks. It returns the events
// written in all.
func tileRanks(dir string, ranks int, perRank int64) (int64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	sizes := make([]int64, len(rankSources))
	for i, src := range rankSources {
		n, err := gunzippedSize(src)
		if err != nil {
			return 0, err
		}
		sizes[i] = n
	}
	var events int64
	for r := range ranks {
		src := rankSources[r%len(rankSources)]
		tiles := int(max(1, (perRank+sizes[r%len(sizes)]-1)/sizes[r%len(sizes)]))
		tmp := filepath.Join(dir, fmt.Sprintf(".rank%02d.tmp", r))
		_, n, err := tileChrome(src, tmp, tiles)
		if err != nil {
			return 0, err
		}
		events += n
		dst := filepath.Join(dir, fmt.Sprintf("rank%02d.pt.trace.json", r))
		if err := setRank(tmp, dst, r, ranks); err != nil {
			return 0, err
		}
		if err := os.Remove(tmp); err != nil {
			return 0, err
		}
	}
	return events, nil
}

// setRank copies a tiled trace, replacing its top-level distributedInfo
// line (tileChrome writes each top-level key on a line of its own) with one
// for rank of world.
func setRank(src, dst string, rank, world int) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriterSize(out, 4<<20)
	done := false
	for !done {
		line, err := r.ReadBytes('\n')
		if bytes.HasPrefix(line, []byte(`  "distributedInfo":`)) {
			line = fmt.Appendf(nil, "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d},\n", rank, world)
		}
		if _, werr := w.Write(line); werr != nil {
			out.Close()
			return werr
		}
		if bytes.HasPrefix(line, []byte(`  "traceEvents": [`)) || err != nil {
			done = true
			if err != nil && err != io.EOF {
				out.Close()
				return err
			}
		}
	}
	if _, err := io.Copy(w, r); err != nil {
		out.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// gunzippedSize is the size of a .gz file's content.
func gunzippedSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return 0, err
	}
	return io.Copy(io.Discard, zr)
}

// Rank folder benchmark: a job of rankCount ranks tiled to rankBytes each,
// analysed as a folder, and its largest rank alone for comparison.
const (
	rankCount = 64
	rankBytes = 15e6
	// rankFolder and rankLargest name the two inputs.
	rankFolder  = "chrome-64-ranks"
	rankLargest = "chrome-64-ranks, its largest rank"
)

// rankInputs generates the rank folder if it is missing, and returns it and
// its largest rank file as inputs.
func rankInputs(out string, quick bool) ([]input, error) {
	per := int64(rankBytes)
	if quick {
		per = 2e6
	}
	dir := filepath.Join(out, fmt.Sprintf("ranks%d-%dMB", rankCount, per/1e6))
	stamp := dir + ".events"
	var events int64
	if b, err := os.ReadFile(stamp); err == nil {
		fmt.Sscan(string(b), &events)
	} else {
		fmt.Fprintf(os.Stderr, "generating %s (%d ranks of %d MB)\n", dir, rankCount, per/1e6)
		if events, err = tileRanks(dir, rankCount, per); err != nil {
			return nil, err
		}
		if err := os.WriteFile(stamp, []byte(fmt.Sprint(events)), 0o644); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var largest int64
	var largestPath string
	for _, e := range entries {
		if p := filepath.Join(dir, e.Name()); sizeOf(p) > largest {
			largest, largestPath = sizeOf(p), p
		}
	}
	return []input{
		{name: rankFolder, kind: "chrome-ranks", path: dir, events: events},
		{name: rankLargest, kind: "chrome", path: largestPath, events: events / rankCount},
	}, nil
}
