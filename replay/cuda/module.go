package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"unsafe"
)

// CUjit_option values for cuModuleLoadDataEx.
const (
	jitErrorLogBuffer     = 5 // CU_JIT_ERROR_LOG_BUFFER: char* to fill
	jitErrorLogBufferSize = 6 // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: its size
)

// Module is code loaded into a Context (CUmodule), here from PTX text that
// the driver compiles for the device on load.
type Module struct{ object }

// Function is a kernel of a Module (CUfunction), ready for Context.Launch.
type Function struct {
	m    *Module
	h    uintptr
	name string
}

// Dim3 is a grid size in blocks, or a block size in threads, along x, y and
// z. A zero field counts as 1, so Dim3{X: n} is a one-dimensional size.
type Dim3 struct{ X, Y, Z uint32 }

// norm returns d with zero fields set to 1.
func (d Dim3) norm() Dim3 {
	for _, f := range []*uint32{&d.X, &d.Y, &d.Z} {
		if *f == 0 {
			*f = 1
		}
	}
	return d
}

// LoadPTX loads a module from PTX source text (cuModuleLoadDataEx, or
// cuModuleLoadData where the driver lacks it). The driver JIT-compiles it
// for the device, so PTX for an older target (such as sm_50) runs on newer
// GPUs. A compilation failure's error carries the JIT's error log. The
// module lives until Unload or the context's Close.
func (c *Context) LoadPTX(ptx string) (*Module, error) {
	image := append([]byte(ptx), 0) // the driver reads a NUL-terminated string
	log := make([]byte, 16<<10)
	m := &Module{object{c: c}}
	call := "cuModuleLoadDataEx"
	err := c.run(func() error {
		if c.d.cuModuleLoadDataEx == nil {
			call = "cuModuleLoadData"
			return c.d.check(call, c.d.cuModuleLoadData(&m.h, unsafe.Pointer(&image[0])))
		}
		opts := []int32{jitErrorLogBuffer, jitErrorLogBufferSize}
		vals := []uintptr{uintptr(unsafe.Pointer(&log[0])), uintptr(len(log))}
		r := c.d.cuModuleLoadDataEx(&m.h, unsafe.Pointer(&image[0]), uint32(len(opts)), &opts[0], &vals[0])
		runtime.KeepAlive(opts)
		runtime.KeepAlive(vals)
		return c.d.check(call, r)
	})
	runtime.KeepAlive(image)
	runtime.KeepAlive(log)
	if err != nil {
		if msg := strings.TrimSpace(cBuffer(log)); msg != "" {
			return nil, fmt.Errorf("loading PTX: %w\n%s", err, msg)
		}
		return nil, fmt.Errorf("loading PTX: %w", err)
	}
	moduleKind.record(m)
	return m, nil
}

// Function looks up the kernel called name (its .entry name in the PTX) with
// cuModuleGetFunction. The Function is valid while the module is loaded.
func (m *Module) Function(name string) (*Function, error) {
	if m == nil || m.dead.Load() {
		return nil, errors.New("cuda: module is nil or unloaded")
	}
	f := &Function{m: m, name: name}
	err := m.c.run(func() error {
		return m.c.d.check("cuModuleGetFunction", m.c.d.cuModuleGetFunction(&f.h, m.h, name))
	})
	if err != nil {
		return nil, fmt.Errorf("kernel %q: %w", name, err)
	}
	return f, nil
}

// Unload unloads the module (cuModuleUnload); its Functions become invalid.
// Kernels already queued still run. Unloading twice is an error.
func (m *Module) Unload() error {
	return moduleKind.release(m)
}

// Name is the kernel's entry name.
func (f *Function) Name() string { return f.name }

// Launch queues kernel f on stream s (nil: the legacy default stream) with
// cuLaunchKernel: grid blocks of block threads each, sharedMem bytes of
// dynamic shared memory per block. args are the kernel's parameters in
// order, each of a type whose size matches the PTX .param: DevicePtr,
// uint64, int64, uintptr or float64 for 8-byte parameters (.u64, .s64,
// .b64, .f64), uint32, int32 or float32 for 4-byte ones (.u32, .s32, .b32,
// .f32). Go's int and uint are refused, since their size is ambiguous to
// the reader. The values are copied by the driver during the call.
func (c *Context) Launch(f *Function, grid, block Dim3, sharedMem uint32, s *Stream, args ...any) error {
	return c.LaunchEach(f, grid, block, sharedMem, s, 1, nil, args...)
}

// LaunchEach queues kernel f on stream s n times, as Launch does, from one
// OS thread with the context made current once, and calls between(i)
// after the i-th launch is queued (nil: nothing), on that thread: a
// caller's pacing between launches, as a launch-bound loop's host work
// between its kernels (host work only: a driver call there would pay the
// context switch that LaunchEach saves). It stops at the first failed
// launch.
func (c *Context) LaunchEach(f *Function, grid, block Dim3, sharedMem uint32, s *Stream, n int, between func(i int), args ...any) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if f == nil || f.m == nil || f.m.c != c {
		return errors.New("cuda: Launch: nil function, or one of another context")
	}
	if f.m.dead.Load() {
		return fmt.Errorf("cuda: Launch %s: module unloaded", f.name)
	}
	sh, err := c.streamHandle(s)
	if err != nil {
		return err
	}
	slots, err := packArgs(args)
	if err != nil {
		return fmt.Errorf("cuda: Launch %s: %w", f.name, err)
	}
	// kernelParams is a void*[]: one pointer to each argument's value.
	params := make([]unsafe.Pointer, len(slots)+1)
	for i := range slots {
		params[i] = unsafe.Pointer(&slots[i])
	}
	g, b := grid.norm(), block.norm()
	err = c.run(func() error {
		for i := range n {
			err := c.d.check("cuLaunchKernel", c.d.cuLaunchKernel(f.h, g.X, g.Y, g.Z, b.X, b.Y, b.Z,
				sharedMem, sh, unsafe.Pointer(&params[0]), nil))
			if err != nil {
				return err
			}
			if between != nil {
				between(i)
			}
		}
		return nil
	})
	runtime.KeepAlive(slots)
	runtime.KeepAlive(params)
	if err != nil {
		return fmt.Errorf("launching %s (grid %d×%d×%d, block %d×%d×%d): %w", f.name, g.X, g.Y, g.Z, b.X, b.Y, b.Z, err)
	}
	return nil
}

// packArgs stores each kernel argument in its own 8-byte slot, in the low
// bytes (little-endian), so that a pointer to the slot is a pointer to a
// value of the argument's C type.
func packArgs(args []any) ([]uint64, error) {
	slots := make([]uint64, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case DevicePtr:
			slots[i] = uint64(v)
		case uint64:
			slots[i] = v
		case int64:
			slots[i] = uint64(v)
		case uintptr:
			slots[i] = uint64(v)
		case float64:
			slots[i] = math.Float64bits(v)
		case uint32:
			slots[i] = uint64(v)
		case int32:
			slots[i] = uint64(uint32(v))
		case float32:
			slots[i] = uint64(math.Float32bits(v))
		case int, uint:
			return nil, fmt.Errorf("argument %d is a Go %T: use int32/uint32 or int64/uint64 to say its size", i, a)
		default:
			return nil, fmt.Errorf("argument %d: unsupported type %T", i, a)
		}
	}
	return slots, nil
}
