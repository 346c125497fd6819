package plot

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/analyze/suite"
	tt "github.com/traceaudit/traceaudit/timeline/timelinetest"
)

const ms, us = tt.Ms, tt.Us

// inputBound builds 4 ProfilerSteps on a main thread: a 160 ms start-up
// step, then 100 ms steps of 60 ms DataLoader wait, a 10 ms pageable copy,
// a 2 ms munmap, 27 ms of kernels (one launched by an autograd thread) and
// a 1 ms stream synchronisation.
func inputBound(t *testing.T) *audit.Analysis {
	t.Helper()
	b := tt.New()
	h := b.Thread(1, 1, "python")
	bw := b.Thread(1, 2, "pt_autograd_0")
	s := b.Stream(0, 7)
	step := func(i int, t0, dur int64) {
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+dur)
		data := t0 + dur - 40*ms
		b.Range(h, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0, data)
		b.Memcpy(h, s, tt.Pageable(64<<20), data, data+10*ms, data+10*us, data+10*ms)
		b.OS(h, "munmap", data+10*ms, data+12*ms)
		for k := range 3 {
			ks := data + 12*ms + int64(k)*9*ms
			th := h
			if k == 2 {
				th = bw
			}
			b.Launch(th, s, "gemm", ks-5*us, ks-1*us, ks, ks+9*ms)
		}
		b.API(h, "cudaStreamSynchronize", t0+dur-1*ms, t0+dur)
	}
	step(0, 0, 160*ms)
	for i := 1; i < 4; i++ {
		step(i, 60*ms+int64(i)*100*ms, 100*ms)
	}
	r, err := audit.RunWith(b.Build(t), analyze.DefaultConfig(), suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// layersOf returns the figure's layers of type T.
func layersOf[T any](f *Figure) []T {
	var out []T
	for _, l := range f.layers {
		if x, ok := l.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

func legendLabels(f *Figure) []string {
	var s []string
	for _, e := range f.Legend {
		s = append(s, e.Label)
	}
	return s
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.6g, want %.6g ± %.2g", what, got, want, tol)
	}
}

func TestTimelineLanesLegendAndWindow(t *testing.T) {
	r := inputBound(t)
	if r.Steps.StartupExcluded != 1 || len(r.Index.Steady) != 3 {
		t.Fatalf("scenario: steps %+v", r.Steps)
	}
	f, err := NewTimeline(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.Plot.Title.Text, "Timeline of 3 steady steps around the median (steps 2-4 of 4") {
		t.Errorf("title %q", f.Plot.Title.Text)
	}
	if got := f.Plot.X.Label.Text; got != "time since trace start (ms)" {
		t.Errorf("x label %q", got)
	}
	var lanes []string
	for _, tk := range f.Plot.Y.Tick.Marker.Ticks(f.Plot.Y.Min, f.Plot.Y.Max) {
		lanes = append(lanes, tk.Label)
	}
	if want := []string{"main thread (python)", "thread 2 (pt_autograd_0)", "gpu0/stream7"}; !slices.Equal(lanes, want) {
		t.Errorf("lanes %q, want %q", lanes, want)
	}
	wantLegend := []string{"GPU idle (no kernel running)", "data loading (host)", "kernel launch call", "copy call (cudaMemcpy*)",
		"sync call (*Synchronize)", "munmap / OS memory call", "kernel (GPU)", "pageable copy (GPU)",
		"step boundary", "evidence: gpu-idle (worst finding)"}
	if got := legendLabels(f); !slices.Equal(got, wantLegend) {
		t.Errorf("legend %q,\nwant %q", got, wantLegend)
	}
	// The window is steps 1-3 (160 ms to 460 ms) with 1 % padding; the
	// start-up step is not shown.
	near(t, "x min", f.Plot.X.Min, 157, 1e-9)
	near(t, "x max", f.Plot.X.Max, 463, 1e-9)
	rs := layersOf[*rules](f)
	var bounds []float64
	for _, r := range rs {
		if !r.Horizontal {
			bounds = r.At
		}
	}
	if want := []float64{160, 260, 360, 460}; !slices.Equal(bounds, want) {
		t.Errorf("step boundaries %v, want %v", bounds, want)
	}
	// Per lane and category: 3 kernels per step merge into one box (and
	// the start-up step's last kernels show in the left padding); the GPU
	// lane holds the pageable copies; the autograd thread only launches.
	count := map[string]int{}
	var idle float64
	var evidence []box
	for _, bs := range layersOf[*boxes](f) {
		for _, b := range bs.Boxes {
			switch {
			case b.Label == "gpu idle":
				idle += b.X1 - b.X0
			case b.Fill == nil:
				evidence = append(evidence, b)
			default:
				count[b.Group+" / "+b.Label]++
			}
		}
	}
	for k, want := range map[string]int{
		"gpu0/stream7 / kernel (GPU)":                    4,
		"gpu0/stream7 / pageable copy (GPU)":             3,
		"main thread (python) / data loading (host)":     3,
		"main thread (python) / munmap / OS memory call": 3,
		"main thread (python) / copy call (cudaMemcpy*)": 3,
		"thread 2 (pt_autograd_0) / kernel launch call":  3,
	} {
		if count[k] != want {
			t.Errorf("%s: %d boxes, want %d (all: %v)", k, count[k], want, count)
		}
	}
	// Idle: the 306 ms view less 3 x 27 ms of kernels and the start-up
	// step's last 2 ms of kernels.
	near(t, "idle ms", idle, 306-81-2, 1e-6)
	// Evidence boxes sit on the lane of their track.
	laneY := map[string]float64{"gpu0/stream7": 0, "host/1/1 (python)": 2}
	if len(evidence) != len(r.Findings[0].Evidence) {
		t.Fatalf("%d evidence boxes for %d evidence ranges", len(evidence), len(r.Findings[0].Evidence))
	}
	for _, e := range evidence {
		y, ok := laneY[e.Group]
		if e.Label != r.Findings[0].ID || !ok || (e.Y0+e.Y1)/2 != y {
			t.Errorf("evidence box %+v of %s not on its lane", e, r.Findings[0].ID)
		}
	}
}

func TestTimelineMergesSubPixelEvents(t *testing.T) {
	b := tt.New()
	h := b.Thread(1, 1, "python")
	s := b.Stream(0, 7)
	for i := range 3 {
		t0 := int64(i) * 100 * ms
		b.Range(h, fmt.Sprintf("ProfilerStep#%d", i), t0, t0+100*ms)
		// 5,000 kernels of 2 µs, 2 µs apart: far below a pixel.
		for k := range 5000 {
			ks := t0 + 50*ms + int64(k)*4*us
			b.Launch(h, s, "tiny", ks-2*us, ks-1*us, ks, ks+2*us)
		}
	}
	r, err := audit.RunWith(b.Build(t), analyze.DefaultConfig(), suite.Default)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewTimeline(r)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, bs := range layersOf[*boxes](f) {
		for _, b := range bs.Boxes {
			if b.Label == catInfo[catKernel].Label {
				n++
			}
		}
	}
	if n != 3 {
		t.Errorf("15,000 sub-pixel kernels drawn as %d boxes, want one per step (3)", n)
	}
}

func TestUtilizationBins(t *testing.T) {
	r := inputBound(t)
	f, err := NewUtilization(r)
	if err != nil {
		t.Fatal(err)
	}
	if f.Plot.Y.Label.Text != "GPU busy (% of each 1.50 ms bin)" || f.Plot.X.Label.Text != "time since trace start (ms)" {
		t.Errorf("labels %q, %q", f.Plot.Y.Label.Text, f.Plot.X.Label.Text)
	}
	lines := layersOf[*plotter.Line](f)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want kernels and copies", len(lines))
	}
	for i, want := range []float64{r.GPU.ComputeBusyShare, r.GPU.CopyBusyShare} {
		l := lines[i]
		if len(l.XYs) != utilBins+1 {
			t.Fatalf("line %d: %d points, want %d", i, len(l.XYs), utilBins+1)
		}
		var sum float64
		for _, p := range l.XYs[:utilBins] {
			if p.Y < 0 || p.Y > 100 {
				t.Errorf("bin value %v out of [0, 100]", p.Y)
			}
			sum += p.Y
		}
		near(t, fmt.Sprintf("line %d mean %%", i), sum/utilBins, 100*want, 1e-6)
	}
	if got := legendLabels(f); got[0] != "kernels busy (mean 27 %)" || got[1] != "copies busy (mean 10.0 %)" {
		t.Errorf("legend %q", got)
	}
}

func TestStepsBarsEqualBreakdowns(t *testing.T) {
	r := inputBound(t)
	f, err := NewSteps(r)
	if err != nil {
		t.Fatal(err)
	}
	if f.Plot.Title.Text != "Where each step's time goes (input-bound)" || f.Plot.Y.Label.Text != "step time (ms)" {
		t.Errorf("title %q, y label %q", f.Plot.Title.Text, f.Plot.Y.Label.Text)
	}
	bars := layersOf[*boxes](f)[0]
	got := map[string]map[string]float64{}
	hatched := map[string]bool{}
	for _, b := range bars.Boxes {
		if got[b.Group] == nil {
			got[b.Group] = map[string]float64{}
		}
		got[b.Group][b.Label] += b.Y1 - b.Y0
		hatched[b.Group] = hatched[b.Group] || b.Hatch
	}
	if len(got) != len(r.Steps.PerStep) {
		t.Fatalf("%d bars, want %d", len(got), len(r.Steps.PerStep))
	}
	for i, s := range r.Steps.PerStep {
		g := stepLabel(s.Name, i)
		for _, k := range bucketInfo {
			near(t, g+" "+k.Label, got[g][k.Label], float64(s.BreakdownNS[k.Bucket])/1e6, 1e-9)
		}
		if hatched[g] != s.Startup {
			t.Errorf("step %s: hatched %v, start-up %v", g, hatched[g], s.Startup)
		}
	}
	wantLegend := []string{"data wait", "munmap/OS", "sync", "exposed copy", "compute", "excluded step (hatched)", "median steady step (100 ms)"}
	if l := legendLabels(f); !slices.Equal(l, wantLegend) {
		t.Errorf("legend %q, want %q", l, wantLegend)
	}
	var texts []string
	for _, n := range layersOf[*notes](f) {
		for _, x := range n.Notes {
			texts = append(texts, x.Text)
		}
	}
	if !slices.Contains(texts, "start-up\n(excluded)") || !slices.Contains(texts, "160 ms") {
		t.Errorf("bar labels %q lack the start-up mark or its time", texts)
	}
}

func TestFindingsBarsEqualWasted(t *testing.T) {
	r := inputBound(t)
	f, err := NewFindings(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) < 3 {
		t.Fatalf("scenario: %d findings", len(r.Findings))
	}
	var ids []string
	for _, tk := range f.Plot.Y.Tick.Marker.Ticks(f.Plot.Y.Min, f.Plot.Y.Max) {
		ids = append(ids, tk.Label)
	}
	bars := layersOf[*boxes](f)[0].Boxes
	if len(bars) != len(r.Findings) || len(ids) != len(r.Findings) {
		t.Fatalf("%d bars, %d labels for %d findings", len(bars), len(ids), len(r.Findings))
	}
	var texts []string
	for _, n := range layersOf[*notes](f) {
		for _, x := range n.Notes {
			texts = append(texts, x.Text)
		}
	}
	for i, x := range r.Findings {
		b := bars[i]
		near(t, x.ID+" bar ms", b.X1-b.X0, float64(x.WastedNS)/1e6, 1e-9)
		if b.Group != x.ID || ids[i] != x.ID || b.Fill != severityColor(x.Severity) {
			t.Errorf("bar %d: %+v, label %q for finding %s (%s)", i, b, ids[i], x.ID, x.Severity)
		}
		want := fmt.Sprintf("est. %.2fx", x.EstimatedSpeedup)
		if !slices.ContainsFunc(texts, func(s string) bool { return strings.HasSuffix(s, want) }) {
			t.Errorf("no label ends with %q: %q", want, texts)
		}
	}
	// Largest first, on top.
	if bars[0].Y0 < bars[len(bars)-1].Y0 {
		t.Error("the worst finding is not the top bar")
	}
}

func TestFindingsEmpty(t *testing.T) {
	r := inputBound(t)
	r.Findings = nil
	f, err := NewFindings(r)
	if err != nil {
		t.Fatal(err)
	}
	n := layersOf[*notes](f)
	if len(n) != 1 || !strings.HasPrefix(n[0].Notes[0].Text, "No findings") || len(f.Legend) != 0 {
		t.Errorf("empty findings plot: notes %+v, legend %v", n, f.Legend)
	}
}

func TestStepsDiffAndReplay(t *testing.T) {
	before := inputBound(t)
	after := *before
	after.Steps.MedianNS = before.Steps.MedianNS / 4
	after.Steps.BreakdownNS = index.Breakdown{index.Compute: 20 * ms, index.Other: 5 * ms}
	f, err := NewStepsDiff(before, &after)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(f.Plot.Title.Text, "step speedup 4.00x") {
		t.Errorf("title %q", f.Plot.Title.Text)
	}
	sum := map[string]float64{}
	for _, b := range layersOf[*boxes](f)[0].Boxes {
		sum[b.Group] += b.Y1 - b.Y0
	}
	near(t, "before bar", sum["before"], float64(before.Steps.BreakdownNS.Total())/1e6, 1e-9)
	near(t, "after bar", sum["after"], 25, 1e-9)

	g, err := NewReplay([]ReplayBar{{"observed", 100 * ms, 100 * ms}, {"pinned", 80 * ms, 75 * ms}, {"all", 0, 30 * ms}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, b := range layersOf[*boxes](g)[0].Boxes {
		got[b.Group+"/"+b.Label] = b.Y1 - b.Y0
	}
	want := map[string]float64{"observed/measured": 100, "observed/predicted": 100, "pinned/measured": 80, "pinned/predicted": 75, "all/predicted": 30}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("replay bars %v, want %v", got, want)
	}
	var texts []string
	for _, x := range layersOf[*notes](g)[0].Notes {
		texts = append(texts, x.Text)
	}
	if !slices.Contains(texts, "80.0 ms\n1.25x") {
		t.Errorf("replay labels %q lack the pinned speedup", texts)
	}
}

func TestNoTimeline(t *testing.T) {
	r := inputBound(t)
	r.Index, r.Timeline = nil, nil
	if _, err := NewTimeline(r); err != ErrNoTimeline {
		t.Errorf("timeline without a trace: %v", err)
	}
	if _, err := NewSteps(r); err != nil {
		t.Errorf("steps need only the JSON fields: %v", err)
	}
}
