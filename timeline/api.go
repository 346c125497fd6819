package timeline

import (
	"fmt"
	"strings"
)

// APIClass is what a host CUDA/HIP API call does, as far as starvation
// analysis cares.
type APIClass uint8

// API classes.
const (
	APIOther APIClass = iota
	// APILaunch launches a kernel or a graph.
	APILaunch
	// APIMemcpy is a copy call that blocks the host until the copy is done
	// (cudaMemcpy, cuMemcpyHtoD, hipMemcpy, ...).
	APIMemcpy
	// APIMemcpyAsync is an asynchronous copy call. It still blocks the host
	// when the host memory is pageable.
	APIMemcpyAsync
	// APIMemset is a memset call.
	APIMemset
	// APISync waits on the host for GPU work: device, context, stream or
	// event synchronisation.
	APISync
	// APIAlloc allocates or frees device or pinned host memory.
	APIAlloc
	// APIStreamWait makes a stream wait for an event; it does not block the
	// host.
	APIStreamWait
	numAPIClasses
)

var apiClassNames = [...]string{"other", "launch", "memcpy", "memcpy-async", "memset", "sync", "alloc", "stream-wait"}

func (c APIClass) String() string {
	if int(c) < len(apiClassNames) {
		return apiClassNames[c]
	}
	return fmt.Sprintf("api(%d)", uint8(c))
}

// IsCopy reports whether c is a copy call, blocking or not.
func (c APIClass) IsCopy() bool { return c == APIMemcpy || c == APIMemcpyAsync }

// BaseAPIName strips the ABI and per-thread-stream suffixes nsys records
// ("cudaMemcpyAsync_v3020" -> "cudaMemcpyAsync", "cuMemcpyHtoD_v2" ->
// "cuMemcpyHtoD", "cudaLaunchKernel_ptsz_v7000" -> "cudaLaunchKernel").
func BaseAPIName(name string) string {
	for {
		i := strings.LastIndexByte(name, '_')
		if i <= 0 {
			return name
		}
		suf := name[i+1:]
		if suf == "ptsz" || suf == "ptds" || isVersionSuffix(suf) {
			name = name[:i]
			continue
		}
		return name
	}
}

func isVersionSuffix(s string) bool {
	if len(s) < 2 || s[0] != 'v' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ClassifyAPI classifies a CUDA runtime, CUDA driver or HIP API call by
// name. Versioned names are accepted.
func ClassifyAPI(name string) APIClass {
	b := BaseAPIName(name)
	var rest string
	switch {
	case strings.HasPrefix(b, "cuda"):
		rest = b[4:]
	case strings.HasPrefix(b, "hip"):
		rest = b[3:]
	case strings.HasPrefix(b, "cu"):
		return classifyDriver(b[2:])
	default:
		return APIOther
	}
	switch {
	case strings.Contains(rest, "Launch"):
		// cudaLaunchKernel, cudaLaunchCooperativeKernel, cudaGraphLaunch,
		// cudaLaunchKernelExC, hipExtLaunchKernel, hipModuleLaunchKernel.
		if strings.HasPrefix(rest, "LaunchHostFunc") {
			return APIOther
		}
		return APILaunch
	case strings.HasPrefix(rest, "Memcpy"):
		if strings.Contains(rest, "Async") {
			return APIMemcpyAsync
		}
		// cudaMemcpy, cudaMemcpy2D, cudaMemcpyToSymbol, hipMemcpyWithStream:
		// all block the host until the copy is done.
		return APIMemcpy
	case strings.HasPrefix(rest, "Memset"):
		return APIMemset
	case rest == "DeviceSynchronize" || rest == "ThreadSynchronize" || rest == "StreamSynchronize" || rest == "EventSynchronize" || rest == "CtxSynchronize":
		return APISync
	case rest == "StreamWaitEvent":
		return APIStreamWait
	case strings.HasPrefix(rest, "Malloc") || strings.HasPrefix(rest, "Free") || rest == "HostAlloc" || rest == "HostRegister" || rest == "HostUnregister" || strings.HasPrefix(rest, "ExtMalloc"):
		return APIAlloc
	}
	return APIOther
}

func classifyDriver(rest string) APIClass {
	switch {
	case strings.HasPrefix(rest, "LaunchHostFunc"):
		return APIOther
	case strings.HasPrefix(rest, "Launch") || rest == "GraphLaunch":
		return APILaunch
	case strings.HasPrefix(rest, "Memcpy"):
		if strings.HasSuffix(rest, "Async") {
			return APIMemcpyAsync
		}
		return APIMemcpy
	case strings.HasPrefix(rest, "Memset"):
		return APIMemset
	case rest == "CtxSynchronize" || rest == "StreamSynchronize" || rest == "EventSynchronize":
		return APISync
	case rest == "StreamWaitEvent":
		return APIStreamWait
	case strings.HasPrefix(rest, "MemAlloc") || strings.HasPrefix(rest, "MemFree") || strings.HasPrefix(rest, "MemHostAlloc") || strings.HasPrefix(rest, "MemHostRegister") || strings.HasPrefix(rest, "MemHostUnregister"):
		return APIAlloc
	}
	return APIOther
}

// IsGraphLaunch reports whether an API call launches a whole CUDA or HIP
// graph (cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch): the kernels it
// runs are graph work, not launched one by one.
func IsGraphLaunch(name string) bool {
	switch BaseAPIName(name) {
	case "cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch":
		return true
	}
	return false
}

// IsMunmapLike reports whether an OS runtime call releases host memory in
// a way that can stall the calling thread: munmap, madvise, and brk/sbrk
// (which shrink the heap).
func IsMunmapLike(name string) bool {
	switch name {
	case "munmap", "madvise", "brk", "sbrk", "__munmap", "mremap":
		return true
	}
	return false
}

// IsFileRead reports whether an OS runtime call reads a file or waits for
// reads it submitted: the read family (read, pread64, preadv, fread) and
// the asynchronous interfaces (io_uring_enter, io_getevents, aio_*).
func IsFileRead(name string) bool {
	switch name {
	case "read", "pread", "pread64", "readv", "preadv", "preadv2", "preadv64", "fread", "fread_unlocked",
		"io_uring_enter", "io_getevents", "aio_read", "aio_read64", "aio_suspend", "aio_suspend64":
		return true
	}
	return false
}
