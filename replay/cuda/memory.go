package cuda

import (
	"fmt"
	"runtime"
	"unsafe"
)

// DevicePtr is a device memory address (CUdeviceptr). Add a byte offset to
// address inside an allocation: p + DevicePtr(off).
type DevicePtr uint64

// MemInfo reports the device's free and total memory in bytes
// (cuMemGetInfo_v2). Free counts every process's allocations.
func (c *Context) MemInfo() (free, total uint64, err error) {
	err = c.run(func() error {
		return c.d.check("cuMemGetInfo_v2", c.d.cuMemGetInfo(&free, &total))
	})
	return free, total, err
}

// Alloc allocates n bytes (n > 0) of device memory with cuMemAlloc_v2 (plain
// device memory, never managed memory). The memory is not initialised. It
// stays allocated until Free or Close. Check MemInfo before a large
// allocation: a failure matches ErrOutOfMemory.
func (c *Context) Alloc(n int) (DevicePtr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cuda: Alloc of %d bytes", n)
	}
	var p uint64
	err := c.run(func() error { return c.d.check("cuMemAlloc_v2", c.d.cuMemAlloc(&p, uint64(n))) })
	if err != nil {
		return 0, fmt.Errorf("allocating %s on the device: %w", bytesString(n), err)
	}
	c.mu.Lock()
	c.device[DevicePtr(p)] = n
	c.mu.Unlock()
	return DevicePtr(p), nil
}

// Free releases device memory from Alloc (cuMemFree_v2). Freeing a pointer
// that this context did not allocate, or freed already, is an error and
// calls nothing.
func (c *Context) Free(p DevicePtr) error {
	if c.closed.Load() {
		return ErrClosed
	}
	c.mu.Lock()
	_, ok := c.device[p]
	delete(c.device, p)
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("cuda: Free(%#x): not a live allocation of this context", uint64(p))
	}
	return c.run(func() error { return c.d.check("cuMemFree_v2", c.d.cuMemFree(uint64(p))) })
}

// AllocHost allocates n bytes (n > 0) of page-locked (pinned) host memory
// with cuMemAllocHost_v2 and returns it as a []byte of length n. The slice
// is a view of C memory: the Go garbage collector neither moves nor frees
// it, and it must not be used after FreeHost or Close. Copies from and to it
// run at full PCIe speed, and the async ones are truly asynchronous.
func (c *Context) AllocHost(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda: AllocHost of %d bytes", n)
	}
	var p unsafe.Pointer
	err := c.run(func() error { return c.d.check("cuMemAllocHost_v2", c.d.cuMemAllocHost(&p, uint64(n))) })
	if err != nil {
		return nil, fmt.Errorf("allocating %s of pinned host memory: %w", bytesString(n), err)
	}
	c.mu.Lock()
	c.host[p] = n
	c.mu.Unlock()
	return unsafe.Slice((*byte)(p), n), nil
}

// FreeHost releases pinned memory from AllocHost (cuMemFreeHost). b must
// start where the allocation starts (its length does not matter). Freeing
// memory this context did not allocate, or freed already, is an error.
func (c *Context) FreeHost(b []byte) error {
	if c.closed.Load() {
		return ErrClosed
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	c.mu.Lock()
	_, ok := c.host[p]
	delete(c.host, p)
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("cuda: FreeHost(%p): not the start of a live pinned allocation of this context", p)
	}
	return c.run(func() error { return c.d.check("cuMemFreeHost", c.d.cuMemFreeHost(p)) })
}

// IsPinned reports whether b lies inside pinned memory from this context's
// AllocHost.
func (c *Context) IsPinned(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	c.mu.Lock()
	defer c.mu.Unlock()
	for base, n := range c.host {
		if b0 := uintptr(base); p >= b0 && p+uintptr(len(b)) <= b0+uintptr(n) {
			return true
		}
	}
	return false
}

// checkRange rejects a device range [p, p+n) that starts inside one of the
// context's allocations but runs past its end. Pointers that are not inside
// a known allocation (from another context, say) pass unchecked.
func (c *Context) checkRange(p DevicePtr, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for base, size := range c.device {
		if p >= base && p < base+DevicePtr(size) {
			if p+DevicePtr(n) > base+DevicePtr(size) {
				return fmt.Errorf("cuda: %d bytes at %#x overrun the %d-byte allocation at %#x",
					n, uint64(p), size, uint64(base))
			}
			return nil
		}
	}
	return nil
}

// CopyHtoD copies len(src) bytes from host memory to the device at dst and
// returns when the copy is done (cuMemcpyHtoD_v2). src may be an ordinary Go
// slice (pageable memory: the driver stages it through its own pinned
// buffer, at a fraction of pinned speed) or pinned memory from AllocHost.
func (c *Context) CopyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if err := c.checkRange(dst, len(src)); err != nil {
		return err
	}
	err := c.run(func() error {
		return c.d.check("cuMemcpyHtoD_v2", c.d.cuMemcpyHtoD(uint64(dst), unsafe.Pointer(unsafe.SliceData(src)), uint64(len(src))))
	})
	runtime.KeepAlive(src)
	return err
}

// CopyDtoH copies len(dst) bytes from the device at src into dst and
// returns when the copy is done (cuMemcpyDtoH_v2). dst may be an ordinary Go
// slice or pinned memory from AllocHost.
func (c *Context) CopyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	if err := c.checkRange(src, len(dst)); err != nil {
		return err
	}
	err := c.run(func() error {
		return c.d.check("cuMemcpyDtoH_v2", c.d.cuMemcpyDtoH(unsafe.Pointer(unsafe.SliceData(dst)), uint64(src), uint64(len(dst))))
	})
	runtime.KeepAlive(dst)
	return err
}

// CopyHtoDAsync queues a copy of len(src) bytes from host memory to the
// device at dst on stream s (nil: the legacy default stream), with
// cuMemcpyHtoDAsync_v2, and returns at once when src is pinned memory from
// AllocHost.
//
// src may also be an ordinary Go slice (pageable memory). The driver then
// copies it into a staging buffer before returning, so the call is in effect
// synchronous and runs at pageable speed, as PyTorch's non_blocking copies
// from unpinned tensors do. Either way the caller must keep src alive and
// unmodified until the stream has been synchronised (Stream.Synchronize, an
// Event recorded after it, or Context.Synchronize).
func (c *Context) CopyHtoDAsync(dst DevicePtr, src []byte, s *Stream) error {
	if len(src) == 0 {
		return nil
	}
	if err := c.checkRange(dst, len(src)); err != nil {
		return err
	}
	sh, err := c.streamHandle(s)
	if err != nil {
		return err
	}
	err = c.run(func() error {
		return c.d.check("cuMemcpyHtoDAsync_v2",
			c.d.cuMemcpyHtoDAsync(uint64(dst), unsafe.Pointer(unsafe.SliceData(src)), uint64(len(src)), sh))
	})
	runtime.KeepAlive(src)
	return err
}

// CopyDtoHAsync queues a copy of len(dst) bytes from the device at src into
// dst on stream s (nil: the legacy default stream), with
// cuMemcpyDtoHAsync_v2. With pinned dst it returns at once; with an ordinary
// Go slice the driver returns only when the copy is done. The caller must
// keep dst alive, and read it only after the stream has been synchronised.
func (c *Context) CopyDtoHAsync(dst []byte, src DevicePtr, s *Stream) error {
	if len(dst) == 0 {
		return nil
	}
	if err := c.checkRange(src, len(dst)); err != nil {
		return err
	}
	sh, err := c.streamHandle(s)
	if err != nil {
		return err
	}
	err = c.run(func() error {
		return c.d.check("cuMemcpyDtoHAsync_v2",
			c.d.cuMemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(dst)), uint64(src), uint64(len(dst)), sh))
	})
	runtime.KeepAlive(dst)
	return err
}
