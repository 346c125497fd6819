package audit

import (
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/comm"
	"github.com/traceaudit/traceaudit/analyze/fix"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/ivl"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/timeline"
)

// symptom is the finding whose estimate is that of all the fixes together.
const symptom = "gpu-idle"

// TransformOf is the fix of finding f, as the model's transform and the
// replay's variant are named: all for the symptom, else the first variant
// the finding names ("" for none).
func TransformOf(f *analyze.Finding) string {
	if f.ID == symptom {
		return model.All
	}
	if len(f.VerifyWith) > 0 {
		return f.VerifyWith[0]
	}
	return ""
}

// stepModel simulates the steady step and the fixes the findings call for,
// then takes each finding's estimate from its fix's simulation where the
// model reproduces the trace; other estimates stay bounds, marked so.
func stepModel(ix *index.Index, cx *comm.Index, findings []analyze.Finding, cfg *analyze.Config, resize func(*analyze.Finding, analyze.PoolSize)) *model.Model {
	planned := map[string]string{}
	running, unknown, paced := 0, false, false
	for i := range findings {
		f := &findings[i]
		t := TransformOf(f)
		if f.Detail[fix.RunningUnknown] == 1 && f.Detail["running_workers"] > 0 {
			t = "" // at least so many workers run: a pool sized from that may be smaller than the one running
		}
		if t != "" {
			if _, ok := planned[t]; !ok {
				planned[t] = f.ID
			}
		}
		if f.ID == "dataloader-wait" {
			running, unknown = int(f.Detail["running_workers"]), f.Detail[fix.RunningUnknown] == 1
			// A wait that recurs, for workers that do not start again:
			// they set the pace.
			paced = (running > 0 || f.Detail[fix.RunningUnknown] == 1) && f.Detail["epoch_restart_ns"] == 0 &&
				f.Severity >= analyze.SeverityWarning && f.OneOff == ""
		}
	}
	o := model.Options{ProfilerEventNS: cfg.ProfilerEventNS, UnprofiledStepNS: cfg.UnprofiledStepNS, PinnedGBps: cfg.PinnedGBps,
		RunningWorkers: running, RunningUnknown: unknown && running == 0, LoaderPaced: paced, FindingOf: planned, KeepSchedules: cfg.KeepSchedules}
	if id, ok := planned[model.FewerCollectives]; ok && cx != nil {
		o.Issue, o.IssueCut = issueCut(ix, cx, findings, id)
	}
	m := model.Build(ix, o)
	if m == nil {
		return nil
	}
	for i := range findings {
		f := &findings[i]
		f.EstimateSource = "bound"
		fix, ok := m.Fix(TransformOf(f))
		if !ok || !m.Faithful() || fix.Name == model.All && (len(m.Fixes) < 2 || uncovered(f, m) > maxUncovered) {
			continue
		}
		f.EstimatedSpeedup, f.EstimateSource = fix.Speedup, "model"
		if (fix.Workers > 0 || fix.WorkersFactor > 0) && fix.Name != model.All {
			resize(f, analyze.PoolSize{Workers: fix.Workers, Factor: fix.WorkersFactor})
		}
	}
	return m
}

// resizer returns what rewrites a finding for the size of its fix: its
// analyzer's Resize, given the results the analyzer required.
func resizer(tl *timeline.Timeline, cfg *analyze.Config, results map[*analyze.Analyzer]any, analyzers []*analyze.Analyzer) func(*analyze.Finding, analyze.PoolSize) {
	return func(f *analyze.Finding, n analyze.PoolSize) {
		for _, a := range analyzers {
			if a.ID != f.ID || a.Resize == nil {
				continue
			}
			p := &analyze.Pass{Analyzer: a, Timeline: tl, Config: cfg, ResultOf: map[*analyze.Analyzer]any{}}
			for _, r := range a.Requires {
				p.ResultOf[r] = results[r]
			}
			a.Resize(p, f, n)
		}
	}
}

// maxUncovered is the share of the GPU's idle time, held by causes no
// simulated fix removes, above which the symptom keeps its bound: the
// model's all would promise too little.
const maxUncovered = 0.25

// causeFix names, per cause of gpu-idle's idle gaps (its detail's
// gap_share_ keys), the transforms that remove it; host operators and
// uninstrumented host work between launches go with a CUDA graph; copy
// calls that read values back (.cpu() into pageable memory) go with
// no-sync, which defers the reads.
var causeFix = map[string][]string{
	"data_loading":             {model.PrefetchWorkers, model.PersistentWorkers},
	"file_reads":               {model.CacheData, model.PrefetchWorkers},
	"copy_calls":               {model.Pinned, model.PinnedCopyStream, model.PackCopies, model.NoSync},
	"sync_calls":               {model.NoSync, model.PackCopies},
	"work_on_values_read_back": {model.NoSync},
	"OS_calls":                 {model.ReuseBuffers},
	"allocation_calls":         {model.KeepCache},
	"host_operators":           {model.CUDAGraph},
	"uninstrumented_host_work": {model.CUDAGraph},
}

// uncovered is the share of gpu-idle finding f's idle time whose causes
// no fix of m removes.
func uncovered(f *analyze.Finding, m *model.Model) float64 {
	var out float64
	for k, v := range f.Detail {
		cause, ok := strings.CutPrefix(k, "gap_share_")
		if !ok {
			continue
		}
		covered := false
		for _, t := range causeFix[cause] {
			if _, ok := m.Fix(t); ok {
				covered = true
			}
		}
		if !covered {
			out += v
		}
	}
	return out
}

// issueCut is what fewer-collectives takes from the step: the host time
// that issues the steady collectives, per thread, and the share of it that
// the finding's fewer, larger collectives save (1 - n'/n).
func issueCut(ix *index.Index, cx *comm.Index, findings []analyze.Finding, id string) (map[timeline.TrackID]ivl.Set, float64) {
	for i := range findings {
		f := &findings[i]
		if f.ID != id {
			continue
		}
		n, fewer := f.Detail["collectives_per_step"], f.Detail["target_per_step"]
		if n <= 0 || fewer >= n {
			return nil, 0
		}
		spans, _ := comm.IssueTime(ix.TL, cx.Steady())
		return spans, 1 - fewer/n
	}
	return nil, 0
}
