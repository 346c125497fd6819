// Package dataloader defines the dataloader-wait analyzer: the main
// thread waiting for the next batch.
package dataloader

import (
	"fmt"
	"math"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/internal/units"
)

// Analyzer is dataloader-wait.
var Analyzer = &analyze.Analyzer{
	ID:    "dataloader-wait",
	Title: "the main thread waits for the next batch",
	Doc: `dataloader-wait measures the main thread's time inside DataLoader __next__
spans, or host ranges matching --data-range, that is not spent in CUDA copy
or sync calls, OS memory calls, or while kernels run: the "data" bucket of the
two-clock split. Bands follow XProf's input-pipeline analysis (5 % / 20 %).
The fix sizes a worker pool from the measured wait: a pool of N producers
keeps up when t_data / N <= the rest of the step, so
num_workers = ceil(t_data / max(t_step - t_data, t_step / 20)) + 1.
Wasted time: the data bucket. Cost: O(n log n).`,
	Requires:   []*analyze.Analyzer{index.Analyzer},
	Bands:      &analyze.Bands{Warning: 0.05, Error: 0.20},
	VerifyWith: []string{"prefetch-workers"},
	Observable: observable,
	Run:        run,
}

func observable(p *analyze.Pass) (bool, string) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	if len(ix.MainData) > 0 {
		return true, ""
	}
	// What to capture depends on how the profiler records ranges: by itself
	// (record_function, DataLoader spans) or through NVTX.
	switch o := p.Timeline.Observed; {
	case o.CanAnnotations:
		return false, "no DataLoader __next__ span or range matching --data-range on the main thread: iterate the DataLoader inside the profiled loop, or wrap batch loading in torch.profiler.record_function(\"get batch\")"
	case o.CanNVTX && !o.NVTX:
		return false, "no NVTX ranges in the profile: wrap batch loading in torch.cuda.nvtx.range(\"get batch\") and capture with nsys --trace=cuda,nvtx"
	case o.CanNVTX:
		return false, "no NVTX range on the main thread names data loading (matching --data-range): wrap batch loading in torch.cuda.nvtx.range(\"get batch\") or pass --data-range"
	}
	return false, "no range on the main thread names data loading (DataLoader __next__, or a range matching --data-range): wrap batch loading in a named range (torch.profiler.record_function or NVTX) or pass --data-range"
}

// Detail is the typed form of a dataloader-wait finding's detail map.
type Detail struct {
	// Workers is the recommended total of DataLoader workers.
	Workers int `detail:"workers"`
	// DataNSPerStep is the data bucket per steady step, in nanoseconds.
	DataNSPerStep int64 `detail:"data_ns_per_step"`
	// StepNS is the mean steady step, in nanoseconds.
	StepNS int64 `detail:"step_ns"`
}

// DetailOf reads f's detail; ok is false when a key is missing.
func DetailOf(f *analyze.Finding) (d Detail, ok bool) { return d, analyze.DecodeDetail(f, &d) }

func run(p *analyze.Pass) (any, error) {
	ix := p.ResultOf[index.Analyzer].(*index.Index)
	tl := p.Timeline
	data := ix.Buckets[index.Data]
	total := ix.SteadyCovered(data)
	if total == 0 {
		return nil, nil
	}
	per, share := ix.PerStep(total)
	// Evidence: each stretch of data loading (nested data ranges merged),
	// named by the outermost range that starts it.
	multi := false
	outer := map[int64]string{}
	for _, i := range tl.Tracks[ix.Main].Events {
		e := &tl.Events[i]
		if !ix.IsData(e) {
			continue
		}
		name := tl.Name(e.Name)
		if strings.Contains(name, "MultiProcessing") {
			multi = true
		}
		if _, ok := outer[e.Start]; !ok {
			outer[e.Start] = name // events are sorted: the outermost comes first
		}
	}
	var cands []analyze.Candidate
	for _, iv := range ix.MainData {
		w := data.Covered(iv.Start, iv.End)
		if w == 0 || !ix.InSteady(iv.Start) {
			continue
		}
		cands = append(cands, analyze.Candidate{Weight: w, Evidence: analyze.Evidence{
			StartNS: iv.Start, EndNS: iv.End, Track: ix.Label(ix.Main)}, Describe: func() string {
			return fmt.Sprintf("%q: main thread waits %s for data (%s of the range)", outer[iv.Start], units.Dur(w), units.Pct(float64(w)/float64(max(iv.Len(), 1))))
		}})
	}
	var stepNS int64
	if n := len(ix.Steady); n > 0 {
		stepNS = ix.SteadyNS / int64(n)
	}
	workers := Workers(per, stepNS)
	f := analyze.Finding{
		Title:    fmt.Sprintf("input-bound: the main thread waits for data %s of each step (%s per step)", units.Pct(share), units.Dur(per)),
		WastedNS: per,
		Share:    share,
		Evidence: analyze.TopEvidence(cands, analyze.MaxEvidence),
		Detail:   analyze.DetailMap(Detail{Workers: workers, DataNSPerStep: per, StepNS: stepNS}),
	}
	f.Fix = fmt.Sprintf("Build batches in DataLoader worker processes so the next batch is ready when the step ends. "+
		"The main thread waits %s of each %s step; with %d workers each worker has %d steps' time to build its batch, "+
		"which covers the measured wait. pin_memory=True makes the copy asynchronous and persistent_workers=True avoids re-spawning workers each epoch.",
		units.Dur(per), units.Dur(stepNS), workers, workers)
	if multi {
		f.Fix = "The DataLoader already uses worker processes but they do not keep up: " + fmt.Sprintf("raise num_workers to %d, ", workers) +
			"make __getitem__ cheaper (decode less, move augmentation to the GPU), or raise prefetch_factor. " + f.Fix
	}
	f.Code = fmt.Sprintf(`loader = torch.utils.data.DataLoader(
    dataset, batch_size=batch_size, shuffle=True,
    num_workers=%d,           # from the measured wait: ceil(t_data / (t_step - t_data)) + 1
    pin_memory=True,          # page-locked batches: fast, asynchronous host-to-device copies
    persistent_workers=True,  # keep workers alive between epochs
    prefetch_factor=2,
)`, workers)
	p.Report(f)
	return nil, nil
}

// Workers is design.md's worker count for a data wait of tData per step of
// tStep nanoseconds: ceil(tData / max(tStep - tData, tStep / 20)) + 1.
func Workers(tData, tStep int64) int {
	if tData <= 0 || tStep <= 0 {
		return 1
	}
	rest := max(float64(tStep-tData), float64(tStep)/20)
	return int(math.Ceil(float64(tData)/rest)) + 1
}
