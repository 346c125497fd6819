// Package fix holds the typed fixes of findings: the figures of a
// finding's detail that planning its fix needs (the replay's variants).
// The analyzers that report them embed these types in their Detail, so
// that the keys are written once, and a reader of a fix (package replay)
// depends on neither the analyzer nor the suite.
package fix

import "math"

// Detail keys of flags a finding sets for its fix (only when true).
const (
	// RunningUnknown (dataloader-wait, 1): DataLoader workers run, but
	// the trace does not show how many; the pool is not sized.
	RunningUnknown = "running_workers_unknown"
	// WorkersFactor (dataloader-wait): where the trace does not count the
	// workers that run, the pool its fix recommends as a multiple of them
	// (detail.workers is then 0).
	WorkersFactor = "workers_factor"
	// DeviceToHost (sync-memcpy, 1): the copies are read-backs; its fix
	// reads back less often (no-sync).
	DeviceToHost = "device_to_host"
)

// The fixes' names, as the replay's variants and the model's transforms
// are named, for the analyzers' VerifyWith.
const (
	Pinned            = "pinned"
	PackCopies        = "pack-copies"
	PrefetchWorkers   = "prefetch-workers"
	PersistentWorkers = "persistent-workers"
	NoSync            = "no-sync"
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

// SmallCopies is what a sync-api finding of small pageable copies tells
// its fix, one pinned buffer copied once: how many copies a step makes and
// their mean size.
type SmallCopies struct {
	// PerStep is the small pageable host-to-device copies per steady step.
	PerStep float64 `detail:"small_copies_per_step"`
	// Bytes is their mean size.
	Bytes int64 `detail:"small_copy_bytes"`
}

// Restarts is what a dataloader-wait finding of epoch restarts tells its
// fix, persistent workers: the wait at each restart and how often it
// comes.
type Restarts struct {
	// RestartNS is the main thread's mean wait at an epoch boundary.
	RestartNS int64 `detail:"epoch_restart_ns"`
	// EpochSteps is the steps from one restart to the next (0: one
	// restart seen).
	EpochSteps int `detail:"epoch_steps"`
}

// Churn is what an alloc-churn finding tells its fix, the cache kept: the
// allocation and free calls a step makes and their time while no kernel
// runs.
type Churn struct {
	// CallsPerStep is the allocation and free calls per steady step.
	CallsPerStep float64 `detail:"calls_per_step"`
	// IdleNSPerStep is their time per step while no kernel runs (the
	// finding's wasted time).
	IdleNSPerStep int64 `detail:"idle_ns_per_step"`
}

// Reads is what a storage-read finding tells its fix: the file reads a
// step makes on the threads that feed the GPU, their time, and the bytes
// they bring (estimated where the trace records no sizes; 0: unknown).
type Reads struct {
	ReadsPerStep  float64 `detail:"reads_per_step"`
	ReadNSPerStep int64   `detail:"read_ns_per_step"`
	BytesPerStep  int64   `detail:"bytes_per_step"`
}
