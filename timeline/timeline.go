// Package timeline is traceaudit's one shared model of a profile: GPU work,
// host CUDA API calls, OS runtime calls, host ranges and host ops, each on a
// track, on one nanosecond clock.
//
// Ingesters (nsys SQLite exports, PyTorch Chrome traces) fill a Builder;
// Build sorts the events, links API calls to the GPU work they launched and
// validates the result. A built Timeline is read-only by convention: analyzers,
// reports and the replay planner read it and never change it.
//
// The package imports only the standard library, so that file formats never
// leak into analysis and analysis never leaks into ingest.
package timeline

import "fmt"

// Kind says what an Event is.
type Kind uint8

// Event kinds. GPU kinds live on GPU tracks, host kinds on host tracks.
const (
	KindInvalid Kind = iota
	// KindKernel is a GPU kernel execution, or a whole CUDA graph execution
	// recorded as one unit (nsys CUPTI_ACTIVITY_KIND_GRAPH_TRACE); see FlagGraph.
	KindKernel
	// KindMemcpy is a GPU copy; Copy, Src, Dst and Bytes describe it.
	KindMemcpy
	// KindMemset is a GPU memset of Bytes bytes.
	KindMemset
	// KindGPUSync is a GPU-side synchronisation record (nsys
	// CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, Kineto cuda_sync). Not GPU work.
	KindGPUSync
	// KindAPI is a host CUDA (or HIP) runtime or driver API call; API says
	// which class of call it is.
	KindAPI
	// KindOS is a host OS runtime call such as munmap or poll.
	KindOS
	// KindRange is a host range: NVTX push/pop or start/end,
	// record_function / user_annotation, ProfilerStep#N, DataLoader __next__.
	// Range says which.
	KindRange
	// KindOp is a host operator (cpu_op, python_function).
	KindOp
	// KindMarker is an instant (End == Start).
	KindMarker
	numKinds
)

// NumKinds is the number of kinds, KindInvalid included: arrays indexed by
// Kind have this length.
const NumKinds = numKinds

var kindNames = [...]string{"invalid", "kernel", "memcpy", "memset", "gpu-sync", "api", "os", "range", "op", "marker"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// OnGPU reports whether events of kind k live on GPU tracks.
func (k Kind) OnGPU() bool { return k >= KindKernel && k <= KindGPUSync }

// IsGPUWork reports whether k occupies a GPU engine: kernels (and graph
// executions), copies and memsets. Sync records are not work.
func (k Kind) IsGPUWork() bool { return k == KindKernel || k == KindMemcpy || k == KindMemset }

// CopyKind is the direction of a memcpy.
type CopyKind uint8

// Copy directions.
const (
	CopyUnknown CopyKind = iota
	CopyHtoD
	CopyDtoH
	CopyDtoD
	CopyHtoH
	CopyPtoP
	// CopyUnified is a unified-memory (managed) migration.
	CopyUnified
	// CopyArray is a copy to, from or between CUDA arrays.
	CopyArray
	numCopyKinds
)

var copyNames = [...]string{"unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "unified", "array"}

func (c CopyKind) String() string {
	if int(c) < len(copyNames) {
		return copyNames[c]
	}
	return fmt.Sprintf("copy(%d)", uint8(c))
}

// MarshalText writes the direction's name ("HtoD"), as in JSON documents.
func (c CopyKind) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a name that MarshalText writes.
func (c *CopyKind) UnmarshalText(b []byte) error {
	for i, n := range copyNames {
		if n == string(b) {
			*c = CopyKind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown copy direction %q", b)
}

// MemKind is the kind of memory at one end of a copy or under a memset.
type MemKind uint8

// Memory kinds. Note that nsys and CUPTI number these differently; ingesters
// map their own codes onto these values.
const (
	MemUnknown MemKind = iota
	MemPageable
	MemPinned
	MemDevice
	MemManaged
	MemArray
	// MemHost is host memory whose pinned-ness the input does not say
	// (ROCm's "Host").
	MemHost
	numMemKinds
)

var memNames = [...]string{"unknown", "pageable", "pinned", "device", "managed", "array", "host"}

func (m MemKind) String() string {
	if int(m) < len(memNames) {
		return memNames[m]
	}
	return fmt.Sprintf("mem(%d)", uint8(m))
}

// RangeKind classifies host ranges.
type RangeKind uint8

// Range kinds.
const (
	RangeOther RangeKind = iota
	// RangeNVTX is an NVTX push/pop or start/end range.
	RangeNVTX
	// RangeAnnotation is a record_function / user_annotation range.
	RangeAnnotation
	// RangeStep is a PyTorch profiler step (ProfilerStep#N).
	RangeStep
	// RangeDataLoader is a DataLoader iterator's __next__ (the main thread
	// waiting for a batch).
	RangeDataLoader
	numRangeKinds
)

var rangeNames = [...]string{"other", "nvtx", "annotation", "step", "dataloader"}

func (r RangeKind) String() string {
	if int(r) < len(rangeNames) {
		return rangeNames[r]
	}
	return fmt.Sprintf("range(%d)", uint8(r))
}

// Flag bits on an Event.
type Flag uint8

const (
	// FlagDriver marks a driver-API call (cu*), as opposed to a runtime call.
	FlagDriver Flag = 1 << iota
	// FlagGraph marks a kernel row that is a whole CUDA graph execution, or
	// a kernel launched as part of a graph (nsys graphNodeId set).
	FlagGraph
	// FlagOpenEnd marks an event whose end the input did not record (an
	// unclosed range); End was set to the end of the capture.
	FlagOpenEnd
	// FlagGraphExec marks a kernel row that is a whole CUDA graph execution
	// (nsys CUPTI_ACTIVITY_KIND_GRAPH_TRACE), not one kernel: it counts as
	// GPU busy time but not as a kernel. Such rows also carry FlagGraph.
	FlagGraphExec
	// FlagComm marks a kernel that is communication between GPUs (a
	// collective or point-to-point NCCL/RCCL kernel), not compute. Build
	// sets it from the kernel's name (IsCommKernel); ingesters set it from
	// the input's collective metadata (Builder.AddCollective).
	FlagComm
)

// Event is one thing that happened, on one track, over [Start, End).
// Which fields mean something depends on Kind; the others are zero.
type Event struct {
	// Start and End are nanoseconds on the capture clock; End >= Start.
	Start, End int64
	// Corr is the correlation id that links an API call to the GPU work it
	// launched (0: none). It is unique only within one process (Proc).
	Corr int64
	// Bytes is the size of a memcpy or memset, in bytes.
	Bytes int64
	// Link is the index in Timeline.Events of the linked event, or -1: for
	// GPU work, the API call that launched it; for an API call, the first
	// GPU work it launched. Set by Builder.Build.
	Link int32
	// Name is the interned event name; see Timeline.Name.
	Name NameID
	// Track is the index of the event's track in Timeline.Tracks.
	Track TrackID
	// Proc scopes Corr: the OS process that made the API call or owns the
	// GPU work (0 where the input has one process per file).
	Proc uint32
	Kind Kind
	// API classifies a KindAPI call (launch, copy, sync, ...).
	API APIClass
	// Range classifies a KindRange.
	Range RangeKind
	// Copy is a memcpy's direction.
	Copy CopyKind
	// Src and Dst are a memcpy's source and destination memory kinds; Dst
	// alone is a memset's memory kind.
	Src, Dst MemKind
	Flags    Flag
}

// Dur is the event's duration in nanoseconds.
func (e *Event) Dur() int64 { return e.End - e.Start }

// Has reports whether all bits of f are set.
func (e *Event) Has(f Flag) bool { return e.Flags&f == f }

// NameID is an index into a Timeline's interned names. 0 is the empty name.
type NameID uint32

// TrackID is an index into Timeline.Tracks.
type TrackID uint32

// TrackKind says whether a track is a GPU stream or a host thread.
type TrackKind uint8

// Track kinds.
const (
	TrackGPU TrackKind = iota + 1
	TrackHost
)

// Track is a GPU stream (Device, Stream) or a host thread (PID, TID).
type Track struct {
	Kind TrackKind
	// Device and Stream identify a GPU track.
	Device, Stream int64
	// PID and TID identify a host track (OS process and thread ids as the
	// input records them).
	PID, TID int64
	// Name is the thread name where the input records one.
	Name string
	// Events holds the indices in Timeline.Events of this track's events,
	// in the timeline's order.
	Events []int32
}

// Label is the track's name in reports: "gpu<dev>/stream<id>" or
// "host/<pid>/<tid> (<thread name>)".
func (t *Track) Label() string {
	if t.Kind == TrackGPU {
		return fmt.Sprintf("gpu%d/stream%d", t.Device, t.Stream)
	}
	if t.Name != "" {
		return fmt.Sprintf("host/%d/%d (%s)", t.PID, t.TID, t.Name)
	}
	return fmt.Sprintf("host/%d/%d", t.PID, t.TID)
}

// Observed records what the input could observe, so that an analyzer that
// lacks its data says so instead of reporting "no problem".
type Observed struct {
	// GPU: GPU activity (kernels, copies, memsets) was traced.
	GPU bool
	// APICalls: host CUDA API calls were traced.
	APICalls bool
	// OSCalls: OS runtime calls were traced (nsys --trace=osrt). Chrome
	// traces never have them.
	OSCalls bool
	// NVTX: NVTX ranges were traced.
	NVTX bool
	// HostOps: host operators (cpu_op) were traced.
	HostOps bool
	// Annotations: record_function / user_annotation ranges were traced.
	Annotations bool
	// DataLoader: DataLoader __next__ ranges are present.
	DataLoader bool
	// MemoryKinds: memcpy rows say whether host memory is pageable or
	// pinned (ROCm traces do not).
	MemoryKinds bool

	// The Can fields say what the profiler that made the input can record
	// at all, whether or not this capture did, so that an analyzer missing
	// its data can say whether to capture again with other options or with
	// another profiler. Ingesters set them; analyzers never look at the
	// input's format.

	// CanOSCalls: the profiler can trace OS runtime calls (Nsight Systems
	// with --trace=osrt); the PyTorch profiler cannot.
	CanOSCalls bool
	// CanNVTX: the profiler can trace NVTX ranges (Nsight Systems with
	// --trace=nvtx).
	CanNVTX bool
	// CanAnnotations: the profiler records record_function /
	// user_annotation ranges and DataLoader __next__ spans by itself (the
	// PyTorch profiler).
	CanAnnotations bool
}

// Device describes a GPU where the input records it.
type Device struct {
	ID   int64
	Name string
	// SMs is the streaming multiprocessor count (0: unknown).
	SMs int
	// MemoryBytes is the device's global memory (0: unknown).
	MemoryBytes int64
}

// FormatNsys is Source.Format of a timeline read from an Nsight Systems
// SQLite export.
const FormatNsys = "nsys-sqlite"

// Source describes where a timeline came from.
type Source struct {
	// Path is the input file as the user named it.
	Path string
	// Format names the input format for reports ("nsys-sqlite",
	// "chrome-trace"). Analyzers must not branch on it: what the input
	// could observe is in Observed.
	Format string
	// Version is the producer version where known (nsys product version,
	// or a Kineto era such as "kineto-2021").
	Version string
}

// Timeline is a built, validated profile.
type Timeline struct {
	Source Source
	// Events are sorted by Start, then by End descending (so an enclosing
	// range precedes what it encloses), then by Track and Kind.
	Events   []Event
	Tracks   []Track
	Devices  []Device
	Observed Observed
	// Unread counts, by category, the events the reader skipped because it
	// does not know their category (another vendor's device events such
	// as "mtia_ccp_events"), so that a trace holding nothing else can say
	// what it holds.
	Unread map[string]int
	// Collectives describe communication kernels where the input recorded
	// their collective, sorted by Event. Kernels with FlagComm and no entry
	// are known from their names only.
	Collectives []Collective
	// Shapes are the operators' input shapes, sorted by Event, where the
	// input records them and the reader was asked for them.
	Shapes []OpShape
	// Dist is the job the input says it belongs to.
	Dist  Distributed
	names []string
}

// Name returns the text of an interned name.
func (tl *Timeline) Name(id NameID) string {
	if int(id) < len(tl.names) {
		return tl.names[id]
	}
	return ""
}

// EventName returns the name of event i.
func (tl *Timeline) EventName(i int32) string { return tl.Name(tl.Events[i].Name) }

// NumNames is the number of interned names, including the empty name 0.
func (tl *Timeline) NumNames() int { return len(tl.names) }

// Span returns the first start and last end over all events (0, 0 when empty).
func (tl *Timeline) Span() (start, end int64) {
	if len(tl.Events) == 0 {
		return 0, 0
	}
	start = tl.Events[0].Start
	end = start
	for i := range tl.Events {
		if e := tl.Events[i].End; e > end {
			end = e
		}
	}
	return start, end
}

// TrackOf returns the track of event i.
func (tl *Timeline) TrackOf(i int32) *Track { return &tl.Tracks[tl.Events[i].Track] }
