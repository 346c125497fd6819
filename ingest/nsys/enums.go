package nsys

import (
	"strconv"

	"github.com/traceaudit/traceaudit/timeline"
)

// Built-in enum maps. The ENUM_* tables of an export are absent before schema
// 3.0 (nsys 2022.4), spelled differently across versions and thinned out from
// 2025.3, so they are never read.

// Table names.
const (
	tabKernel   = "CUPTI_ACTIVITY_KIND_KERNEL"
	tabMemcpy   = "CUPTI_ACTIVITY_KIND_MEMCPY"
	tabMemset   = "CUPTI_ACTIVITY_KIND_MEMSET"
	tabSync     = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
	tabGraph    = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
	tabRuntime  = "CUPTI_ACTIVITY_KIND_RUNTIME"
	tabOSRT     = "OSRT_API"
	tabNVTX     = "NVTX_EVENTS"
	tabStrings  = "StringIds"
	tabThreads  = "ThreadNames"
	tabGPU      = "TARGET_INFO_GPU"
	tabMeta     = "META_DATA_EXPORT" // schema 3.4 (nsys 2023.3) on
	tabMetaOld  = "EXPORT_META_DATA" // schema 2.9-3.1 (nsys 2022.1-2023.1)
	tabCapture  = "META_DATA_CAPTURE"
	prefixCUPTI = "CUPTI_ACTIVITY_KIND_"
	prefixInfo  = "TARGET_INFO_"
)

// RUNTIME and OSRT_API eventClass values (ENUM_NSYS_EVENT_CLASS).
const (
	classRuntime     = 0  // CUDA runtime API call
	classDriver      = 1  // CUDA driver API call
	classOSRTStart   = 31 // "OS runtime libraries profiling started" marker
	classOSRTFinish  = 32 // "... finished" marker
	classCUDABacktrc = 67 // CUDA backtrace row duplicating an API row (2022.2)
)

// NVTX_EVENTS eventType values (ENUM_NSYS_EVENT_TYPE).
const (
	nvtxMark     = 34 // instant marker; end is NULL
	nvtxPushPop  = 59 // nvtxRangePush / nvtxRangePop
	nvtxStartEnd = 60 // nvtxRangeStart / nvtxRangeEnd
)

// copyKind (ENUM_CUDA_MEMCPY_OPER): index = nsys code.
var copyKinds = [...]struct {
	kind timeline.CopyKind
	name string
}{
	0:  {timeline.CopyUnknown, "Unknown"},
	1:  {timeline.CopyHtoD, "HtoD"},
	2:  {timeline.CopyDtoH, "DtoH"},
	3:  {timeline.CopyArray, "HtoA"},
	4:  {timeline.CopyArray, "AtoH"},
	5:  {timeline.CopyArray, "AtoA"},
	6:  {timeline.CopyArray, "AtoD"},
	7:  {timeline.CopyArray, "DtoA"},
	8:  {timeline.CopyDtoD, "DtoD"},
	9:  {timeline.CopyHtoH, "HtoH"},
	10: {timeline.CopyPtoP, "PtoP"},
	11: {timeline.CopyUnified, "HtoD"}, // unified-memory migrations
	12: {timeline.CopyUnified, "DtoH"},
	13: {timeline.CopyUnified, "DtoD"},
}

// memKinds maps srcKind, dstKind and memKind (ENUM_CUDA_MEM_KIND). This is
// nsys's numbering, not CUPTI's (which starts at 0 unknown, 1 pageable).
var memKinds = [...]struct {
	kind timeline.MemKind
	name string
}{
	0: {timeline.MemPageable, "Pageable"},
	1: {timeline.MemPinned, "Pinned"},
	2: {timeline.MemDevice, "Device"},
	3: {timeline.MemArray, "Array"},
	4: {timeline.MemManaged, "Managed"},
	5: {timeline.MemDevice, "Device Static"},
	6: {timeline.MemManaged, "Managed Static"},
	7: {timeline.MemUnknown, "Unknown"},
}

// copyKind maps an nsys copyKind code; unknown codes are CopyUnknown.
func copyKind(code int64) timeline.CopyKind {
	if code >= 0 && code < int64(len(copyKinds)) {
		return copyKinds[code].kind
	}
	return timeline.CopyUnknown
}

// memKind maps an nsys memory kind code; unknown codes are MemUnknown.
func memKind(code int64) timeline.MemKind {
	if code >= 0 && code < int64(len(memKinds)) {
		return memKinds[code].kind
	}
	return timeline.MemUnknown
}

func memKindName(code int64) string {
	if code >= 0 && code < int64(len(memKinds)) {
		return memKinds[code].name
	}
	return "Unknown"
}

// memcpyName names a copy the way Kineto and the nsys GUI do, so that names
// match across input formats: "Memcpy HtoD (Pageable -> Device)".
func memcpyName(ck, src, dst int64) string {
	dir := "Unknown"
	uvm := false
	if ck >= 0 && ck < int64(len(copyKinds)) {
		dir = copyKinds[ck].name
		uvm = copyKinds[ck].kind == timeline.CopyUnified
	}
	if uvm {
		return "Unified Memcpy " + dir
	}
	return "Memcpy " + dir + " (" + memKindName(src) + " -> " + memKindName(dst) + ")"
}

// memsetName is "Memset (Device)".
func memsetName(mk int64) string { return "Memset (" + memKindName(mk) + ")" }

// syncName names a SYNCHRONIZATION row by syncType, as Kineto's cuda_sync
// events are named.
func syncName(syncType int64) string {
	switch syncType {
	case 1:
		return "Event Sync"
	case 2:
		return "Stream Wait Event"
	case 3:
		return "Stream Sync"
	case 4:
		return "Context Sync"
	}
	return "Sync"
}

// graphName names a whole-graph execution row.
func graphName(graphID int64) string { return "CUDA Graph " + strconv.FormatInt(graphID, 10) }

// splitGlobalID unpacks nsys's globalTid / globalPid:
// <hardware:8><VM:8><pid:24><tid:24>.
func splitGlobalID(g int64) (pid, tid int64) {
	return (g >> 24) & 0xFFFFFF, g & 0xFFFFFF
}
