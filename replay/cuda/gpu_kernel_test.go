package cuda

// GPU tests of kernels, streams and events: the spin kernel's accuracy,
// copy/compute overlap across streams, event ordering, kernel launches with
// parameters, and Context.Do. See gpu_test.go for gpu(t) and the helpers.

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestGPUSpinAccuracy checks that Spin(d) lasts d, within 5 % or 5 µs
// (whichever is larger), by CUDA events.
func TestGPUSpinAccuracy(t *testing.T) {
	c := gpu(t)
	must(t, c.PrepareSpin())
	zero, err := c.MeasureSpin(0)
	must(t, err)
	t.Logf("Spin(0) takes %v by events (launch latency); grid %d × %d threads", zero, c.SpinGrid(), SpinThreads)
	for _, d := range []time.Duration{50 * time.Microsecond, time.Millisecond, 20 * time.Millisecond, 200 * time.Millisecond, time.Second} {
		runs := 5
		if d >= 200*time.Millisecond {
			runs = 3
		}
		var got []time.Duration
		for range runs {
			el, err := c.MeasureSpin(d)
			must(t, err)
			got = append(got, el)
		}
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		med := got[len(got)/2]
		tol := max(d/20, 5*time.Microsecond)
		off := med - d
		t.Logf("Spin(%v): median %v (%+.2f%%), runs %v, tolerance ±%v", d, med, 100*float64(off)/float64(d), got, tol)
		if off > tol || off < -tol {
			t.Errorf("Spin(%v) took %v, more than %v off", d, med, tol)
		}
	}
}

// TestGPUStreamOverlap runs a 256 MiB pinned copy and a 5 ms spin: on two
// streams the pair should take about the longer of the two, on one stream
// about their sum.
func TestGPUStreamOverlap(t *testing.T) {
	c := gpu(t)
	const n = 256 * mib
	const spin = 5 * time.Millisecond
	must(t, c.PrepareSpin())
	dev, err := c.Alloc(n)
	must(t, err)
	host, err := c.AllocHost(n)
	must(t, err)
	s1, err := c.NewStream(StreamNonBlocking)
	must(t, err)
	s2, err := c.NewStream(StreamNonBlocking)
	must(t, err)
	ev := make([]*Event, 3)
	for i := range ev {
		ev[i], err = c.NewEvent()
		must(t, err)
	}
	start, mid, end := ev[0], ev[1], ev[2]
	// step queues one step and returns its GPU time: copy only, spin only,
	// both on s1, or the copy on s1 and the spin on s2.
	step := func(cp, kernel, two bool) time.Duration {
		must(t, c.Spin(s1, 300*time.Microsecond)) // hide the host's queueing time
		must(t, start.Record(s1))
		ks := s1
		if two {
			ks = s2
			must(t, s2.WaitEvent(start))
		}
		if cp {
			must(t, c.CopyHtoDAsync(dev, host, s1))
		}
		if kernel {
			must(t, c.Spin(ks, spin))
		}
		if two {
			must(t, mid.Record(s2))
			must(t, s1.WaitEvent(mid))
		}
		must(t, end.Record(s1))
		must(t, end.Synchronize())
		el, err := c.Elapsed(start, end)
		must(t, err)
		return el
	}
	best := func(cp, kernel, two bool) time.Duration {
		b := time.Hour
		for range 5 {
			b = min(b, step(cp, kernel, two))
		}
		return b
	}
	copyT, spinT := best(true, false, false), best(false, true, false)
	one, both := best(true, true, false), best(true, true, true)
	t.Logf("copy %v (%.1f GB/s), spin %v; one stream %v (sum %v), two streams %v (max %v)",
		copyT, gbps(n, copyT), spinT, one, copyT+spinT, both, max(copyT, spinT))
	if one < (copyT+spinT)*9/10 {
		t.Errorf("one stream took %v, less than 90%% of copy+spin %v: work overlapped on one stream", one, copyT+spinT)
	}
	if limit := max(copyT, spinT)*115/100 + 50*time.Microsecond; both > limit {
		t.Errorf("two streams took %v, more than %v: copy and spin did not overlap", both, limit)
	}
}

// TestGPUEvents checks WaitEvent ordering across streams and event errors.
func TestGPUEvents(t *testing.T) {
	c := gpu(t)
	must(t, c.PrepareSpin())
	s1, err := c.NewStream(StreamNonBlocking)
	must(t, err)
	s2, err := c.NewStream(StreamNonBlocking)
	must(t, err)
	a, err := c.NewEvent()
	must(t, err)
	b, err := c.NewEvent()
	must(t, err)
	z, err := c.NewEventFlags(EventDisableTiming)
	must(t, err)
	must(t, a.Record(s1))
	must(t, c.Spin(s1, 20*time.Millisecond))
	must(t, z.Record(s1))
	must(t, s2.WaitEvent(z)) // s2's next work waits for the spin on s1
	must(t, b.Record(s2))
	must(t, b.Synchronize())
	el, err := c.Elapsed(a, b)
	must(t, err)
	t.Logf("event on s2 after waiting for a 20 ms spin on s1: %v", el)
	if el < 19*time.Millisecond {
		t.Errorf("s2 did not wait for s1: %v", el)
	}
	if _, err := c.Elapsed(a, z); err == nil {
		t.Error("Elapsed with a timing-disabled event succeeded")
	}
	must(t, s2.Destroy())
	if err := b.Record(s2); err == nil {
		t.Error("Record on a destroyed stream succeeded")
	}
	must(t, b.Destroy())
	if err := b.Destroy(); err == nil {
		t.Error("double Destroy succeeded")
	}
}

// fillPTX is a test kernel whose parameters have mixed sizes:
// out[i] = add + value + i + (u64)scale for i < n.
const fillPTX = `
.version 7.0
.target sm_50
.address_size 64

.visible .entry fill(
	.param .u64 fill_out,
	.param .u32 fill_n,
	.param .u32 fill_value,
	.param .f32 fill_scale,
	.param .u64 fill_add
)
{
	.reg .pred %past;
	.reg .b32  %i, %n, %value, %tx, %bx, %bdim;
	.reg .f32  %scale;
	.reg .b64  %out, %add, %v, %w, %off;

	ld.param.u64 %out, [fill_out];
	ld.param.u32 %n, [fill_n];
	ld.param.u32 %value, [fill_value];
	ld.param.f32 %scale, [fill_scale];
	ld.param.u64 %add, [fill_add];
	cvta.to.global.u64 %out, %out;

	mov.u32 %tx, %tid.x;
	mov.u32 %bx, %ctaid.x;
	mov.u32 %bdim, %ntid.x;
	mad.lo.u32 %i, %bx, %bdim, %tx;
	setp.ge.u32 %past, %i, %n;
	@%past bra DONE;

	cvt.u64.u32 %v, %value;
	add.u64 %v, %v, %add;
	cvt.u64.u32 %w, %i;
	add.u64 %v, %v, %w;
	cvt.rzi.u64.f32 %w, %scale;
	add.u64 %v, %v, %w;
	mul.wide.u32 %off, %i, 8;
	add.u64 %out, %out, %off;
	st.global.u64 [%out], %v;
DONE:
	ret;
}
`

// TestGPULaunch loads a PTX module and launches a kernel with parameters of
// 8, 4, 4, 4 and 8 bytes, then checks what it wrote.
func TestGPULaunch(t *testing.T) {
	c := gpu(t)
	m, err := c.LoadPTX(fillPTX)
	must(t, err)
	f, err := m.Function("fill")
	must(t, err)
	if _, err := m.Function("nope"); err == nil {
		t.Error("Function(nope) succeeded")
	}
	const n = 1000
	out, err := c.Alloc(n * 8)
	must(t, err)
	const add = uint64(1) << 40
	must(t, c.Launch(f, Dim3{X: (n + 255) / 256}, Dim3{X: 256}, 0, nil, out, uint32(n), uint32(7), float32(3.9), add))
	if err := c.Launch(f, Dim3{X: 1}, Dim3{X: 1}, 0, nil, out, n, 7, 3.9, add); err == nil {
		t.Error("Launch with untyped int arguments succeeded")
	}
	must(t, c.Synchronize())
	got := make([]byte, n*8)
	must(t, c.CopyDtoH(got, out))
	for i := range n {
		var v uint64
		for k := 7; k >= 0; k-- {
			v = v<<8 | uint64(got[i*8+k])
		}
		if want := add + 7 + uint64(i) + 3; v != want {
			t.Fatalf("out[%d] = %d, want %d", i, v, want)
		}
	}
	must(t, m.Unload())
	if err := c.Launch(f, Dim3{X: 1}, Dim3{X: 1}, 0, nil, out, uint32(n), uint32(7), float32(3.9), add); err == nil {
		t.Error("Launch after Unload succeeded")
	}
	_, err = c.LoadPTX(".version 7.0\n.target sm_50\n.address_size 64\n.visible .entry broken() { bogus.u32 %r1; }\n")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("LoadPTX(broken) = %v, want an *Error", err)
	}
	t.Logf("LoadPTX(broken): %v", err)
}

// TestGPUDo runs work on the context's own thread.
func TestGPUDo(t *testing.T) {
	c := gpu(t)
	var p DevicePtr
	must(t, c.Do(func() error {
		var err error
		if p, err = c.Alloc(mib); err != nil {
			return err
		}
		return c.CopyHtoD(p, make([]byte, mib))
	}))
	boom := errors.New("boom")
	if err := c.Do(func() error { return boom }); err != boom {
		t.Errorf("Do returned %v, want fn's error", err)
	}
	if err := c.Do(func() error { panic("oops") }); err == nil {
		t.Error("a panic in fn was not reported")
	}
	must(t, c.Do(func() error { return c.Free(p) }))
}

// TestGPUSpinEach queues kernels with SpinEach: between runs after each
// launch, in order, every kernel runs its whole spin (their GPU time
// between events is at least the sum, less a clock tick each), and a
// launch that fails stops the loop with the kernel's name.
func TestGPUSpinEach(t *testing.T) {
	c := gpu(t)
	must(t, c.PrepareSpin())
	s, start, end := timedStream(t, c)
	const n, d = 200, 10 * time.Microsecond
	var calls []int
	must(t, c.Spin(s, 300*time.Microsecond))
	must(t, start.Record(s))
	must(t, c.SpinEach(s, d, n, func(i int) { calls = append(calls, i) }))
	must(t, end.Record(s))
	must(t, end.Synchronize())
	el, err := c.Elapsed(start, end)
	must(t, err)
	if el < n*(d-time.Microsecond) {
		t.Errorf("%d kernels of %v ran in %v", n, d, el)
	}
	if len(calls) != n || calls[0] != 0 || calls[n-1] != n-1 || !slices.IsSorted(calls) {
		t.Errorf("between called %d times (%v...), want 0 to %d in order", len(calls), calls[:min(len(calls), 5)], n-1)
	}
	calls = calls[:0]
	must(t, c.SpinEach(s, d, 0, func(i int) { calls = append(calls, i) }))
	if len(calls) != 0 {
		t.Errorf("SpinEach of 0 kernels called between %d times", len(calls))
	}
	m, err := c.LoadPTX(fillPTX)
	must(t, err)
	f, err := m.Function("fill")
	must(t, err)
	// A block of 2048 threads is over every GPU's limit: the first launch fails.
	err = c.LaunchEach(f, Dim3{X: 1}, Dim3{X: 2048}, 0, s, 3, func(i int) { calls = append(calls, i) }, DevicePtr(0), uint32(0), uint32(0), float32(0), uint64(0))
	if err == nil || !strings.Contains(err.Error(), "launching fill") || len(calls) != 0 {
		t.Errorf("an impossible launch: err %v, between called %d times", err, len(calls))
	}
	must(t, m.Unload())
}

// BenchmarkGPULaunch is the host time of one spin kernel's launch: each
// with Spin (the context made current every time) and with SpinEach (made
// current once), on a stream of its own, empty kernels, one block.
func BenchmarkGPULaunch(b *testing.B) {
	c := gpu(b)
	must(b, c.PrepareSpin())
	s, err := c.NewStream(StreamNonBlocking)
	must(b, err)
	b.Run("Spin", func(b *testing.B) {
		for b.Loop() {
			if err := c.Spin(s, 0); err != nil {
				b.Fatal(err)
			}
		}
		must(b, s.Synchronize())
	})
	b.Run("SpinEach", func(b *testing.B) {
		must(b, c.SpinEach(s, 0, b.N, nil))
		must(b, s.Synchronize())
	})
}
