package analyze

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/traceaudit/traceaudit/timeline"
)

// Run runs analyzers concurrently; its result is the sequential one: one
// analyzer's findings in the order it reported them, what requires a failed
// or skipped analyzer never runs, and the error returned is the first in
// the run order, whichever finished first.
func TestRunIsSequentialInEffect(t *testing.T) {
	tl := &timeline.Timeline{}
	var ranDependent atomic.Bool
	report := func(id string, delay time.Duration, titles ...string) *Analyzer {
		return &Analyzer{ID: id, Doc: id, Run: func(p *Pass) (any, error) {
			time.Sleep(delay)
			for _, title := range titles {
				p.AddFinding(Finding{Title: title, WastedNS: 5, Share: 0.5})
			}
			return id + " result", nil
		}}
	}
	slow := report("a-slow", 30*time.Millisecond, "first", "second", "third")
	fast := report("b-fast", 0, "only")
	uses := &Analyzer{ID: "c-uses", Doc: "c", Requires: []*Analyzer{slow}, Run: func(p *Pass) (any, error) {
		if p.ResultOf[slow] != "a-slow result" {
			return nil, errors.New("requirement's result missing")
		}
		return nil, nil
	}}
	for range 20 {
		res, err := Run(tl, []*Analyzer{slow, fast, uses}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range res.Findings {
			got = append(got, f.ID+":"+f.Title)
		}
		if want := "a-slow:first a-slow:second a-slow:third b-fast:only"; strings.Join(got, " ") != want {
			t.Fatalf("findings %v, want %s", got, want)
		}
	}

	failSlow := &Analyzer{ID: "a-fails", Doc: "a", Run: func(*Pass) (any, error) {
		time.Sleep(30 * time.Millisecond)
		return nil, errors.New("slow failure")
	}}
	failFast := &Analyzer{ID: "b-fails", Doc: "b", Run: func(*Pass) (any, error) { return nil, errors.New("fast failure") }}
	dependent := &Analyzer{ID: "c-after", Doc: "c", Requires: []*Analyzer{failFast}, Run: func(*Pass) (any, error) {
		ranDependent.Store(true)
		return nil, nil
	}}
	for range 20 {
		_, err := Run(tl, []*Analyzer{failSlow, failFast, dependent}, nil)
		if err == nil || err.Error() != "a-fails: slow failure" {
			t.Fatalf("error %v, want a-fails' (the first in run order)", err)
		}
	}
	if ranDependent.Load() {
		t.Error("an analyzer ran although what it requires failed")
	}
}
