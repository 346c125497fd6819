// Package driver is the application layer the commands call: it decides
// what a command line's traces are, in one place (one trace, the ranks of
// one job, or a batch of unrelated traces), and analyses them accordingly.
//
//   - Folders are read for their trace files (Nsight Systems SQLite
//     exports and Chrome traces; nothing else, no subfolders).
//   - One Nsight Systems export holding several processes that ran GPU work
//     is a job: one rank per process, ordered by CUDA device.
//   - Several files are a job when all of them are ranks of one job
//     (Chrome distributedInfo with equal world_size and distinct ranks, and
//     windows that overlap in time), or when the user says so (--job).
//   - Otherwise they are a batch: each single-process trace analysed alone,
//     each job (a multi-process export, or traces that are the ranks of one
//     job) as its ranks, and a bad file reported while the others are
//     analysed.
//
// Each trace is read and analysed by a pool of workers sized so that the
// traces in flight fit in memory; only the analysis (the audit.Analysis,
// without its timeline) is kept, so a folder of ranks costs about as much
// memory as its largest traces read at once.
package driver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/timeline"
)

// Kind is what the inputs turned out to be.
type Kind int

// Kinds of input sets.
const (
	// KindSingle is one trace of one GPU process.
	KindSingle Kind = iota + 1
	// KindJob is the ranks of one job.
	KindJob
	// KindBatch is unrelated traces, each analysed alone.
	KindBatch
)

func (k Kind) String() string {
	switch k {
	case KindSingle:
		return "single"
	case KindJob:
		return "job"
	case KindBatch:
		return "batch"
	}
	return "unknown"
}

// Options control Analyze.
type Options struct {
	// Config is the analysis configuration.
	Config *analyze.Config
	// Job makes the files one job whatever their metadata says (--job).
	Job bool
	// Open reads one trace (default: ingest.Open with default options).
	// It is called from several goroutines at once.
	Open func(path string) (*timeline.Timeline, error)
	// KeepTimeline keeps the timeline and index of a Single result (for
	// plots and the replay); other results never keep them.
	KeepTimeline bool
	// Workers bounds the traces read at once (0: one per CPUsPerTrace
	// CPUs, as memory allows).
	Workers int
	// MemoryLimit is the memory the traces in flight may use (0: half the
	// memory available).
	MemoryLimit int64
	// KeepMemoryLimit keeps the soft memory limit under which several
	// traces are analysed after Analyze returns, for a command that renders
	// the result and exits: rendering then stays within it too.
	KeepMemoryLimit bool
}

// Result is what the inputs were and their analysis.
type Result struct {
	Kind Kind
	// Single, Job or Batch holds the analysis, by Kind.
	Single *audit.Analysis
	Job    *job.Analysis
	Batch  *job.Batch
	// Failed are the traces of a batch that could not be read or analysed,
	// each error naming its file; the caller reports them and exits 2.
	Failed []error
	// Paths are the trace files read, in order.
	Paths []string
}

// Inputs are the trace files that arguments name (Expand).
type Inputs struct {
	// Files are the trace files, in order; Folders the arguments that
	// were folders; Skipped the .nsys-rep reports left out of a folder
	// because their export is beside them.
	Files, Folders, Skipped []string
	// Jobs, when set, are the sub-folders of a folder of job folders,
	// Jobs[i] the trace files of one (each also in Files): one job per
	// sub-folder, or a trace alone where it holds one single-process
	// trace.
	Jobs [][]string
}

// Expand turns the arguments into trace files: files as given, folders
// into the trace files they hold (sorted by name). A folder without
// traces is an error, unless its sub-folders hold them: a folder of job
// folders (Inputs.Jobs), given alone. An Nsight Systems report (.nsys-rep)
// in a folder is a trace (exported when read), unless NAME.sqlite, its
// export, is beside it: then it is listed in Skipped.
func Expand(args []string) (Inputs, error) {
	var files, folders, skipped []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			files = append(files, a) // ingest names what is wrong with it
			continue
		}
		folders = append(folders, a)
		traces, skip, subs, err := listFolder(a)
		if err != nil {
			return Inputs{}, err
		}
		skipped = append(skipped, skip...)
		if len(traces) == 0 && len(args) == 1 {
			if in, ok := jobFolders(a, subs); ok {
				return in, nil
			}
		}
		if len(traces) == 0 {
			return Inputs{}, &ingest.Error{Path: a, Err: errors.New("the folder holds no trace files"),
				Hint: "give Nsight Systems SQLite exports or PyTorch profiler Chrome traces, or a folder of job folders"}
		}
		files = append(files, traces...)
	}
	return Inputs{Files: files, Folders: folders, Skipped: skipped}, nil
}

// jobFolders is the folder a of job folders: each sub-folder of subs that
// holds trace files is one job (or one trace); ok is false when none does.
func jobFolders(a string, subs []string) (Inputs, bool) {
	in := Inputs{Folders: []string{a}}
	for _, sub := range subs {
		traces, skip, _, err := listFolder(sub)
		if err != nil || len(traces) == 0 {
			continue
		}
		in.Files = append(in.Files, traces...)
		in.Skipped = append(in.Skipped, skip...)
		in.Jobs = append(in.Jobs, traces)
	}
	return in, len(in.Jobs) > 0
}

// listFolder lists the trace files of folder a, the reports left out
// beside their exports, and its sub-folders, each sorted by name.
func listFolder(a string) (traces, skipped, subs []string, err error) {
	entries, err := os.ReadDir(a)
	if err != nil {
		return nil, nil, nil, &ingest.Error{Path: a, Err: errors.New("cannot list the folder")}
	}
	for _, e := range entries {
		p := filepath.Join(a, e.Name())
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if e.IsDir() {
			subs = append(subs, p)
			continue
		}
		if !e.Type().IsRegular() {
			// A link to a trace counts; the rest does not.
			if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
				continue
			}
		}
		switch f, _ := ingest.Detect(p); f {
		case ingest.FormatUnknown:
			// Not a trace (notes, scripts): left out.
		case ingest.FormatNsysReport:
			// A report is read (exported with nsys) unless its export is
			// beside it: one trace, not two ranks.
			stem := strings.TrimSuffix(p, filepath.Ext(p))
			if _, err := os.Stat(stem + ".sqlite"); err == nil {
				skipped = append(skipped, p)
				continue
			}
			traces = append(traces, p)
		default:
			traces = append(traces, p)
		}
	}
	return traces, skipped, subs, nil
}

// Analyze reads and analyses the traces args name (files or folders) and
// decides whether they are one trace, one job or a batch.
func Analyze(args []string, o Options) (*Result, error) {
	in, err := Expand(args)
	if err != nil {
		return nil, err
	}
	return AnalyzeInputs(in, o)
}

// AnalyzeInputs is Analyze of inputs already expanded.
func AnalyzeInputs(in Inputs, o Options) (*Result, error) {
	if o.Config == nil {
		o.Config = analyze.DefaultConfig()
	}
	if o.Open == nil {
		o.Open = func(p string) (*timeline.Timeline, error) { return ingest.Open(p, ingest.Options{}) }
	}
	paths := in.Files
	if len(paths) == 0 {
		return nil, errors.New("no trace files given")
	}
	keep := o.KeepTimeline && len(paths) == 1
	units := mapAll(paths, o, keep)
	res := &Result{Paths: paths}
	var ok []*unit
	for _, u := range units {
		if u.err != nil {
			res.Failed = append(res.Failed, u.err)
			continue
		}
		ok = append(ok, u)
	}
	if len(paths) == 1 {
		if len(res.Failed) > 0 {
			return nil, res.Failed[0]
		}
		u := ok[0]
		if !u.multi {
			res.Kind, res.Single = KindSingle, u.reports[0]
			return res, nil
		}
		return reduce(res, u.reports, o)
	}
	groups, loose := group(ok, o.Job)
	if len(in.Jobs) > 0 {
		groups, loose = bySubFolder(ok, in.Jobs)
	}
	if len(groups) == 1 && len(loose) == 0 {
		if len(res.Failed) > 0 {
			return nil, fmt.Errorf("%w (the other traces are ranks of one job: every rank must be readable)", res.Failed[0])
		}
		return reduce(res, groups[0].reports(), o)
	}
	// A batch: each trace alone, each job as its ranks.
	res.Kind, res.Batch = KindBatch, &job.Batch{Files: []*audit.Analysis{}, Jobs: []*job.Analysis{}}
	for _, u := range loose {
		res.Batch.Files = append(res.Batch.Files, u.reports...)
	}
	for _, g := range groups {
		j, err := job.Reduce(g.reports(), job.Options{Bands: o.Config.Bands, InfoFloor: o.Config.InfoFloor})
		if err != nil {
			res.Failed = append(res.Failed, fmt.Errorf("%s: %w", g, err))
			continue
		}
		res.Batch.Jobs = append(res.Batch.Jobs, j)
	}
	if len(res.Batch.Files)+len(res.Batch.Jobs) == 0 {
		return nil, res.Failed[0]
	}
	return res, nil
}

// reduce builds the job of reports into res.
func reduce(res *Result, reports []*audit.Analysis, o Options) (*Result, error) {
	j, err := job.Reduce(reports, job.Options{Bands: o.Config.Bands, InfoFloor: o.Config.InfoFloor})
	if err != nil {
		return nil, err
	}
	res.Kind, res.Job = KindJob, j
	return res, nil
}

// group sorts readable traces into jobs: each multi-process export is one,
// and traces that record their rank join one job when their world sizes
// agree and their ranks are distinct; with force (--job) all of them are
// one job. loose are the traces that belong to no job.
func group(units []*unit, force bool) (groups []*jobGroup, loose []*unit) {
	if force {
		g := &jobGroup{}
		for _, u := range units {
			g.units = append(g.units, u)
		}
		return []*jobGroup{g}, nil
	}
	var ranked []*unit
	for _, u := range units {
		switch {
		case u.multi:
			groups = append(groups, &jobGroup{units: []*unit{u}})
		case u.dist.Known && u.dist.WorldSize > 1:
			ranked = append(ranked, u)
		default:
			loose = append(loose, u)
		}
	}
	for _, g := range clusters(ranked) {
		if distinctRanks(g.units) {
			groups = append(groups, g)
		} else {
			loose = append(loose, g.units...)
		}
	}
	return groups, loose
}

// bySubFolder groups the readable traces of a folder of job folders: the
// traces of each sub-folder (jobs[i]) are one job, whatever their metadata
// says, where there are several; a sub-folder's one trace stays alone,
// or is its own job when it is a multi-process export.
func bySubFolder(units []*unit, jobs [][]string) (groups []*jobGroup, loose []*unit) {
	at := map[string]*unit{}
	for _, u := range units {
		at[u.path] = u
	}
	for _, paths := range jobs {
		g := &jobGroup{}
		for _, p := range paths {
			if u, ok := at[p]; ok {
				g.units = append(g.units, u)
			}
		}
		switch {
		case len(g.units) == 1 && !g.units[0].multi:
			loose = append(loose, g.units[0])
		case len(g.units) > 0:
			groups = append(groups, g)
		}
	}
	return groups, loose
}

// distinctRanks reports whether no two traces claim the same rank.
func distinctRanks(us []*unit) bool {
	seen := map[int]bool{}
	for _, u := range us {
		if seen[u.dist.Rank] {
			return false
		}
		seen[u.dist.Rank] = true
	}
	return true
}

// clusters splits ranked traces into the jobs they seem to be: traces of
// one world size whose windows overlap in time (the ranks of one job run
// together; traces of different runs do not).
func clusters(us []*unit) []*jobGroup {
	sorted := slices.Clone(us)
	slices.SortStableFunc(sorted, func(a, b *unit) int {
		if a.dist.WorldSize != b.dist.WorldSize {
			return a.dist.WorldSize - b.dist.WorldSize
		}
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	var out []*jobGroup
	var cur *jobGroup
	var hi int64
	for _, u := range sorted {
		if cur == nil || u.dist.WorldSize != cur.units[0].dist.WorldSize || u.lo >= hi {
			cur = &jobGroup{}
			out = append(out, cur)
			hi = u.hi
		}
		cur.units = append(cur.units, u)
		hi = max(hi, u.hi)
	}
	return out
}

// jobGroup is the traces of one job.
type jobGroup struct{ units []*unit }

func (g *jobGroup) String() string {
	var names []string
	for _, u := range g.units {
		names = append(names, filepath.Base(u.path))
	}
	return "{" + strings.Join(names, ", ") + "}"
}

// reports lists the group's rank reports; when ranks are unknown or
// repeat (--job), ranks follow the order of the traces.
func (g *jobGroup) reports() []*audit.Analysis {
	var out []*audit.Analysis
	seen := map[int]bool{}
	clash := false
	for _, u := range g.units {
		for _, r := range u.reports {
			if r.Rank == nil || seen[*r.Rank] {
				clash = true
			} else {
				seen[*r.Rank] = true
			}
			out = append(out, r)
		}
	}
	if clash {
		for i, r := range out {
			n := i
			r.Rank = &n
		}
	}
	return out
}
