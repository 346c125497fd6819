package replay

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestChooseCPU(t *testing.T) {
	rates := []cpuRate{{0, 7.3}, {1, 9.0}, {2, 7.7}, {3, 9.2}}
	for _, c := range []struct {
		want float64
		cpu  int
	}{{8.5, 1}, {9.5, 3}, {7.5, 0}, {1, 0}, {7.6, 2}} {
		if got := chooseCPU(rates, c.want); got != c.cpu {
			t.Errorf("closest to %.1f GB/s: CPU %d, want %d", c.want, got, c.cpu)
		}
	}
	if got := chooseCPU(nil, 8); got != -1 {
		t.Errorf("no rates: CPU %d, want -1", got)
	}
}

func TestSampleCPUs(t *testing.T) {
	var big, odd unix.CPUSet
	for cpu := range 100 {
		big.Set(cpu)
	}
	for _, cpu := range []int{1, 3, 5} {
		odd.Set(cpu)
	}
	if got := sampleCPUs(&odd, 64); !slices.Equal(got, []int{1, 3, 5}) {
		t.Errorf("CPUs 1, 3, 5: %v", got)
	}
	got := sampleCPUs(&big, 64)
	if len(got) != 64 || got[0] != 0 || got[63] != 98 || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != 64 {
		t.Errorf("64 of 100 CPUs: %v", got)
	}
	if got := sampleCPUs(&big, 4); !slices.Equal(got, []int{0, 25, 50, 75}) {
		t.Errorf("4 of 100 CPUs: %v", got)
	}
}

// TestRunPlacesTheMainThread: where each CPU copies from pageable memory at
// its own speed, the replay times every CPU it may run on, runs its main
// thread on the one closest to the trace's pageable bandwidth (its copies
// and the box's pageable bandwidth then go at that CPU's speed), says so,
// and gives the thread its CPUs back. A trace without a pageable bandwidth
// is not placed.
func TestRunPlacesTheMainThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Skipf("no thread affinity here: %v", err)
	}
	cpus := sampleCPUs(&before, PlaceMaxCPUs)
	if len(cpus) < 2 {
		t.Skip("this process may run on one CPU only")
	}
	// The last allowed CPU copies at 9 GB/s, the others at 5 to 7.
	f := newFake()
	f.PageableByCPU = map[int]float64{}
	for i, cpu := range cpus {
		f.PageableByCPU[cpu] = 5 + 2*float64(i)/float64(len(cpus))
	}
	last := cpus[len(cpus)-1]
	f.PageableByCPU[last] = 9
	p := tiny(BatchesMain)
	p.TraceGBps = TraceGBps{Pageable: 8.8}
	box, err := Run(context.Background(), f, p, Options{Steps: 2, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if box.MainCPU == nil || *box.MainCPU != last || box.CPUsTimed != len(cpus) || box.PageableCPUMaxGBps < 8.9 || box.PageableCPUMinGBps > 5.1 {
		t.Fatalf("box %+v: want the main thread on CPU %d of %d timed, 5-9 GB/s", box, last, len(cpus))
	}
	if box.PageableGBps < 8.9 || box.PageableGBps > 9.1 {
		t.Errorf("box pageable %.2f GB/s, want CPU %d's 9", box.PageableGBps, last)
	}
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil || after != before {
		t.Errorf("the thread's CPUs after the replay: %v (%v), want %v", after, err, before)
	}
	rep := NewResult(p, "fake", true, 2, box)
	if !slices.ContainsFunc(rep.Notes, func(n string) bool {
		return strings.Contains(n, "depending on the CPU that copies") && strings.Contains(n, "closest to the trace's 8.8 GB/s")
	}) {
		t.Errorf("notes %q do not say where the main thread ran", rep.Notes)
	}
	q := tiny(BatchesMain)
	box, err = Run(context.Background(), f, q, Options{Steps: 2, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if box.MainCPU != nil || box.CPUsTimed != 0 {
		t.Errorf("a trace without a pageable bandwidth placed: %+v", box)
	}
}
