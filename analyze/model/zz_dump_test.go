package model_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/internal/testing/testaudit"
)

func TestZZDump(t *testing.T) {
	f := os.Getenv("ZZ_TRACE")
	if f == "" {
		t.Skip()
	}
	cfg := analyze.DefaultConfig()
	cfg.KeepSchedules = true
	if s := os.Getenv("ZZ_STEP"); s != "" {
		d, _ := time.ParseDuration(s)
		cfg.UnprofiledStepNS = int64(d)
	}
	a := testaudit.FileWith(t, f, cfg)
	for _, n := range []string{model.Observed, os.Getenv("ZZ_FIX")} {
		s, ok := a.Model.Schedule(n)
		if !ok {
			t.Fatalf("no %s", n)
		}
		fmt.Printf("== %s steps %d step %.3f ms threads %d work %d pool %+v\n", n, s.Steps, float64(s.StepNS)/1e6, len(s.Threads), len(s.Work), s.Pool)
		var gpu [3]int64
		var fresh int
		for _, w := range s.Work {
			gpu[w.Kind] += w.DurNS
			if w.Fresh {
				fresh++
			}
		}
		fmt.Printf("  gpu kern %.2f htod %.2f dtoh %.2f ms fresh %d\n", float64(gpu[0])/1e6/float64(s.Steps), float64(gpu[1])/1e6/float64(s.Steps), float64(gpu[2])/1e6/float64(s.Steps), fresh)
		for i, th := range s.Threads {
			var gap, host int64
			kinds := map[model.CallKind]int{}
			for _, c := range th.Calls {
				gap += c.GapNS
				host += c.HostNS
				kinds[c.Kind]++
			}
			fmt.Printf("  thread %d calls %d gap %.2f host %.2f tail %.2f ms per step; kinds %v\n", i, len(th.Calls), float64(gap)/1e6/float64(s.Steps), float64(host)/1e6/float64(s.Steps), float64(th.TailNS)/1e6, kinds)
		}
		if os.Getenv("ZZ_V") != "" {
			for _, c := range s.Threads[s.Main].Calls {
				ws := ""
				for _, w := range c.Work {
					ww := s.Work[w]
					ws += fmt.Sprintf(" [k%d %.3fms %dB f%v]", ww.Kind, float64(ww.DurNS)/1e6, ww.Bytes, ww.Fresh)
				}
				fmt.Printf("    gap %.3f kind %d host %.3f wait %d ret %.3f%s\n", float64(c.GapNS)/1e6, c.Kind, float64(c.HostNS)/1e6, c.Wait, float64(c.RetNS)/1e6, ws)
			}
		}
	}
}

func TestZZWork(t *testing.T) {
	f := os.Getenv("ZZ_TRACE")
	if f == "" {
		t.Skip()
	}
	cfg := analyze.DefaultConfig()
	cfg.KeepSchedules = true
	a := testaudit.FileWith(t, f, cfg)
	s, _ := a.Model.Schedule(os.Getenv("ZZ_FIX"))
	var big, n int
	var sum int64
	for _, w := range s.Work {
		if w.DurNS > 1e6 {
			big++
			fmt.Printf("  work kind %d stream %d dur %.3f bytes %d pinned %v fresh %v\n", w.Kind, w.Stream, float64(w.DurNS)/1e6, w.Bytes, w.Pinned, w.Fresh)
		}
		n++
		sum += w.DurNS
	}
	fmt.Println("big", big, "n", n, "sum ms", float64(sum)/1e6, "steps", s.Steps, "step", s.StepNS)
}

func TestZZCalls(t *testing.T) {
	f := os.Getenv("ZZ_TRACE")
	if f == "" {
		t.Skip()
	}
	cfg := analyze.DefaultConfig()
	cfg.KeepSchedules = true
	a := testaudit.FileWith(t, f, cfg)
	s, _ := a.Model.Schedule(os.Getenv("ZZ_FIX"))
	owner := map[int32]string{}
	for ti, th := range s.Threads {
		var at int64
		for ci, c := range th.Calls {
			at += c.GapNS
			for _, w := range c.Work {
				owner[w] = fmt.Sprintf("t%d c%d at %.1f anchor %d", ti, ci, float64(at)/1e6, c.Anchor)
			}
			at += c.HostNS
		}
	}
	for i, w := range s.Work {
		if w.DurNS > 1e6 {
			fmt.Printf("work %d kind %d dur %.2f after %d lat %.3f by %s\n", i, w.Kind, float64(w.DurNS)/1e6, w.After, float64(w.LatNS)/1e6, owner[int32(i)])
		}
	}
}
