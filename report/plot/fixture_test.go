package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/internal/testing/testaudit"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// load analyzes a real trace.
var load = testaudit.File

// checkFiles checks that w's PNG decodes at 1200 x 600 px or more and its
// SVG is well-formed XML with an <svg> root.
func checkFiles(t *testing.T, dir string, w Written) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, w.PNG))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", w.PNG, err)
	}
	if s := img.Bounds().Size(); s.X < 1200 || s.Y < 600 {
		t.Errorf("%s is %v px, want at least 1200 x 600", w.PNG, s)
	}
	b, err = os.ReadFile(filepath.Join(dir, w.SVG))
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", w.SVG, err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q, want svg", w.SVG, root)
	}
	if w.Title == "" || w.Caption == "" {
		t.Errorf("%s: no title or caption: %+v", w.Name, w)
	}
}

// writeChecked writes f into dir and checks its files.
func writeChecked(t *testing.T, dir string, f *Figure) {
	t.Helper()
	w, err := f.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, w)
}

func TestAnalyzeFiguresRealTrace(t *testing.T) {
	r := load(t, testfix.Project("r0_baseline.pt.trace.json.gz"))
	dir := t.TempDir()
	figs, err := Analyze(r)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
		writeChecked(t, dir, f)
	}
	if want := []string{"timeline", "utilization", "steps", "findings"}; !slices.Equal(names, want) {
		t.Errorf("built %v, want %v", names, want)
	}
	d, err := NewStepsDiff(r, r)
	if err != nil {
		t.Fatal(err)
	}
	writeChecked(t, dir, d)
	rp, err := NewReplay([]ReplayBar{{"observed", r.Steps.MedianNS, r.Steps.MedianNS}, {"all", r.Steps.MedianNS / 5, r.Steps.MedianNS / 6}})
	if err != nil {
		t.Fatal(err)
	}
	writeChecked(t, dir, rp)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 12 {
		t.Errorf("%d files in the folder, want 12", len(entries))
	}

	// The r0 trace: the main thread, the autograd thread that launches the
	// backward kernels, and the one stream.
	f, err := NewTimeline(r)
	if err != nil {
		t.Fatal(err)
	}
	var lanes []string
	for _, tk := range f.Plot.Y.Tick.Marker.Ticks(f.Plot.Y.Min, f.Plot.Y.Max) {
		lanes = append(lanes, tk.Label)
	}
	if want := []string{"main thread (python3)", "thread 692 (pt_autograd_0)", "gpu0/stream7"}; !slices.Equal(lanes, want) {
		t.Errorf("r0 lanes %q, want %q", lanes, want)
	}
}

// TestDeterministic renders each figure of two separately loaded reports
// of one trace: same input, same bytes, PNG and SVG.
func TestDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("renders whole traces; skipped with -short")
	}
	path := testfix.Project("r0_baseline.pt.trace.json.gz")
	a, b := load(t, path), load(t, path)
	for _, build := range []func(*audit.Analysis) (*Figure, error){NewTimeline, NewUtilization, NewSteps, NewFindings} {
		fa, err := build(a)
		if err != nil {
			t.Fatal(err)
		}
		fb, _ := build(b)
		for _, render := range []func(*Figure) ([]byte, error){(*Figure).PNG, (*Figure).SVG} {
			x, err := render(fa)
			if err != nil {
				t.Fatal(err)
			}
			y, _ := render(fb)
			if !bytes.Equal(x, y) {
				t.Errorf("%s: two renders of the same trace differ", fa.Name)
			}
		}
	}
}

// TestSharedH200Traces draws the nsys captures of the shared corpus, which
// have more threads and streams than the Chrome traces.
func TestSharedH200Traces(t *testing.T) {
	if testing.Short() {
		t.Skip("renders whole traces; skipped with -short")
	}
	for _, name := range []string{"r0_baseline.nsys.sqlite", "b0_pageable_sync.nsys.sqlite", "r3_streams.nsys.sqlite"} {
		t.Run(name, func(t *testing.T) {
			r := load(t, testfix.Shared(t, "h200", name))
			dir := t.TempDir()
			figs, err := Analyze(r)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range figs {
				writeChecked(t, dir, f)
			}
		})
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 190, []string{"0", "25", "50", "75", "100", "125", "150", "175"}},
		{157, 463, []string{"200", "250", "300", "350", "400", "450"}},
		{0, 1.6, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0", "1.2", "1.4", "1.6"}},
		{-0.6, 2.4, []string{"-0.5", "0.0", "0.5", "1.0", "1.5", "2.0"}},
		{0, 0.0019, []string{"0.00000", "0.00025", "0.00050", "0.00075", "0.00100", "0.00125", "0.00150", "0.00175"}},
	} {
		var got []string
		for _, tk := range (niceTicks{N: 8}).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("ticks(%v, %v) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}
