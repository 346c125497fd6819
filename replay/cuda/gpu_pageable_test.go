package cuda

// GPU test of pageable copies from the host memory a replay and PyTorch
// copy from: the Go heap, an anonymous mapping as glibc makes for a large
// tensor, and the same with transparent huge pages asked for. See
// gpu_test.go for gpu(t).

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGPUPageableSources logs the pageable host-to-device bandwidth of a
// written 96 MiB buffer from each kind of host memory (best of 3, CUDA
// events), and the box's transparent huge page setting: pageable copies
// go through the driver's staging buffers at the speed the CPU reads the
// source, which its pages decide.
func TestGPUPageableSources(t *testing.T) {
	c := gpu(t)
	const n = 96 * mib
	dev, err := c.Alloc(n)
	must(t, err)
	s, start, end := timedStream(t, c)
	thp, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	t.Logf("transparent huge pages: %s", strings.TrimSpace(string(thp)))
	mapped := func(huge bool) []byte {
		b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		must(t, err)
		t.Cleanup(func() { unix.Munmap(b) })
		if huge {
			if err := unix.Madvise(b, unix.MADV_HUGEPAGE); err != nil {
				t.Logf("madvise(MADV_HUGEPAGE): %v", err)
			}
		}
		return b
	}
	for _, src := range []struct {
		name string
		buf  []byte
	}{{"Go heap", make([]byte, n)}, {"mmap", mapped(false)}, {"mmap+THP", mapped(true)}} {
		for i := range src.buf {
			src.buf[i] = byte(i)
		}
		best := 0.0
		for range 3 {
			must(t, start.Record(s))
			must(t, c.CopyHtoDAsync(dev, src.buf, s))
			must(t, end.Record(s))
			must(t, end.Synchronize())
			el, err := c.Elapsed(start, end)
			must(t, err)
			best = max(best, gbps(n, el))
		}
		t.Logf("pageable HtoD 96 MiB from %-8s %.1f GB/s (best of 3, CUDA events)", src.name+":", best)
	}
}

// TestGPUPageableByCPU logs the pageable host-to-device bandwidth of a
// written 96 MiB Go buffer from each CPU the process may run on (the
// calling thread's affinity set to that CPU alone; best of 3 by CUDA
// events after one untimed copy), in three passes, so that whether a CPU's
// bandwidth is its own and stays so can be read off. It checks that every
// copy ran and that the thread gets its CPUs back.
//
// The replay does not choose its CPU by it: on a virtualised host a CPU's
// bandwidth need not be its own nor stay so, and the report sets the box's
// pageable bandwidth beside the trace's instead.
func TestGPUPageableByCPU(t *testing.T) {
	c := gpu(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Skipf("no thread affinity: %v", err)
	}
	const n = 96 * mib
	dev, err := c.Alloc(n)
	must(t, err)
	s, start, end := timedStream(t, c)
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	must(t, c.CopyHtoD(dev, src)) // untimed: the driver's staging and the source's pages
	for pass := range 3 {
		var line []string
		for cpu := range len(all) * 64 {
			if !all.IsSet(cpu) {
				continue
			}
			var one unix.CPUSet
			one.Set(cpu)
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				t.Skipf("cannot set the thread's CPU: %v", err)
			}
			best := 0.0
			for range 3 {
				must(t, start.Record(s))
				must(t, c.CopyHtoDAsync(dev, src, s))
				must(t, end.Record(s))
				must(t, end.Synchronize())
				el, err := c.Elapsed(start, end)
				must(t, err)
				best = max(best, gbps(n, el))
			}
			if best <= 0 {
				t.Errorf("pass %d, CPU %d: no bandwidth", pass, cpu)
			}
			line = append(line, fmt.Sprintf("%d:%.1f", cpu, best))
		}
		must(t, unix.SchedSetaffinity(0, &all))
		t.Logf("pass %d, pageable GB/s by CPU: %s", pass, strings.Join(line, " "))
	}
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil || after != all {
		t.Errorf("the thread's CPUs after: %v (%v), want %v", after, err, all)
	}
}
