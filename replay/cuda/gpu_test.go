package cuda

// Tests on a real GPU. Each calls gpu(t), which skips the test where Open
// fails with ErrNoCUDA or ErrNoDevice. They read no files (the PTX is
// embedded), so they also run from a test binary built elsewhere:
//
//	CGO_ENABLED=0 go test -c -o replay-cuda.test ./replay/cuda
//	./replay-cuda.test -test.v -test.run GPU     # on the GPU box

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

const mib = 1 << 20

// anchor is a context held for the whole test run, so that the device's
// primary context is not torn down and re-created between tests, and so
// that one test can watch another context's memory from outside it.
var anchor struct {
	once sync.Once
	ctx  *Context
	err  error
}

// gpu returns a fresh Context on device 0, closed when the test ends, or
// skips the test where there is no driver or no device.
func gpu(t testing.TB) *Context {
	t.Helper()
	d, err := Open()
	if errors.Is(err, ErrNoCUDA) || errors.Is(err, ErrNoDevice) {
		t.Skipf("no GPU: %v", err)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	anchor.once.Do(func() { anchor.ctx, anchor.err = d.NewContext(0) })
	if anchor.err != nil {
		t.Fatalf("NewContext(0): %v", anchor.err)
	}
	c, err := d.NewContext(0)
	if err != nil {
		t.Fatalf("NewContext(0): %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// timedStream makes a non-blocking stream and two events to time work on
// it (released when c closes).
func timedStream(t testing.TB, c *Context) (s *Stream, start, end *Event) {
	t.Helper()
	s, err := c.NewStream(StreamNonBlocking)
	must(t, err)
	start, err = c.NewEvent()
	must(t, err)
	end, err = c.NewEvent()
	must(t, err)
	return s, start, end
}

// must fails the test at once on an error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// pattern fills b with bytes that differ per seed and position.
func pattern(b []byte, seed uint32) {
	x := seed*2654435761 + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
}

// gbps is bytes over d in GB/s (10^9 bytes per second).
func gbps(n int, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e9 }

func TestGPUDevice(t *testing.T) {
	c := gpu(t)
	d := c.Driver()
	major, minor := c.ComputeCapability()
	t.Logf("CUDA %s (%d), %d device(s); device 0: %s, %d SMs, sm_%d%d",
		d.VersionString(), d.Version(), d.DeviceCount(), c.Name(), c.SMCount(), major, minor)
	if c.Name() == "" || c.SMCount() <= 0 || major < 5 || d.Version() < 11000 {
		t.Errorf("implausible device: name %q, %d SMs, sm_%d%d, version %d", c.Name(), c.SMCount(), major, minor, d.Version())
	}
	if _, err := d.NewContext(d.DeviceCount()); err == nil {
		t.Error("NewContext past the last device succeeded")
	}
}

func TestGPUMemInfo(t *testing.T) {
	c := gpu(t)
	free, total, err := c.MemInfo()
	must(t, err)
	t.Logf("free %d MiB of %d MiB", free/mib, total/mib)
	if total < 1<<30 || free == 0 || free > total {
		t.Fatalf("implausible MemInfo: free %d, total %d", free, total)
	}
	p, err := c.Alloc(256 * mib)
	must(t, err)
	free2, _, err := c.MemInfo()
	must(t, err)
	if free-free2 < 250*mib {
		t.Errorf("free fell by %d MiB after a 256 MiB Alloc", (free-free2)/mib)
	}
	must(t, c.Free(p))
}

func TestGPUAllocFree(t *testing.T) {
	c := gpu(t)
	p, err := c.Alloc(1 * mib)
	must(t, err)
	q, err := c.Alloc(64 * mib)
	must(t, err)
	if p == 0 || q == 0 || p == q {
		t.Fatalf("pointers %#x, %#x", p, q)
	}
	if dev, _ := c.Allocated(); dev != 65*mib {
		t.Errorf("Allocated device = %d, want %d", dev, 65*mib)
	}
	must(t, c.Free(p))
	if err := c.Free(p); err == nil {
		t.Error("double Free succeeded")
	}
	if _, err := c.Alloc(0); err == nil {
		t.Error("Alloc(0) succeeded")
	}
	if err := c.CopyHtoD(q+DevicePtr(63*mib), make([]byte, 2*mib)); err == nil {
		t.Error("copy past the end of an allocation succeeded")
	}
	must(t, c.Free(q))
	_, total, err := c.MemInfo()
	must(t, err)
	_, err = c.Alloc(int(total) * 2)
	if !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)") {
		t.Errorf("Alloc(2 × total) = %v, want cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)", err)
	}
}

func TestGPUAllocHost(t *testing.T) {
	c := gpu(t)
	b, err := c.AllocHost(4 * mib)
	must(t, err)
	if len(b) != 4*mib || !c.IsPinned(b) || !c.IsPinned(b[mib:2*mib]) || c.IsPinned(make([]byte, 8)) {
		t.Fatalf("len %d, IsPinned wrong", len(b))
	}
	pattern(b, 7)
	want := append([]byte(nil), b...)
	if !bytes.Equal(b, want) {
		t.Fatal("pinned memory does not hold what was written")
	}
	if _, host := c.Allocated(); host != 4*mib {
		t.Errorf("Allocated host = %d", host)
	}
	if err := c.FreeHost(b[1:]); err == nil {
		t.Error("FreeHost of an inner slice succeeded")
	}
	must(t, c.FreeHost(b))
	if err := c.FreeHost(b); err == nil {
		t.Error("double FreeHost succeeded")
	}
}

// TestGPURoundTrip copies 64 MiB to the device and back, from pageable Go
// memory and from pinned memory, synchronously and on a stream, and checks
// every byte.
func TestGPURoundTrip(t *testing.T) {
	c := gpu(t)
	const n = 64 * mib
	dev, err := c.Alloc(n)
	must(t, err)
	s, err := c.NewStream(StreamNonBlocking)
	must(t, err)
	pinnedSrc, err := c.AllocHost(n)
	must(t, err)
	pinnedDst, err := c.AllocHost(n)
	must(t, err)
	cases := []struct {
		name     string
		src, dst []byte
		async    bool
	}{
		{"pageable", make([]byte, n), make([]byte, n), false},
		{"pinned", pinnedSrc, pinnedDst, false},
		{"pageable-async", make([]byte, n), make([]byte, n), true},
		{"pinned-async", pinnedSrc, pinnedDst, true},
	}
	for i, tc := range cases {
		pattern(tc.src, uint32(i+1)) // a new pattern each time: stale data fails
		clear(tc.dst)
		t0 := time.Now()
		if tc.async {
			must(t, c.CopyHtoDAsync(dev, tc.src, s))
			must(t, c.CopyDtoHAsync(tc.dst, dev, s))
			must(t, s.Synchronize())
		} else {
			must(t, c.CopyHtoD(dev, tc.src))
			must(t, c.CopyDtoH(tc.dst, dev))
		}
		el := time.Since(t0)
		if !bytes.Equal(tc.src, tc.dst) {
			t.Errorf("%s: data differs after the round trip", tc.name)
		}
		t.Logf("%-15s 2 × 64 MiB in %v (%.1f GB/s each way, wall clock)", tc.name, el, gbps(2*n, el))
	}
}

// TestGPUAsyncCopyBandwidth times async copies on a stream with events.
func TestGPUAsyncCopyBandwidth(t *testing.T) {
	c := gpu(t)
	const n = 256 * mib
	dev, err := c.Alloc(n)
	must(t, err)
	pinned, err := c.AllocHost(n)
	must(t, err)
	pageable := make([]byte, n)
	s, start, end := timedStream(t, c)
	rate := map[string]float64{}
	for _, host := range []string{"pinned", "pageable"} {
		buf := pinned
		if host == "pageable" {
			buf = pageable
		}
		for _, dir := range []string{"HtoD", "DtoH"} {
			best := 0.0
			for range 3 {
				must(t, start.Record(s))
				if dir == "HtoD" {
					must(t, c.CopyHtoDAsync(dev, buf, s))
				} else {
					must(t, c.CopyDtoHAsync(buf, dev, s))
				}
				must(t, end.Record(s))
				must(t, end.Synchronize())
				el, err := c.Elapsed(start, end)
				must(t, err)
				best = max(best, gbps(n, el))
			}
			rate[host+" "+dir] = best
			t.Logf("%-8s %s 256 MiB: %.1f GB/s (best of 3, CUDA events)", host, dir, best)
		}
	}
	if rate["pinned HtoD"] < 5 || rate["pinned DtoH"] < 5 {
		t.Errorf("pinned copies below 5 GB/s: %v", rate)
	}
}

// TestGPUConcurrent uses one context from many goroutines at once: each
// driver call must find the context current on whatever thread it runs.
func TestGPUConcurrent(t *testing.T) {
	c := gpu(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				src, dst := make([]byte, 4*mib), make([]byte, 4*mib)
				pattern(src, uint32(100+g))
				p, err := c.Alloc(len(src))
				if err != nil {
					return err
				}
				s, err := c.NewStream(StreamDefault)
				if err != nil {
					return err
				}
				for range 10 {
					if err := c.CopyHtoDAsync(p, src, s); err != nil {
						return err
					}
					if err := c.CopyDtoHAsync(dst, p, s); err != nil {
						return err
					}
					if err := s.Synchronize(); err != nil {
						return err
					}
					if !bytes.Equal(src, dst) {
						return fmt.Errorf("goroutine %d: data differs", g)
					}
				}
				if err := s.Destroy(); err != nil {
					return err
				}
				return c.Free(p)
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestGPUCloseFreesAll watches device memory from a second context while a
// context allocates and then closes without freeing anything itself.
func TestGPUCloseFreesAll(t *testing.T) {
	gpu(t) // skips without a GPU; sets up the anchor context
	obs := anchor.ctx
	must(t, obs.PrepareSpin()) // the context's own lazy set-up happens now, not below
	free0, _, err := obs.MemInfo()
	must(t, err)
	if free0 < 3<<30 {
		t.Skipf("only %d MiB free", free0/mib)
	}
	c, err := obs.Driver().NewContext(0)
	must(t, err)
	_, err = c.Alloc(1 << 30)
	must(t, err)
	_, err = c.Alloc(64 * mib)
	must(t, err)
	_, err = c.AllocHost(64 * mib)
	must(t, err)
	s, err := c.NewStream(StreamNonBlocking)
	must(t, err)
	_, err = c.NewEvent()
	must(t, err)
	_, err = c.LoadPTX(fillPTX)
	must(t, err)
	must(t, c.Spin(s, time.Millisecond))
	free1, _, err := obs.MemInfo()
	must(t, err)
	must(t, c.Close())
	free2, _, err := obs.MemInfo()
	must(t, err)
	t.Logf("free: %d MiB before, %d MiB while allocated, %d MiB after Close", free0/mib, free1/mib, free2/mib)
	if free0-free1 < (1<<30)+64*mib {
		t.Errorf("allocations did not show in MemInfo: free fell by %d MiB", (free0-free1)/mib)
	}
	if free2+8*mib < free0 {
		t.Errorf("Close left %d MiB allocated", (free0-free2)/mib)
	}
	if dev, host := c.Allocated(); dev != 0 || host != 0 {
		t.Errorf("Allocated after Close: %d, %d", dev, host)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Alloc(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Alloc after Close: %v", err)
	}
	if err := s.Synchronize(); !errors.Is(err, ErrClosed) {
		t.Errorf("Synchronize on a stream of a closed context: %v", err)
	}
	if err := c.Spin(nil, time.Millisecond); !errors.Is(err, ErrClosed) {
		t.Errorf("Spin after Close: %v", err)
	}
}
