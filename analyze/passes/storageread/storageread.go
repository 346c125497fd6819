// Package storageread defines the storage-read analyzer: file reads on
// the threads that feed the GPU, which the step waits for while the GPU
// has nothing to run.
package storageread

import (
	"fmt"
	"slices"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/fix"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/advice"
	"github.com/traceaudit/traceaudit/analyze/passes/internal/hostact"
	"github.com/traceaudit/traceaudit/internal/units"
	"github.com/traceaudit/traceaudit/timeline"
)

// Analyzer is storage-read.
var Analyzer = &analyze.Analyzer{
	ID:    "storage-read",
	Title: "file reads on the threads that feed the GPU: the input comes off the disk too slowly",
	Doc: `storage-read finds file reads (read, pread64, preadv, fread, io_uring_enter,
io_getevents, aio_*) on a thread that launches kernels or copies in steady
steps: a data set read slice by slice on the main thread (an HDF5 file, a
memory-mapped array faulted in by read calls), which the step waits for.
Per step it gives the calls, their time, and the bandwidth they reach.
Nsight Systems records no read sizes: the bytes read are taken to be those
the same threads copy to the GPU in the step (the batch read is the batch
copied), and the bandwidth is marked an estimate. A read that takes
100 µs or more is served by the disk (the page cache returns reads of a
batch's samples in tens of µs at several GB/s), one under 50 µs by memory:
reads whose median is that fast are host work like any other, not a
finding.
Needs OS runtime calls (nsys --trace=osrt); Chrome traces never have them.
Wasted time: the reads' time while the GPU runs neither kernels nor copies.
Cost: O(n log n).`,
	Requires:   []*analyze.Analyzer{index.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.10, Error: 0.30},
	VerifyWith: []string{"cache-data", "prefetch-workers"},
	Observable: func(p *analyze.Pass) (bool, string) {
		if o := p.Timeline.Observed; !o.OSCalls {
			if !o.CanOSCalls {
				return false, hostact.NoOSCallsProfiler
			}
			return false, hostact.NoOSCalls
		}
		return true, ""
	},
	Run: run,
}

// Detail is the typed form of a storage-read finding's detail map.
type Detail struct {
	// Reads are the file reads per step on the threads that feed the GPU,
	// their time and their bytes: recorded where the trace records sizes,
	// else the bytes the same threads copy to the GPU per step
	// (BytesEstimated 1), 0 when neither is known.
	fix.Reads
	BytesEstimated int `detail:"bytes_estimated"`
	// MedianReadNS is the median read's duration.
	MedianReadNS int64 `detail:"median_read_ns"`
	// MBps is BytesPerStep over ReadNSPerStep, in MB/s (0: unknown).
	MBps float64 `detail:"mbps"`
	// Disk is 1 where the reads run at the disk's pace (the median read
	// takes 100 µs or more), 0 at memory speed, -1 in between.
	Disk int `detail:"disk"`
}

// DetailOf reads f's detail; ok is false when a key is missing.
func DetailOf(f *analyze.Finding) (d Detail, ok bool) { return d, analyze.DecodeDetail(f, &d) }

// cacheReadNS is the longest median read taken to come from the page
// cache; from index.DiskReadNS on, the disk serves the reads.
const cacheReadNS = 50_000

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	feeders := hostact.Feeders(tl, ix)
	var calls []int32
	var durs []int64
	var sum, recorded, copied int64
	for i := range tl.Events {
		e := &tl.Events[i]
		if !feeders[e.Track] || !ix.InSteady(e.Start) {
			continue
		}
		switch {
		case e.Kind == timeline.KindOS && timeline.IsFileRead(tl.Name(e.Name)):
			calls = append(calls, int32(i))
			durs = append(durs, e.Dur())
			sum += e.Dur()
			recorded += e.Bytes
		case e.Kind == timeline.KindAPI && e.API.IsCopy() && e.Link >= 0:
			if w := &tl.Events[e.Link]; w.Kind == timeline.KindMemcpy && w.Copy == timeline.CopyHtoD {
				copied += w.Bytes
			}
		}
	}
	if len(calls) == 0 {
		return nil, nil
	}
	wasted, cands := hostact.Stalls(tl, ix, calls, ix.Work, func(e *timeline.Event, w int64) string {
		return fmt.Sprintf("%s for %s, %s of it with the GPU idle", tl.Name(e.Name), units.Dur(e.Dur()), units.Dur(w))
	})
	if wasted.Len() == 0 {
		return nil, nil
	}
	steps := int64(max(len(ix.Steady), 1))
	slices.Sort(durs)
	d := Detail{
		Reads:        fix.Reads{ReadsPerStep: float64(len(calls)) / float64(steps), ReadNSPerStep: sum / steps, BytesPerStep: recorded / steps},
		MedianReadNS: durs[len(durs)/2],
		Disk:         -1,
	}
	if recorded == 0 && copied > 0 {
		d.BytesPerStep, d.BytesEstimated = copied/steps, 1
	}
	if d.BytesPerStep > 0 && d.ReadNSPerStep > 0 {
		d.MBps = float64(d.BytesPerStep) / float64(d.ReadNSPerStep) * 1e3
	}
	switch {
	case d.MedianReadNS >= index.DiskReadNS:
		d.Disk = 1
	case d.MedianReadNS < cacheReadNS:
		d.Disk = 0
	}
	if d.Disk == 0 {
		return nil, nil // served from memory: host work like any other, not storage
	}
	per, share := ix.PerStep(wasted.Len())
	f := analyze.Finding{
		Title: fmt.Sprintf("file reads on the threads that feed the GPU: %.0f per step, %s of each step with the GPU idle (%s per step)%s",
			d.ReadsPerStep, units.Pct(share), units.Dur(per), pace(d)),
		WastedNS:         per,
		Share:            share,
		EstimatedSpeedup: ix.Speedup(per, 0, share),
		Bound:            "the reads at memory speed: the data set in memory, or read ahead by workers",
		Evidence:         analyze.TopEvidence(cands, analyze.MaxEvidence),
		Detail:           analyze.DetailMap(d),
	}
	f.Fix, f.Code = advise(d, advice.Of(ix))
	p.AddFinding(f)
	return nil, nil
}

// pace says how fast the reads run and where from, for the title.
func pace(d Detail) string {
	rate := ""
	if d.MBps > 0 {
		rate = " at " + perSecond(d.MBps)
		if d.BytesEstimated == 1 {
			rate = " at about " + perSecond(d.MBps)
		}
	}
	switch d.Disk {
	case 1:
		return fmt.Sprintf("; median read %s%s: the disk, not memory", units.Dur(d.MedianReadNS), rate)
	case 0:
		return fmt.Sprintf("; median read %s%s: served from memory", units.Dur(d.MedianReadNS), rate)
	}
	return fmt.Sprintf("; median read %s%s", units.Dur(d.MedianReadNS), rate)
}

// perSecond formats a bandwidth in MB/s as decimal bytes a second.
func perSecond(mbps float64) string { return units.Bytes(int64(mbps*1e6)) + "/s" }

// advise is the fix that fits what the reads show.
func advise(d Detail, prog advice.Program) (fix, code string) {
	size := ""
	if d.BytesPerStep > 0 && d.ReadsPerStep > 0 {
		size = fmt.Sprintf(" of about %s each", units.Bytes(int64(float64(d.BytesPerStep)/d.ReadsPerStep)))
	}
	fix = fmt.Sprintf("The loop reads its input from files on the thread that launches the GPU work: %.0f reads%s per step "+
		"that the GPU waits for. ", d.ReadsPerStep, size)
	if d.Disk == 1 {
		fix += "They run at the disk's pace. If the data set fits in memory, keep it there: read it once into RAM " +
			"(or leave the page cache room to hold it) and every later read runs at memory speed. "
	}
	fix += "Otherwise read ahead of the GPU: in DataLoader workers, each opening the file itself (an HDF5 handle does not " +
		"survive fork), so that reads overlap the step. Read larger, contiguous blocks: an HDF5 chunk shape that matches " +
		"the access (a chunk per sample for shuffled access, contiguous or sorted indices within a batch). Where reads " +
		"can go straight to GPU memory, GPU Direct Storage (cuFile, kvikio.CuFile) skips the host and its page cache."
	code = prog.Pick(`# the data set fits in memory: read it once
data = torch.from_numpy(h5py.File(path, "r")["x"][:])   # one sequential read, then memory speed
# it does not: read in workers, each with its own file handle
class H5(torch.utils.data.Dataset):
    def __init__(self, path): self.path, self.f = path, None
    def __len__(self): return N
    def __getitem__(self, i):
        if self.f is None:
            self.f = h5py.File(self.path, "r")["x"]     # opened in the worker
        return torch.from_numpy(self.f[i])
loader = DataLoader(H5(path), batch_size=B, shuffle=True, num_workers=8,
                    pin_memory=True, persistent_workers=True)`,
		`# read the model inputs ahead of the GPU: in a background thread or DataLoader workers,
# or load them into memory once`,
		`/* read the next input on another thread (or with io_uring) while the GPU works on this one,
   or read the whole data set into pinned memory once (cudaMallocHost + one sequential read) */`)
	return fix, code
}
