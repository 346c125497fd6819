package driver

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/internal/version"
	"github.com/traceaudit/traceaudit/timeline"
)

// MaxSummaryBytes bounds one JSON summary read by Reduce (an analyze
// object is kilobytes to a few megabytes).
const MaxSummaryBytes = 1 << 30

// Reduce builds the job document from per-rank analyses written by
// `traceaudit analyze --format json` (analyze objects, job documents whose
// ranks are taken over, or batch documents; .gz allowed): the reduce of a
// job analysed as one task per rank. The result is the document
// `traceaudit analyze` prints for the same traces read together. Ranks are
// those the analyses record, else the order of paths.
func Reduce(paths []string, o Options) (*job.Analysis, error) {
	if len(paths) == 0 {
		return nil, errors.New("no analysis files given")
	}
	var reports []*audit.Analysis
	for _, p := range paths {
		rs, err := readSummary(p)
		if err != nil {
			return nil, err
		}
		reports = append(reports, rs...)
	}
	if err := distinct(reports); err != nil {
		return nil, err
	}
	jo := job.Options{}
	if o.Config != nil {
		jo.Bands, jo.InfoFloor = o.Config.Bands, o.Config.InfoFloor
	}
	if len(reports) < 2 {
		return nil, fmt.Errorf("%s: %w: a job needs the analyses of two ranks or more", paths[0], job.ErrNotJob)
	}
	// Ranks as recorded; where any is missing or repeated, in argument
	// order (design.md: "Rank: distributedInfo.rank, else file order").
	seen := map[int]bool{}
	byOrder := false
	for _, r := range reports {
		if r.Rank == nil || seen[*r.Rank] {
			byOrder = true
			break
		}
		seen[*r.Rank] = true
	}
	if byOrder {
		for i, r := range reports {
			n := i
			r.Rank = &n
		}
	}
	return job.Reduce(reports, jo)
}

// readSummary reads one JSON summary into analyze objects.
func readSummary(path string) ([]*audit.Analysis, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	defer f.Close()
	var r io.Reader = f
	head := make([]byte, 2)
	if n, _ := io.ReadFull(f, head); n == 2 && head[0] == 0x1f && head[1] == 0x8b {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: not a readable gzip file: %s", path, jsonWhy(err))
		}
		r = zr
	} else if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxSummaryBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read it: %s", path, jsonWhy(err))
	}
	if len(data) > MaxSummaryBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes: not a traceaudit analysis", path, MaxSummaryBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty file: not a traceaudit analysis (traceaudit analyze --format json)", path)
	}
	var probe struct {
		Schema *int              `json:"schema_version"`
		Job    json.RawMessage   `json:"job"`
		Ranks  []json.RawMessage `json:"ranks"`
		Files  []json.RawMessage `json:"files"`
		File   *string           `json:"file"`
		Steps  json.RawMessage   `json:"steps"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%s: not a traceaudit analysis (traceaudit analyze --format json): %s", path, jsonWhy(err))
	}
	if probe.Schema != nil && *probe.Schema > version.Schema {
		return nil, fmt.Errorf("%s: written by a newer traceaudit (JSON schema %d; this one reads %d and older): analyze the traces with this one",
			path, *probe.Schema, version.Schema)
	}
	var raws []json.RawMessage
	switch {
	case probe.Job != nil:
		raws = probe.Ranks
	case probe.Files != nil:
		raws = probe.Files
	case probe.File != nil && probe.Steps != nil:
		raws = []json.RawMessage{data}
	default:
		return nil, fmt.Errorf("%s: not a traceaudit analysis (traceaudit analyze --format json)", path)
	}
	out := make([]*audit.Analysis, 0, len(raws))
	for _, raw := range raws {
		var r audit.Analysis
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s: not a traceaudit analysis (traceaudit analyze --format json): %s", path, jsonWhy(err))
		}
		out = append(out, &r)
	}
	return out, nil
}

// jsonWhy says what is wrong with a JSON document in a user's words, not
// Go's (the decoder names Go types).
func jsonWhy(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("not valid JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ) && typ.Field == "":
		return fmt.Sprintf("it holds a JSON %s, where an analysis is an object", typ.Value)
	case errors.As(err, &typ):
		return fmt.Sprintf("its %q is a JSON %s, which an analysis does not hold there", typ.Field, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "it ends early (truncated?)"
	}
	return err.Error()
}

// distinct refuses the same rank's analysis given twice: one file and
// process (and rank, where recorded) in two arguments, which would count
// one rank as two.
func distinct(reports []*audit.Analysis) error {
	seen := map[string]int{}
	for i, r := range reports {
		key := r.File
		if r.PID != nil {
			key += fmt.Sprintf("\x00pid %d", *r.PID)
		}
		if r.Rank != nil {
			key += fmt.Sprintf("\x00rank %d", *r.Rank)
		}
		if j, ok := seen[key]; ok {
			return fmt.Errorf("analyses %d and %d are of the same rank (%s%s): give each rank's analysis once", j+1, i+1, r.File, pidText(r.PID))
		}
		seen[key] = i
	}
	return nil
}

func pidText(pid *int64) string {
	if pid == nil {
		return ""
	}
	return fmt.Sprintf(", pid %d", *pid)
}

// RankTimeline reads the trace of one rank of a job again, whole: the
// rank's file, and in an export of several processes, its process only.
func RankTimeline(j *job.Analysis, rank int, open func(string) (*timeline.Timeline, error)) (*timeline.Timeline, error) {
	for _, r := range j.Ranks {
		if *r.Rank != rank {
			continue
		}
		tl, err := open(r.File)
		if err != nil {
			return nil, err
		}
		if len(tl.GPUProcesses()) > 1 && r.PID != nil {
			return tl.ForProcess(*r.PID), nil
		}
		return tl, nil
	}
	var have []string
	for _, r := range j.Ranks {
		have = append(have, fmt.Sprint(*r.Rank))
	}
	return nil, fmt.Errorf("no rank %d in the job (ranks %s)", rank, strings.Join(have, ", "))
}
