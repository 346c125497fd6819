package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Device attributes (CUdevice_attribute) read by this package.
const (
	attrMultiprocessorCount = 16
	attrComputeMajor        = 75
	attrComputeMinor        = 76
)

// Context is one device's primary context, retained for as long as the
// Context is open. Its methods may be called from any goroutine: each driver
// call locks the goroutine to its OS thread and makes the context current
// there first (see the package documentation). It records every allocation,
// stream, event and module made through it; Close releases them all.
type Context struct {
	d       *Driver
	dev     int32
	ordinal int
	h       uintptr // CUcontext
	name    string
	sms     int
	ccMajor int
	ccMinor int

	closed atomic.Bool

	mu      sync.Mutex // guards the registry below
	device  map[DevicePtr]int
	host    map[unsafe.Pointer]int
	streams map[*Stream]struct{}
	events  map[*Event]struct{}
	modules map[*Module]struct{}
	graphs  map[*Graph]struct{}
	execs   map[*GraphExec]struct{}

	spinMu sync.Mutex // guards spin's lazy set-up
	spin   *spinKernel

	workOnce sync.Once
	work     chan func()
	quit     chan struct{}
}

// NewContext retains the primary context of device ordinal (0 for the first
// GPU), checks that it can be made current, and reads the device's name and
// attributes. Several Contexts on one device share its primary context.
func (d *Driver) NewContext(ordinal int) (*Context, error) {
	if ordinal < 0 || ordinal >= d.devices {
		return nil, fmt.Errorf("cuda: device %d out of range (the driver sees %d)", ordinal, d.devices)
	}
	c := &Context{
		d: d, ordinal: ordinal,
		device:  map[DevicePtr]int{},
		host:    map[unsafe.Pointer]int{},
		streams: map[*Stream]struct{}{},
		events:  map[*Event]struct{}{},
		modules: map[*Module]struct{}{},
		graphs:  map[*Graph]struct{}{},
		execs:   map[*GraphExec]struct{}{},
		quit:    make(chan struct{}),
	}
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&c.dev, int32(ordinal))); err != nil {
		return nil, err
	}
	if err := d.check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&c.h, c.dev)); err != nil {
		return nil, err
	}
	if err := c.initInfo(); err != nil {
		d.cuDevicePrimaryCtxRelease(c.dev)
		return nil, err
	}
	return c, nil
}

// initInfo reads the device's name and attributes, with the context current
// (which also proves it can be made current).
func (c *Context) initInfo() error {
	return c.bound(func() error {
		buf := make([]byte, 256)
		if err := c.d.check("cuDeviceGetName", c.d.cuDeviceGetName(&buf[0], int32(len(buf)), c.dev)); err != nil {
			return err
		}
		c.name = cBuffer(buf)
		var err error
		if c.sms, err = c.attribute(attrMultiprocessorCount); err != nil {
			return err
		}
		if c.ccMajor, err = c.attribute(attrComputeMajor); err != nil {
			return err
		}
		c.ccMinor, err = c.attribute(attrComputeMinor)
		return err
	})
}

// attribute reads one CUdevice_attribute of the context's device.
func (c *Context) attribute(attr int32) (int, error) {
	var v int32
	err := c.d.check("cuDeviceGetAttribute", c.d.cuDeviceGetAttribute(&v, attr, c.dev))
	return int(v), err
}

// Name is the device's name, such as "NVIDIA H200".
func (c *Context) Name() string { return c.name }

// Ordinal is the device index given to NewContext.
func (c *Context) Ordinal() int { return c.ordinal }

// SMCount is the device's number of streaming multiprocessors
// (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 132 on an H200.
func (c *Context) SMCount() int { return c.sms }

// ComputeCapability is the device's compute capability, such as 9, 0 for an
// H200.
func (c *Context) ComputeCapability() (major, minor int) { return c.ccMajor, c.ccMinor }

// Driver is the driver the context was made from.
func (c *Context) Driver() *Driver { return c.d }

// bound runs f with the calling goroutine locked to its OS thread and the
// context current on that thread. It does not check for Close.
func (c *Context) bound(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.d.check("cuCtxSetCurrent", c.d.cuCtxSetCurrent(c.h)); err != nil {
		return err
	}
	return f()
}

// run is bound for an open context: every public method goes through it.
func (c *Context) run(f func() error) error {
	if c.closed.Load() {
		return ErrClosed
	}
	return c.bound(f)
}

// Synchronize waits until all work queued on the context, on every stream,
// has finished (cuCtxSynchronize), and returns the first error of that work.
func (c *Context) Synchronize() error {
	return c.run(func() error { return c.d.check("cuCtxSynchronize", c.d.cuCtxSynchronize()) })
}

// Do runs fn on the context's own OS thread: a goroutine, started on first
// use, that is locked to its thread for its whole life and keeps the context
// current there. Do returns fn's error, or ErrClosed after Close. Calls made
// inside fn (the Context's methods, or anything else that uses the driver)
// all come from that one thread. Do calls are serialised: fn must not call
// Do itself, or it deadlocks.
func (c *Context) Do(fn func() error) error {
	if c.closed.Load() {
		return ErrClosed
	}
	c.workOnce.Do(c.startWorker)
	done := make(chan error, 1)
	job := func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("cuda: Do: panic: %v", p)
			}
		}()
		done <- fn()
	}
	select {
	case c.work <- job:
	case <-c.quit:
		return ErrClosed
	}
	return <-done
}

// startWorker starts the goroutine behind Do. It never unlocks its thread,
// so the thread ends with the goroutine (at Close).
func (c *Context) startWorker() {
	c.work = make(chan func())
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		c.d.cuCtxSetCurrent(c.h)
		close(ready)
		for {
			select {
			case job := <-c.work:
				c.d.cuCtxSetCurrent(c.h) // fn may have used another context last time
				job()
			case <-c.quit:
				return
			}
		}
	}()
	<-ready
}

// Allocated reports what the context holds now: device memory and pinned
// host memory, in bytes, counting only live allocations made through it.
func (c *Context) Allocated() (deviceBytes, hostBytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.device {
		deviceBytes += n
	}
	for _, n := range c.host {
		hostBytes += n
	}
	return deviceBytes, hostBytes
}

// Close waits for the queued work of the device's primary context
// (cuCtxSynchronize: this includes work queued through other Contexts on
// the same device, which share it), then destroys every graph, event and
// stream,
// unloads every module, frees every device and pinned allocation still
// recorded, stops the Do thread, and releases the primary context. It
// returns the errors met on the way, joined. A second call does nothing and
// returns nil. Slices from AllocHost must not be used after Close. Close
// must not run while other goroutines still use the context.
func (c *Context) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(c.quit)
	c.mu.Lock()
	events, streams, modules := c.events, c.streams, c.modules
	graphs, execs := c.graphs, c.execs
	device, host := c.device, c.host
	c.events, c.streams, c.modules = map[*Event]struct{}{}, map[*Stream]struct{}{}, map[*Module]struct{}{}
	c.graphs, c.execs = map[*Graph]struct{}{}, map[*GraphExec]struct{}{}
	c.device, c.host = map[DevicePtr]int{}, map[unsafe.Pointer]int{}
	c.mu.Unlock()

	var errs []error
	errs = append(errs, c.bound(func() error {
		var errs []error
		add := func(call string, r int32) {
			if err := c.d.check(call, r); err != nil {
				errs = append(errs, err)
			}
		}
		add("cuCtxSynchronize", c.d.cuCtxSynchronize())
		execKind.releaseAll(c.d, execs, add)
		graphKind.releaseAll(c.d, graphs, add)
		eventKind.releaseAll(c.d, events, add)
		streamKind.releaseAll(c.d, streams, add)
		moduleKind.releaseAll(c.d, modules, add)
		for p := range device {
			add("cuMemFree_v2", c.d.cuMemFree(uint64(p)))
		}
		for p := range host {
			add("cuMemFreeHost", c.d.cuMemFreeHost(p))
		}
		return errors.Join(errs...)
	}))
	errs = append(errs, c.d.check("cuDevicePrimaryCtxRelease_v2", c.d.cuDevicePrimaryCtxRelease(c.dev)))
	return errors.Join(errs...)
}
