package chrome

import (
	"strings"

	"github.com/traceaudit/traceaudit/timeline"
)

// What names say: steps and DataLoader spans, copy directions and memory
// kinds, thread names; and the small top-level keys.

// nameInfo returns the cached facts about interned name gid.
func (w *worker) nameInfo(gid int32) *nameInfo {
	in := &w.info[gid]
	if in.done {
		return in
	}
	name := w.names[gid]
	in.done = true
	in.rng = timeline.ClassifyRange(name, timeline.RangeOther)
	switch {
	case strings.HasPrefix(name, "Memcpy "):
		in.copyKind, in.src, in.dst = parseMemcpyName(name)
	case strings.HasPrefix(name, "Memset "):
		in.dst = parseMemsetName(name)
	case strings.HasPrefix(name, "hipMemcpy"), strings.HasPrefix(name, "hipMemset"):
		in.hipCopy = true
	}
	in.comm = timeline.IsCommKernel(name)
	return in
}

// parseMemcpyName reads Kineto's copy name, "Memcpy HtoD (Pageable ->
// Device)". Parts it does not know are left unknown.
func parseMemcpyName(name string) (timeline.CopyKind, timeline.MemKind, timeline.MemKind) {
	rest := strings.TrimPrefix(name, "Memcpy ")
	dir, kinds, _ := strings.Cut(rest, " ")
	var ck timeline.CopyKind
	switch dir {
	case "HtoD":
		ck = timeline.CopyHtoD
	case "DtoH":
		ck = timeline.CopyDtoH
	case "DtoD":
		ck = timeline.CopyDtoD
	case "HtoH":
		ck = timeline.CopyHtoH
	case "PtoP":
		ck = timeline.CopyPtoP
	case "HtoA", "AtoH", "AtoA", "AtoD", "DtoA":
		ck = timeline.CopyArray
	}
	kinds = strings.TrimSpace(kinds)
	if !strings.HasPrefix(kinds, "(") || !strings.HasSuffix(kinds, ")") {
		return ck, timeline.MemUnknown, timeline.MemUnknown
	}
	src, dst, ok := strings.Cut(kinds[1:len(kinds)-1], "->")
	if !ok {
		return ck, timeline.MemUnknown, timeline.MemUnknown
	}
	return ck, memKind(src), memKind(dst)
}

// parseMemsetName reads "Memset (Device)".
func parseMemsetName(name string) timeline.MemKind {
	rest := strings.TrimSpace(strings.TrimPrefix(name, "Memset "))
	if strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")") {
		return memKind(rest[1 : len(rest)-1])
	}
	return timeline.MemUnknown
}

// memKind maps a CUPTI memory kind as Kineto writes it (and ROCm's "Host").
func memKind(s string) timeline.MemKind {
	switch strings.TrimSpace(s) {
	case "Pageable":
		return timeline.MemPageable
	case "Pinned":
		return timeline.MemPinned
	case "Device", "Device Static":
		return timeline.MemDevice
	case "Array":
		return timeline.MemArray
	case "Managed", "Managed Static":
		return timeline.MemManaged
	case "Host":
		return timeline.MemHost
	}
	return timeline.MemUnknown
}

// threadLabel strips Kineto's wrapper from a host thread name: "thread 4515
// (python3.8)" -> "python3.8". ok is false for names of GPU rows ("stream 7
// ", "Device 0"), which share the pid space of host threads.
func threadLabel(name string) (label string, ok bool) {
	name = strings.TrimSpace(name)
	if rest, found := strings.CutPrefix(name, "thread "); found {
		if i := strings.IndexByte(rest, ' '); i > 0 && isInt(rest[:i]) {
			inner := strings.TrimSpace(rest[i+1:])
			if strings.HasPrefix(inner, "(") && strings.HasSuffix(inner, ")") {
				return inner[1 : len(inner)-1], true
			}
		}
		return name, true
	}
	for _, gpu := range []string{"stream ", "Device "} {
		if strings.HasPrefix(name, gpu) {
			return "", false
		}
	}
	return name, name != ""
}

func isInt(s string) bool {
	_, ok := parseInt([]byte(s))
	return ok
}

// version guesses the Kineto era from what the file held.
func (p *parser) version(s seen) string {
	switch {
	case s.oldCategories:
		return "kineto-2021"
	case p.runtimeKeys:
		return "kineto-2025"
	case p.top["baseTimeNanoseconds"] != nil || s.fractions:
		return "kineto-2024"
	case s.newCategories:
		return "kineto-2022"
	}
	return ""
}

// isRuntimeVersionKey reports the top-level keys Kineto has written since
// 2025.
func isRuntimeVersionKey(k string) bool {
	switch k {
	case "cupti_version", "cuda_runtime_version", "cuda_driver_version", "hip_runtime_version", "roctracer_version":
		return true
	}
	return false
}
