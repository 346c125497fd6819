package replay

import (
	"math"

	"golang.org/x/sys/unix"
)

// Where the replay's main thread runs.
//
// A pageable copy goes through the driver's staging buffers at the speed
// the calling thread's CPU reads the source, and that speed need not be
// the same on every CPU of a machine: on the calibration's H200 host (one
// NUMA node as the guest sees it, 16 vCPUs), 96 MiB copied from pageable
// memory ran at 7.3 GB/s from CPUs 0-3, 9.0-9.4 from CPUs 4-7 and 12-15
// and 6.7-7.8 from CPUs 8-11, and the same pair's real before step, all
// pageable copy, moved from 12.8 to 21.2 ms between processes. A replay on
// whichever CPU the scheduler gives it compares one process's copies with
// another's. So where the trace's pageable bandwidth is known, the replay
// times the plan's pageable copies from each CPU it may run on and keeps
// its main thread on the one whose copies run closest to the trace's: the
// machine as the traced process found it, as near as this one allows.

// PlaceMaxCPUs bounds how many CPUs place times: on a machine with more,
// it times this many, evenly spaced over the allowed set.
const PlaceMaxCPUs = 64

// cpuRate is one CPU's pageable host-to-device bandwidth, in GB/s.
type cpuRate struct {
	CPU  int
	GBps float64
}

// place runs the calling OS thread, which the caller has locked
// (runtime.LockOSThread), on the CPU whose pageable copies of the plan's
// sizes run closest to the trace's pageable bandwidth (chooseCPU), where
// the trace has one, the plan copies to the device and the process may
// run on more than one CPU. It returns the rates it measured (nil where it
// did not place) and a function that gives the thread back its CPUs.
// Where the system refuses a thread's affinity, it does not place: that
// is no error.
func (r *rig) place() ([]cpuRate, func(), error) {
	none := func() {}
	want := r.p.TraceGBps.Pageable
	idx, biggest, _ := r.htodCopies()
	if want <= 0 || len(idx) == 0 {
		return nil, none, nil
	}
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil || all.Count() < 2 {
		return nil, none, nil
	}
	restore := func() { _ = unix.SchedSetaffinity(0, &all) }
	src := make([]byte, biggest)
	fill(src, 3)
	// One untimed pass: the first copies from a buffer also set up the
	// driver's staging and run slower, which would count against the
	// first CPU timed.
	if _, err := r.copyRate(idx, src, false, 1); err != nil {
		restore()
		return nil, none, err
	}
	var rates []cpuRate
	for _, cpu := range sampleCPUs(&all, PlaceMaxCPUs) {
		var one unix.CPUSet
		one.Set(cpu)
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			restore()
			return nil, none, nil
		}
		g, err := r.copyRate(idx, src, false, BoxReps)
		if err != nil {
			restore()
			return nil, none, err
		}
		rates = append(rates, cpuRate{cpu, g})
	}
	var one unix.CPUSet
	one.Set(chooseCPU(rates, want))
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		restore()
		return nil, none, nil
	}
	return rates, restore, nil
}

// sampleCPUs lists the CPUs of set, or at most most of them, evenly
// spaced, in increasing order.
func sampleCPUs(set *unix.CPUSet, most int) []int {
	var cpus []int
	for cpu := range len(set) * 64 {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	if len(cpus) <= most {
		return cpus
	}
	out := make([]int, most)
	for i := range out {
		out[i] = cpus[i*len(cpus)/most]
	}
	return out
}

// chooseCPU is the CPU whose rate lies closest to want (the first of
// equals), or -1 for no rates.
func chooseCPU(rates []cpuRate, want float64) int {
	best, dist := -1, math.Inf(1)
	for _, c := range rates {
		if d := math.Abs(c.GBps - want); d < dist {
			best, dist = c.CPU, d
		}
	}
	return best
}

// placeInBox records in box the placement's rates: the slowest and the
// fastest CPU's, how many were timed, and the CPU the main thread ran on.
func placeInBox(box *Box, rates []cpuRate, want float64) {
	if box == nil || len(rates) == 0 {
		return
	}
	lo, hi := rates[0].GBps, rates[0].GBps
	for _, c := range rates {
		lo, hi = min(lo, c.GBps), max(hi, c.GBps)
	}
	cpu := chooseCPU(rates, want)
	box.PageableCPUMinGBps, box.PageableCPUMaxGBps, box.CPUsTimed, box.MainCPU = lo, hi, len(rates), &cpu
}
