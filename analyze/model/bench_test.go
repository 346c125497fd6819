package model_test

import (
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// BenchmarkModel is the step model's cost on the largest real Chrome
// trace of the corpus (216 k events, 5 steps): the graph, the unchanged
// simulation twice (profiler cost kept and removed), cuda-graph and all.
func BenchmarkModel(b *testing.B) {
	tl, err := ingest.Open(testfix.Shared(b, "chrome", "hta_v100_ddp2_rank1_profile_memory_216k.json.gz"), ingest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ix := index.New(tl, analyze.DefaultConfig())
	o := model.Options{FindingOf: map[string]string{model.CUDAGraph: "launch-bound", model.All: "gpu-idle"}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if model.Build(ix, o) == nil {
			b.Fatal("no model")
		}
	}
}
