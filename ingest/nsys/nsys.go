// Package nsys reads Nsight Systems SQLite exports (`nsys export --type
// sqlite`) into a timeline.Timeline.
//
// Versions handled: exports from nsys 2022.2 to 2026.2 (schema 2.9.1 to
// 3.25.0) are tested, and older ones are read where their tables have the
// columns used. The differences absorbed here:
//
//   - the metadata table is EXPORT_META_DATA up to 2023.1 and
//     META_DATA_EXPORT from 2023.3; exports before 2022 have neither;
//   - tables are created lazily, so any table may be absent; an export made
//     with --lazy=false has them all, and there an empty table counts as
//     absent too;
//   - columns are added over time (greenContextId, graphId, copyCount, ...),
//     so the columns read are chosen with PRAGMA table_info;
//   - ENUM_* tables are missing before schema 3.0 and vary later, so copy
//     and memory kinds use built-in maps, with nsys's memory-kind numbering
//     (which is not CUPTI's);
//   - RUNTIME holds runtime (eventClass 0) and driver (1) calls, and in 2022
//     also CUDA backtrace rows (67), which are dropped;
//   - NVTX text is in `text`, or in StringIds via `textId` for registered
//     strings;
//   - correlation ids repeat across processes, so events carry the process id
//     (from globalPid / globalTid) that scopes them;
//   - TARGET_INFO_GPU has 5 columns before 2022, about 41 after, and is
//     absent from 2026.2 exports, where Timeline.Devices stays empty;
//   - OSRT_API holds "profiling started/finished" marker rows (eventClass 31
//     and 32), which are dropped.
//
// Times are nanoseconds on the export's capture clock. Kernels are named by
// shortName (else demangledName); copies, memsets and sync records, which have
// no name column, get the names Kineto gives them ("Memcpy HtoD (Pageable ->
// Device)", "Memset (Device)", "Stream Sync"); whole-graph executions
// (CUPTI_ACTIVITY_KIND_GRAPH_TRACE) become kernels with FlagGraph named
// "CUDA Graph <graphId>". Large tables are read in rowid ranges on several
// read-only connections at once.
//
// The file is opened read-only and never written; no journal, WAL or shm
// file is created next to it. The captured environment (TARGET_INFO_SYSTEM_ENV,
// environment rows of META_DATA_CAPTURE) is never read into the timeline.
package nsys

import (
	"errors"
	"fmt"

	"github.com/traceaudit/traceaudit/ingest/nsys/internal/sqlitefile"
	"github.com/traceaudit/traceaudit/internal/hugepage"
	"github.com/traceaudit/traceaudit/timeline"
)

// Options control reading.
type Options struct {
	// Progress, when set, is called about every 65,536 rows with the number
	// of rows read so far and the estimated total number of rows to read
	// (from rowid ranges; approximate). Calls are serialized but may come
	// from different goroutines; the last call has done == total.
	Progress func(done, total int64)
	// Warn, when set, receives non-fatal problems, one line each: rows
	// skipped for NULL in a required column (one line per table), rows of
	// unknown kinds, names missing from StringIds. It is called from the
	// goroutine that called ReadFile.
	Warn func(msg string)
	// MaxEvents, when above 0, refuses exports with more rows than this
	// (ErrTooLarge) before reading them: the caller derives it from the
	// memory available.
	MaxEvents int64
}

// VersionUnknown is the Source.Version of an export without a metadata
// table (EXPORT_META_DATA or META_DATA_EXPORT), which nsys 2021 and
// earlier did not write: the producer version is not recorded.
const VersionUnknown = "2021 or earlier (no export metadata)"

// ErrTooLarge is returned (wrapped) when an export has more rows than
// Options.MaxEvents.
var ErrTooLarge = errors.New("too large for the memory available")

// ErrNoCUDA is returned (wrapped) when an nsys export has none of the CUDA
// activity tables (kernels, copies, memsets, graph executions, API calls).
var ErrNoCUDA = errors.New("no CUDA activity: capture with --trace=cuda")

// ErrNotNsys is returned (wrapped) when a file is not an SQLite file, or is
// an SQLite database without the tables of an nsys export (StringIds and one
// of META_DATA_EXPORT, EXPORT_META_DATA, TARGET_INFO_* or
// CUPTI_ACTIVITY_KIND_*).
var ErrNotNsys = errors.New("not an nsys export")

// ReadFile reads an nsys SQLite export into a validated timeline. It opens
// the file read-only and never writes it. Errors are prefixed "nsys:" and name
// the table and rowid of a bad row; a corrupt or truncated file gives an
// error, never a panic.
func ReadFile(path string, opts Options) (*timeline.Timeline, error) {
	x, err := openExport(path)
	if err != nil {
		return nil, err
	}
	defer x.close()
	present := func(name string) bool { t := x.tables[name]; return t != nil && t.present }
	if !present(tabKernel) && !present(tabMemcpy) && !present(tabMemset) && !present(tabRuntime) && !present(tabGraph) {
		return nil, fmt.Errorf("nsys: %w", ErrNoCUDA)
	}

	readers, err := x.readers()
	if err != nil {
		return nil, err
	}
	tasks, err := planTasks(x.db, readers)
	if err != nil {
		return nil, err
	}
	if opts.MaxEvents > 0 {
		var rows int64
		for _, t := range tasks {
			rows += t.est
		}
		if rows > opts.MaxEvents {
			return nil, fmt.Errorf("nsys: %w: about %d rows, at most %d fit", ErrTooLarge, rows, opts.MaxEvents)
		}
	}
	threads, err := x.readThreadNames()
	if err != nil {
		return nil, err
	}
	devices, err := x.readDevices()
	if err != nil {
		return nil, err
	}
	x.close() // the bulk scan uses its own connections

	p := &pool{uri: x.uri, tasks: tasks, progress: opts.Progress}
	if f, err := sqlitefile.Open(path); err == nil {
		p.file = f
		defer f.Close()
	}
	chunks, workers, err := p.run()
	if err != nil {
		return nil, err
	}
	var strRows []sidString
	nEvents := 0
	for _, c := range chunks {
		strRows = append(strRows, c.strs...)
		nEvents += len(c.events)
	}
	strs := newStringTable(strRows)

	b := timeline.NewBuilder(timeline.Source{Path: path, Format: timeline.FormatNsys, Version: x.version})
	b.UseBuffer(hugepage.Make[timeline.Event](0, nEvents))
	b.MakeInt32s = func(n int) []int32 { return hugepage.Make[int32](n, n) }
	b.FreeInt32s = func(s []int32) { hugepage.NewReleaser(s).Release(cap(s)) }
	m := newMerger(b, strs, workers)
	m.run(chunks)
	setThreadNames(b, threads, strs)
	for _, d := range devices {
		b.AddDevice(d)
	}
	b.Observed = timeline.Observed{
		GPU:         present(tabKernel) || present(tabMemcpy) || present(tabMemset) || present(tabGraph),
		APICalls:    present(tabRuntime),
		OSCalls:     present(tabOSRT) || x.osrtTraced,
		NVTX:        present(tabNVTX),
		DataLoader:  m.dataLoader,
		MemoryKinds: present(tabMemcpy),
		CanOSCalls:  true,
		CanNVTX:     true,
	}
	if opts.Progress != nil {
		d := p.done.Load()
		opts.Progress(d, d)
	}
	if opts.Warn != nil {
		warnings(opts.Warn, readers, chunks, m.missing)
	}
	tl, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("nsys: %w", err)
	}
	return tl, nil
}

// readers returns a reader for each table present, StringIds first.
func (x *export) readers() ([]tableReader, error) {
	makers := []struct {
		name string
		mk   func(*table) (tableReader, error)
	}{
		{tabStrings, newStringsReader},
		{tabRuntime, newRuntimeReader},
		{tabKernel, newKernelReader},
		{tabMemcpy, newMemcpyReader},
		{tabMemset, newMemsetReader},
		{tabSync, newSyncReader},
		{tabGraph, newGraphReader},
		{tabOSRT, newOSRTReader},
		{tabNVTX, newNVTXReader},
	}
	var out []tableReader
	for _, mk := range makers {
		t := x.tables[mk.name]
		if t == nil || !t.present {
			continue
		}
		rd, err := mk.mk(t)
		if err != nil {
			return nil, err
		}
		out = append(out, rd)
	}
	return out, nil
}

// warnings reports skipped rows, one line per table, and missing strings.
func warnings(warn func(string), readers []tableReader, chunks []*chunk, missing int) {
	for _, rd := range readers {
		skipped, dropped := 0, 0
		for _, c := range chunks {
			if c != nil && c.task.rd == rd {
				skipped += c.skipped
				dropped += c.dropped
			}
		}
		name := rd.table().name
		if skipped > 0 {
			warn(fmt.Sprintf("nsys: %s: skipped %d rows with NULL %s", name, skipped, rd.required()))
		}
		if dropped > 0 {
			warn(fmt.Sprintf("nsys: %s: skipped %d %s", name, dropped, rd.dropNote()))
		}
	}
	if missing > 0 {
		warn(fmt.Sprintf("nsys: %s: %d names refer to missing ids (left empty)", tabStrings, missing))
	}
}
