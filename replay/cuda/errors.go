package cuda

import (
	"errors"
	"fmt"
	"strconv"
	"unsafe"
)

// ErrNoCUDA reports that the CUDA driver library could not be loaded: the
// machine has no NVIDIA driver (or it is not on the loader path). Open
// returns an error that wraps it, with the loader's message appended.
var ErrNoCUDA = errors.New("libcuda.so.1 not found: this machine has no NVIDIA driver")

// ErrNoDevice reports that the driver loaded but sees no CUDA device:
// cuDeviceGetCount returned 0, or cuInit failed with CUDA_ERROR_NO_DEVICE
// (for instance because CUDA_VISIBLE_DEVICES hides every GPU). An *Error
// whose Code is CUDA_ERROR_NO_DEVICE also matches it with errors.Is.
var ErrNoDevice = errors.New("no CUDA device found")

// ErrOutOfMemory matches, with errors.Is, an *Error whose Code is
// CUDA_ERROR_OUT_OF_MEMORY (2), from device or pinned host allocations.
var ErrOutOfMemory = errors.New("CUDA out of memory")

// ErrClosed is returned by every method of a Context (and of the streams,
// events and modules it made) after Context.Close.
var ErrClosed = errors.New("cuda: context is closed")

// Error is a failed CUDA driver call. Its text reads, for example,
// "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)".
type Error struct {
	// Call is the driver symbol that failed, such as "cuMemAlloc_v2".
	Call string
	// Code is the CUresult value the call returned (never 0).
	Code int
	// Name is the enum name of Code, from cuGetErrorName where the driver
	// is loaded, else from this package's table; "CUDA_ERROR_UNKNOWN_CODE"
	// when neither knows it.
	Name string
}

// Error returns "Call: Name (Code)".
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
}

// Is lets errors.Is match CUDA_ERROR_NO_DEVICE to ErrNoDevice and
// CUDA_ERROR_OUT_OF_MEMORY to ErrOutOfMemory.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNoDevice:
		return e.Code == codeNoDevice
	case ErrOutOfMemory:
		return e.Code == codeOutOfMemory
	}
	return false
}

// CUresult values this package tests for.
const (
	codeSuccess     = 0
	codeOutOfMemory = 2
	codeNoDevice    = 100
)

// errorNames is the CUresult enum of cuda.h (CUDA 11.8 to 13), used when the
// driver's own cuGetErrorName is not at hand (no driver, or a code it does
// not know).
var errorNames = map[int]string{
	0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY",
	3: "CUDA_ERROR_NOT_INITIALIZED", 4: "CUDA_ERROR_DEINITIALIZED",
	5: "CUDA_ERROR_PROFILER_DISABLED", 6: "CUDA_ERROR_PROFILER_NOT_INITIALIZED",
	7: "CUDA_ERROR_PROFILER_ALREADY_STARTED", 8: "CUDA_ERROR_PROFILER_ALREADY_STOPPED",
	34: "CUDA_ERROR_STUB_LIBRARY", 46: "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE", 101: "CUDA_ERROR_INVALID_DEVICE",
	102: "CUDA_ERROR_DEVICE_NOT_LICENSED", 200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT", 202: "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
	205: "CUDA_ERROR_MAP_FAILED", 206: "CUDA_ERROR_UNMAP_FAILED",
	207: "CUDA_ERROR_ARRAY_IS_MAPPED", 208: "CUDA_ERROR_ALREADY_MAPPED",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU", 210: "CUDA_ERROR_ALREADY_ACQUIRED",
	211: "CUDA_ERROR_NOT_MAPPED", 212: "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
	213: "CUDA_ERROR_NOT_MAPPED_AS_POINTER", 214: "CUDA_ERROR_ECC_UNCORRECTABLE",
	215: "CUDA_ERROR_UNSUPPORTED_LIMIT", 216: "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
	217: "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", 218: "CUDA_ERROR_INVALID_PTX",
	219: "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", 220: "CUDA_ERROR_NVLINK_UNCORRECTABLE",
	221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", 222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	223: "CUDA_ERROR_JIT_COMPILATION_DISABLED", 224: "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
	300: "CUDA_ERROR_INVALID_SOURCE", 301: "CUDA_ERROR_FILE_NOT_FOUND",
	302: "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", 303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
	304: "CUDA_ERROR_OPERATING_SYSTEM", 400: "CUDA_ERROR_INVALID_HANDLE",
	401: "CUDA_ERROR_ILLEGAL_STATE", 500: "CUDA_ERROR_NOT_FOUND", 600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT", 703: "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
	704: "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", 705: "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
	708: "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", 709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
	710: "CUDA_ERROR_ASSERT", 711: "CUDA_ERROR_TOO_MANY_PEERS",
	712: "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", 713: "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
	714: "CUDA_ERROR_HARDWARE_STACK_ERROR", 715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS", 717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	718: "CUDA_ERROR_INVALID_PC", 719: "CUDA_ERROR_LAUNCH_FAILED",
	720: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", 800: "CUDA_ERROR_NOT_PERMITTED",
	801: "CUDA_ERROR_NOT_SUPPORTED", 802: "CUDA_ERROR_SYSTEM_NOT_READY",
	803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", 804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
	805: "CUDA_ERROR_MPS_CONNECTION_FAILED", 806: "CUDA_ERROR_MPS_RPC_FAILURE",
	807: "CUDA_ERROR_MPS_SERVER_NOT_READY", 808: "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
	809: "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED", 810: "CUDA_ERROR_MPS_CLIENT_TERMINATED",
	900: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", 901: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
	902: "CUDA_ERROR_STREAM_CAPTURE_MERGE", 903: "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
	904: "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", 905: "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
	906: "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", 907: "CUDA_ERROR_CAPTURED_EVENT",
	908: "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", 909: "CUDA_ERROR_TIMEOUT",
	910: "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", 911: "CUDA_ERROR_EXTERNAL_DEVICE",
	912: "CUDA_ERROR_INVALID_CLUSTER_SIZE", 999: "CUDA_ERROR_UNKNOWN",
}

// tableName names code from errorNames.
func tableName(code int) string {
	if n, ok := errorNames[code]; ok {
		return n
	}
	return "CUDA_ERROR_UNKNOWN_CODE"
}

// errName names a CUresult, asking the driver first (it knows codes newer
// than the table), then the table.
func (d *Driver) errName(code int32) string {
	if d != nil && d.cuGetErrorName != nil {
		var p *byte
		if d.cuGetErrorName(code, &p) == codeSuccess && p != nil {
			if s := goString(p); s != "" {
				return s
			}
		}
	}
	return tableName(int(code))
}

// check turns the CUresult r of call into nil or an *Error.
func (d *Driver) check(call string, r int32) error {
	if r == codeSuccess {
		return nil
	}
	return &Error{Call: call, Code: int(r), Name: d.errName(r)}
}

// goString copies the NUL-terminated C string at p (static driver memory,
// such as an error name) into a Go string.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cBuffer returns the text in buf up to its first NUL byte (a char buffer
// the driver filled, such as a device name or a JIT log).
func cBuffer(buf []byte) string {
	for i, b := range buf {
		if b == 0 {
			return string(buf[:i])
		}
	}
	return string(buf)
}

// bytesString formats a byte count in MiB for error messages.
func bytesString(n int) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}
