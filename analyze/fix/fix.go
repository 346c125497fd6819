// Package fix holds the typed fixes of findings: the figures of a
// finding's detail that planning its fix needs (the replay's variants).
// The analyzers that report them embed these types in their Detail, so
// that the keys are written once, and a reader of a fix (package replay)
// depends on neither the analyzer nor the suite.
package fix

import "math"

// Detail keys by which a finding tells the step model which fix it
// calls for where its replay variant does not say (set only when true).
const (
	// RunningUnknown (dataloader-wait, 1): DataLoader workers run, but
	// the trace does not show how many; the pool is not sized.
	RunningUnknown = "running_workers_unknown"
	// EpochRestartNS (dataloader-wait): the mean wait for the loader to
	// start again at an epoch boundary; its fix is persistent workers.
	EpochRestartNS = "epoch_restart_ns"
	// SmallCopiesPerStep (sync-api): small pageable copies a step, each
	// waited for; its fix packs them.
	SmallCopiesPerStep = "small_copies_per_step"
	// DeviceToHost (sync-memcpy, 1): the copies are read-backs; its fix
	// reads back less often.
	DeviceToHost = "device_to_host"
)

// DataLoader is what a dataloader-wait finding tells its fix, more
// DataLoader workers: the pool that keeps up.
type DataLoader struct {
	// Workers is the recommended total of DataLoader workers.
	Workers int `detail:"workers"`
}

// Munmap is what a munmap-stall finding tells its fix, batch buffers
// allocated once: how many batch mappings each step unmaps.
type Munmap struct {
	// CallsPerStep is the number of munmap-like calls per steady step.
	CallsPerStep float64 `detail:"calls_per_step"`
}

// Launches is what a launch-bound finding tells its fix, a CUDA graph:
// the kernels launched one by one and the host's pace between them, what
// the replay needs to launch the same kernels at the same pace.
type Launches struct {
	// KernelsPerStep is the number of individually launched kernels per
	// steady step.
	KernelsPerStep int `detail:"kernels_per_step"`
	// KernelNSPerStep is their summed duration per steady step.
	KernelNSPerStep int64 `detail:"kernel_ns_per_step"`
	// LaunchIntervalNS is the host's time per launch: the median time from
	// one launch call's start to the next one's.
	LaunchIntervalNS int64 `detail:"launch_interval_ns"`
	// LaunchIntervalMeanNS is the host's mean time per launch within runs
	// of launches: the mean of the same intervals, those up to
	// launchbound.IntervalTailX times the median (longer ones, between steps or
	// around other host work, are not the launches' pace). Where some
	// launches are slow (a garbage collection, a slow dispatch), it holds
	// them, which the median does not, and a CUDA graph removes them too.
	LaunchIntervalMeanNS int64 `detail:"launch_interval_mean_ns"`
}

// Workers is design.md's worker count when the main thread builds each
// batch itself (t_batch = t_data): WorkersFor(tData, tData, tStep).
func Workers(tData, tStep int64) int { return WorkersFor(tData, tData, tStep) }

// WorkersFor is design.md's worker count for batches that take tBatch to
// build, with a data wait of tData per step of tStep nanoseconds:
// ceil(tBatch / max(tStep - tData, tStep / 20)) + 1.
func WorkersFor(tBatch, tData, tStep int64) int {
	if tBatch <= 0 || tStep <= 0 {
		return 1
	}
	rest := max(float64(tStep-tData), float64(tStep)/20)
	return int(math.Ceil(float64(tBatch)/rest)) + 1
}
