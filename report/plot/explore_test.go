package plot

import (
	"fmt"
	"os"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/ingest"
	"github.com/traceaudit/traceaudit/timeline"
)

func TestExplore(t *testing.T) {
	p := os.Getenv("EXPLORE")
	if p == "" {
		t.Skip()
	}
	tl, err := ingest.Open(p, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := audit.Run(tl, analyze.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if d := os.Getenv("EXPLORE_OUT"); d != "" {
		os.MkdirAll(d, 0o755)
		w, err := WriteAll(d, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range w {
			fmt.Printf("%s: %s\n   %s\n", x.Name, x.Title, x.Caption)
		}
		return
	}
	ix := r.Index
	if os.Getenv("EXPLORE_LAST") != "" {
		last := ix.Steps[len(ix.Steps)-1]
		var after, n int64
		for i := range tl.Events {
			e := &tl.Events[i]
			if e.Kind == timeline.KindKernel && e.End > last.End {
				after += e.End - max(e.Start, last.End)
				n++
			}
		}
		lo, hi := tl.Span()
		fmt.Println("last step", last.Start-lo, last.End-lo, "kernels after end:", n, after, "trace end", hi-lo)
		return
	}
	lo, hi := tl.Span()
	fmt.Println("span", lo, hi, "main", ix.Main, ix.Label(ix.Main), "devices", ix.Devices)
	for _, s := range ix.Steps {
		fmt.Println("step", s.Name, s.Start-lo, s.Dur(), s.Startup)
	}
	type cnt struct{ n [20]int }
	for ti, tr := range tl.Tracks {
		var c [int(timeline.KindMarker) + 1]int
		linked := 0
		for _, i := range tr.Events {
			e := &tl.Events[i]
			if !ix.SteadySet.Contains(e.Start) {
				continue
			}
			c[e.Kind]++
			if e.Kind == timeline.KindAPI && e.Link >= 0 {
				linked++
			}
		}
		fmt.Println(ti, tr.Label(), c, "linked", linked)
	}
	names := map[string]int{}
	for i := range tl.Events {
		e := &tl.Events[i]
		if (e.Kind == timeline.KindRange || e.Kind == timeline.KindOS) && ix.SteadySet.Contains(e.Start) {
			names[e.Kind.String()+" "+e.Range.String()+" "+tl.Name(e.Name)]++
		}
	}
	for k, v := range names {
		if v > 0 {
			fmt.Println(v, k)
		}
	}
}
