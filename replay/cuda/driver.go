// Package cuda is a small binding to the CUDA driver API, enough for the
// replay to run real copies, streams, events and a timed compute kernel on a
// GPU.
//
// # Why purego
//
// The binding loads libcuda.so.1 at run time with
// github.com/ebitengine/purego (dlopen and dlsym without cgo), so traceaudit
// builds with CGO_ENABLED=0 and needs neither the CUDA toolkit nor its
// headers: one binary to copy to any GPU box. gorgonia.org/cu, the Go
// binding that exists, needs cgo and the toolkit's cuda.h, and its only
// release does not compile against CUDA 13's header (cuCtxCreate and others
// changed). Only driver-API symbols whose signatures have been stable for
// years are bound, by their versioned names (cuMemAlloc_v2 and so on: the
// names cuda.h maps the plain ones to).
//
// # The threading rule
//
// A CUDA context is current per OS thread, and goroutines move between
// threads. Every driver call this package makes on behalf of a Context locks
// the calling goroutine to its OS thread (runtime.LockOSThread), makes the
// context current on that thread (cuCtxSetCurrent) and only then calls the
// driver; the lock is released when the call returns. So methods may be
// called from any goroutine, and from several at once (the driver is
// thread-safe). Context.Do runs a closure on the context's own dedicated,
// locked OS thread, for callers that want a sequence of calls to come from
// one thread, as a training loop's launches do. Code that calls the driver
// through other means must follow the same rule.
//
// # Memory
//
// Device memory comes from plain cuMemAlloc, never managed memory. Pinned
// host memory from AllocHost is C memory seen through a []byte; Go slices
// passed to copies are read or written only while the call runs, except for
// the asynchronous copies, whose documentation says how long the slice must
// stay alive. A Context records everything it allocates or creates, and
// Close releases all of it.
//
// The package is Linux-only in practice (the driver library name is
// libcuda.so.1); without the library, Open returns ErrNoCUDA.
package cuda

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// LibraryName is the file name Open passes to dlopen.
const LibraryName = "libcuda.so.1"

// Driver is the loaded and initialised CUDA driver library. There is one per
// process (Open returns the same one every time); it is never unloaded.
type Driver struct {
	lib     uintptr
	version int
	devices int

	// elapsedName is the symbol bound to cuEventElapsedTime: the _v2 one
	// where the driver has it (CUDA 12.8 and later), else the original.
	elapsedName string

	cuInit                    func(flags uint32) int32
	cuDriverGetVersion        func(v *int32) int32
	cuGetErrorName            func(code int32, name **byte) int32
	cuDeviceGetCount          func(n *int32) int32
	cuDeviceGet               func(dev *int32, ordinal int32) int32
	cuDeviceGetName           func(name *byte, n int32, dev int32) int32
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) int32
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease func(dev int32) int32
	cuCtxSetCurrent           func(ctx uintptr) int32
	cuCtxSynchronize          func() int32
	cuMemGetInfo              func(free, total *uint64) int32
	cuMemAlloc                func(p *uint64, n uint64) int32
	cuMemFree                 func(p uint64) int32
	cuMemAllocHost            func(p *unsafe.Pointer, n uint64) int32
	cuMemFreeHost             func(p unsafe.Pointer) int32
	cuMemcpyHtoD              func(dst uint64, src unsafe.Pointer, n uint64) int32
	cuMemcpyDtoH              func(dst unsafe.Pointer, src uint64, n uint64) int32
	cuMemcpyHtoDAsync         func(dst uint64, src unsafe.Pointer, n uint64, s uintptr) int32
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src uint64, n uint64, s uintptr) int32
	cuStreamCreate            func(s *uintptr, flags uint32) int32
	cuStreamDestroy           func(s uintptr) int32
	cuStreamSynchronize       func(s uintptr) int32
	cuStreamWaitEvent         func(s, e uintptr, flags uint32) int32
	cuEventCreate             func(e *uintptr, flags uint32) int32
	cuEventRecord             func(e, s uintptr) int32
	cuEventSynchronize        func(e uintptr) int32
	cuEventElapsedTime        func(ms *float32, start, end uintptr) int32
	cuEventDestroy            func(e uintptr) int32
	cuModuleLoadData          func(m *uintptr, image unsafe.Pointer) int32
	cuModuleLoadDataEx        func(m *uintptr, image unsafe.Pointer, n uint32, opts *int32, vals *uintptr) int32
	cuModuleGetFunction       func(f *uintptr, m uintptr, name string) int32
	cuModuleUnload            func(m uintptr) int32
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params, extra unsafe.Pointer) int32

	// CUDA graph calls (graph.go), optional: nil where the driver lacks
	// them.
	cuStreamBeginCapture func(s uintptr, mode int32) int32
	cuStreamEndCapture   func(s uintptr, g *uintptr) int32
	cuGraphInstantiate   func(x *uintptr, g uintptr, flags uint64) int32
	cuGraphLaunch        func(x uintptr, s uintptr) int32
	cuGraphExecDestroy   func(x uintptr) int32
	cuGraphDestroy       func(g uintptr) int32
}

var (
	openOnce sync.Once
	openDrv  *Driver
	openErr  error
)

// Open loads libcuda.so.1 (RTLD_NOW|RTLD_GLOBAL), binds the driver-API
// symbols and calls cuInit(0). It does so once per process and returns the
// same Driver (or error) every time.
//
// The error wraps ErrNoCUDA when the library cannot be loaded, and
// ErrNoDevice when the driver sees no device; other failures are *Error
// values (or a missing-symbol error for a driver older than CUDA 11).
func Open() (*Driver, error) {
	openOnce.Do(func() { openDrv, openErr = openLib(LibraryName) })
	return openDrv, openErr
}

// openLib is Open for a given library file name (tests use a missing one).
func openLib(name string) (*Driver, error) {
	lib, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoCUDA, err)
	}
	d := &Driver{lib: lib}
	if err := d.bindAll(); err != nil {
		return nil, err
	}
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		if e, ok := err.(*Error); ok && e.Code == codeNoDevice {
			return nil, fmt.Errorf("%w: %w", ErrNoDevice, err)
		}
		return nil, err
	}
	var v, n int32
	if err := d.check("cuDriverGetVersion", d.cuDriverGetVersion(&v)); err != nil {
		return nil, err
	}
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: cuDeviceGetCount returned 0", ErrNoDevice)
	}
	d.version, d.devices = int(v), int(n)
	return d, nil
}

// symbol is one function variable to bind and the names to try, in order.
type symbol struct {
	fptr  any
	names []string
}

// bindAll binds every driver function, failing on the first that the
// library lacks (the hot ones in bindHot). cuModuleLoadDataEx is optional
// (LoadPTX falls back to cuModuleLoadData without a JIT log).
func (d *Driver) bindAll() error {
	syms := []symbol{
		{&d.cuInit, []string{"cuInit"}},
		{&d.cuDriverGetVersion, []string{"cuDriverGetVersion"}},
		{&d.cuGetErrorName, []string{"cuGetErrorName"}},
		{&d.cuDeviceGetCount, []string{"cuDeviceGetCount"}},
		{&d.cuDeviceGet, []string{"cuDeviceGet"}},
		{&d.cuDeviceGetName, []string{"cuDeviceGetName"}},
		{&d.cuDeviceGetAttribute, []string{"cuDeviceGetAttribute"}},
		{&d.cuDevicePrimaryCtxRetain, []string{"cuDevicePrimaryCtxRetain"}},
		{&d.cuDevicePrimaryCtxRelease, []string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}},
		{&d.cuCtxSynchronize, []string{"cuCtxSynchronize"}},
		{&d.cuMemGetInfo, []string{"cuMemGetInfo_v2"}},
		{&d.cuMemAlloc, []string{"cuMemAlloc_v2"}},
		{&d.cuMemFree, []string{"cuMemFree_v2"}},
		{&d.cuMemAllocHost, []string{"cuMemAllocHost_v2"}},
		{&d.cuMemFreeHost, []string{"cuMemFreeHost"}},
		{&d.cuMemcpyHtoD, []string{"cuMemcpyHtoD_v2"}},
		{&d.cuMemcpyDtoH, []string{"cuMemcpyDtoH_v2"}},
		{&d.cuMemcpyHtoDAsync, []string{"cuMemcpyHtoDAsync_v2"}},
		{&d.cuMemcpyDtoHAsync, []string{"cuMemcpyDtoHAsync_v2"}},
		{&d.cuStreamCreate, []string{"cuStreamCreate"}},
		{&d.cuStreamDestroy, []string{"cuStreamDestroy_v2"}},
		{&d.cuStreamSynchronize, []string{"cuStreamSynchronize"}},
		{&d.cuEventCreate, []string{"cuEventCreate"}},
		{&d.cuEventSynchronize, []string{"cuEventSynchronize"}},
		{&d.cuEventDestroy, []string{"cuEventDestroy_v2"}},
		{&d.cuModuleLoadData, []string{"cuModuleLoadData"}},
		{&d.cuModuleGetFunction, []string{"cuModuleGetFunction"}},
		{&d.cuModuleUnload, []string{"cuModuleUnload"}},
	}
	for _, s := range syms {
		if _, err := d.bind(s.fptr, s.names...); err != nil {
			return err
		}
	}
	name, err := d.bind(&d.cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime")
	if err != nil {
		return err
	}
	d.elapsedName = name
	if _, err := d.bind(&d.cuModuleLoadDataEx, "cuModuleLoadDataEx"); err != nil {
		d.cuModuleLoadDataEx = nil
	}
	d.bindGraphs()
	return d.bindHot()
}

// bindHot rebinds the calls a replayed step makes many times (every
// method's cuCtxSetCurrent, the launches, the events) to call the driver
// through purego.SyscallN: purego.RegisterFunc's functions go through
// reflect.MakeFunc, which boxes every argument, so that a call costs
// several times one through SyscallN and a launch nearly what PyTorch's
// eager loop spends on a whole operator.
func (d *Driver) bindHot() error {
	var set, launch, record, wait uintptr
	for _, s := range []struct {
		sym  *uintptr
		name string
	}{{&set, "cuCtxSetCurrent"}, {&launch, "cuLaunchKernel"}, {&record, "cuEventRecord"}, {&wait, "cuStreamWaitEvent"}} {
		var err error
		if *s.sym, _, err = d.lookup(s.name); err != nil {
			return err
		}
	}
	// A CUresult is a C enum (32 bits): the upper half of the register is
	// not part of it.
	d.cuCtxSetCurrent = func(ctx uintptr) int32 {
		r, _, _ := purego.SyscallN(set, ctx)
		return int32(r)
	}
	d.cuLaunchKernel = func(f uintptr, gx, gy, gz, bx, by, bz, shared uint32, s uintptr, params, extra unsafe.Pointer) int32 {
		r, _, _ := purego.SyscallN(launch, f, uintptr(gx), uintptr(gy), uintptr(gz), uintptr(bx), uintptr(by), uintptr(bz),
			uintptr(shared), s, uintptr(params), uintptr(extra))
		return int32(r)
	}
	d.cuEventRecord = func(e, s uintptr) int32 {
		r, _, _ := purego.SyscallN(record, e, s)
		return int32(r)
	}
	d.cuStreamWaitEvent = func(s, e uintptr, flags uint32) int32 {
		r, _, _ := purego.SyscallN(wait, s, e, uintptr(flags))
		return int32(r)
	}
	return nil
}

// bindGraphs binds the CUDA graph calls by the names cuda.h maps them to
// (cuStreamBeginCapture to cuStreamBeginCapture_v2, cuGraphInstantiate to
// cuGraphInstantiateWithFlags), or leaves them all nil when the driver
// lacks one.
func (d *Driver) bindGraphs() {
	syms := []symbol{
		{&d.cuStreamBeginCapture, []string{"cuStreamBeginCapture_v2"}},
		{&d.cuStreamEndCapture, []string{"cuStreamEndCapture"}},
		{&d.cuGraphInstantiate, []string{"cuGraphInstantiateWithFlags"}},
		{&d.cuGraphLaunch, []string{"cuGraphLaunch"}},
		{&d.cuGraphExecDestroy, []string{"cuGraphExecDestroy"}},
		{&d.cuGraphDestroy, []string{"cuGraphDestroy"}},
	}
	for _, s := range syms {
		if _, err := d.bind(s.fptr, s.names...); err != nil {
			d.cuStreamBeginCapture, d.cuStreamEndCapture, d.cuGraphInstantiate = nil, nil, nil
			d.cuGraphLaunch, d.cuGraphExecDestroy, d.cuGraphDestroy = nil, nil, nil
			return
		}
	}
}

// bind looks up the first of names that the library exports and points
// fptr (a pointer to a func variable) at it. It returns the name bound.
func (d *Driver) bind(fptr any, names ...string) (string, error) {
	sym, n, err := d.lookup(names...)
	if err != nil {
		return "", err
	}
	purego.RegisterFunc(fptr, sym)
	return n, nil
}

// lookup is the address of the first of names that the library exports,
// and that name.
func (d *Driver) lookup(names ...string) (uintptr, string, error) {
	for _, n := range names {
		sym, err := purego.Dlsym(d.lib, n)
		if err != nil || sym == 0 {
			continue
		}
		return sym, n, nil
	}
	return 0, "", fmt.Errorf("cuda: %s does not export %s: driver too old", LibraryName, names[0])
}

// Version is the driver's CUDA version as cuDriverGetVersion reports it:
// 1000*major + 10*minor, so 13000 for CUDA 13.0.
func (d *Driver) Version() int { return d.version }

// VersionString is Version as "major.minor", such as "13.0".
func (d *Driver) VersionString() string {
	return fmt.Sprintf("%d.%d", d.version/1000, d.version%1000/10)
}

// DeviceCount is the number of CUDA devices the driver sees (at least 1).
func (d *Driver) DeviceCount() int { return d.devices }
