package model_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/fix"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/internal/testing/testaudit"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// realPair is one pair of fixtures/step-model/second/real.tsv: the before
// side's trace, the fix applied, and both sides' unprofiled mean steps.
type realPair struct {
	name, fix     string
	before, after int64
}

func secondSet(t *testing.T) []realPair {
	t.Helper()
	f, err := os.Open(testfix.Project("step-model/second/real.tsv"))
	if err != nil {
		testfix.Missing(t, "%v", err)
	}
	defer f.Close()
	var out []realPair
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		c := strings.Split(line, "\t")
		if len(c) != 4 {
			t.Fatalf("real.tsv: %q: want 4 columns", line)
		}
		b, err1 := strconv.ParseInt(c[2], 10, 64)
		a, err2 := strconv.ParseInt(c[3], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("real.tsv: %q: %v %v", line, err1, err2)
		}
		out = append(out, realPair{c[0], c[1], b, a})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// On each before trace of the second set, by default, the model's step
// with the fix applied (all's where the trace plans no such fix) is the
// real unprofiled after step within ±20 %, and its finding takes its
// estimate from the model.
func TestSecondSetPredictsTheRealFix(t *testing.T) {
	pairs := secondSet(t)
	if len(pairs) < 8 {
		t.Fatalf("%d pairs in real.tsv, want 8", len(pairs))
	}
	for _, p := range pairs {
		a := testaudit.File(t, testfix.Project(filepath.Join("step-model", "second", p.name+".pt.trace.json.gz")))
		if a.Model == nil || !a.Model.Faithful() {
			t.Errorf("%s: model %+v: want a faithful one", p.name, a.Model)
			continue
		}
		fx, ok := a.Model.Fix(p.fix)
		if !ok {
			t.Errorf("%s: no %s among %+v", p.name, p.fix, a.Model.Fixes)
			continue
		}
		if r := float64(fx.StepNS) / float64(p.after); r < 0.8 || r > 1.2 {
			t.Errorf("%s: %s step %.2f ms, the real after step %.2f ms: %.2f of it, want 0.8-1.2",
				p.name, p.fix, float64(fx.StepNS)/1e6, float64(p.after)/1e6, r)
		}
		if fx.Finding == "" {
			continue
		}
		if f := finding(t, a, fx.Finding); f.EstimateSource != "model" || f.EstimatedSpeedup != fx.Speedup {
			t.Errorf("%s: %s est. %.3fx (%s), want the model's %.3fx", p.name, f.ID, f.EstimatedSpeedup, f.EstimateSource, fx.Speedup)
		}
	}
}

// A loader whose 4 workers set the pace: every fetch waits about as long,
// so nothing counts the workers. The advice and the model's pool are a
// multiple of those running, never a count that may be fewer.
func TestPatternUncountedWorkers(t *testing.T) {
	a := testaudit.File(t, testfix.Project("step-model/second/text-workers-4.pt.trace.json.gz"))
	f := finding(t, a, "dataloader-wait")
	pw, ok := a.Model.Fix(model.PrefetchWorkers)
	if !ok || pw.Workers != 0 || pw.WorkersFactor <= 1 || f.Detail[fix.WorkersFactor] != pw.WorkersFactor {
		t.Fatalf("model %+v, detail %v: want prefetch-workers sized as a factor of the workers running", a.Model.Fixes, f.Detail)
	}
	if f.Detail[fix.RunningUnknown] != 1 || f.Detail["workers"] != 0 || f.EstimateSource != "model" || f.EstimatedSpeedup != pw.Speedup {
		t.Errorf("detail %v, est. %.3fx (%s)", f.Detail, f.EstimatedSpeedup, f.EstimateSource)
	}
	want := "num_workers=math.ceil(" + strconv.FormatFloat(pw.WorkersFactor, 'f', -1, 64) + " * num_workers)"
	if !strings.Contains(f.Code, want) || !strings.Contains(f.Fix, "times the workers you run") {
		t.Errorf("fix %q, code %q: want %q", f.Fix, f.Code, want)
	}
}
