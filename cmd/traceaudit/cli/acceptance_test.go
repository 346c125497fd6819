package cli

import (
	"encoding/json"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

type verdict struct {
	Findings []struct {
		ID       string `json:"id"`
		Severity string `json:"severity"`
	} `json:"findings"`
	NotObservable []struct {
		ID  string `json:"id"`
		Why string `json:"why"`
	} `json:"not_observable"`
}

func analyzeJSON(t *testing.T, path string) verdict {
	t.Helper()
	out, errOut, code := run(t, "analyze", "--format", "json", path)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", path, code, errOut)
	}
	var v verdict
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// atLeastWarning says whether id is reported at warning or error.
func (v verdict) atLeastWarning(id string) bool {
	for _, f := range v.Findings {
		if f.ID == id {
			return f.Severity == "warning" || f.Severity == "error"
		}
	}
	return false
}

func (v verdict) reported(id string) bool {
	for _, f := range v.Findings {
		if f.ID == id {
			return true
		}
	}
	return false
}

func (v verdict) notObservable(id string) bool {
	for _, n := range v.NotObservable {
		if n.ID == id {
			return n.Why != ""
		}
	}
	return false
}

// TestExpertVerdictsOnRealTraces checks that the analysis names the causes a
// human expert names on real captures, and stays quiet on healthy ones.
func TestExpertVerdictsOnRealTraces(t *testing.T) {
	h200 := func(name string) string { return testfix.Shared(t, "h200", name) }
	chrome := func(name string) string { return testfix.Shared(t, "chrome", name) }
	type want struct {
		path          string
		warn, notWarn []string
		absent        []string
		unobservable  []string
	}
	cases := []want{
		{path: h200("r0_baseline.nsys.sqlite"), warn: []string{"dataloader-wait", "sync-memcpy", "gpu-idle"}},
		{path: h200("r0_baseline.pt.trace.json.gz"), warn: []string{"dataloader-wait", "sync-memcpy", "gpu-idle"}, unobservable: []string{"munmap-stall"}},
		{path: h200("b0_pageable_sync.nsys.sqlite"), warn: []string{"sync-memcpy", "copy-compute-serial"}, absent: []string{"dataloader-wait"}},
		{path: h200("b0_pageable_sync.pt.trace.json.gz"), warn: []string{"sync-memcpy", "copy-compute-serial"}, absent: []string{"dataloader-wait"}},
		{path: h200("r3_streams.nsys.sqlite"), notWarn: []string{"sync-memcpy", "copy-compute-serial", "dataloader-wait"}},
		{path: h200("r3_streams.pt.trace.json.gz"), notWarn: []string{"sync-memcpy", "copy-compute-serial", "dataloader-wait"}},
		{path: chrome("kineto_resnet50_nw0_v100_2021-01_oldformat.pt.trace.json.gz"), warn: []string{"dataloader-wait"}},
		{path: chrome("kineto_resnet50_nw0_v100_2021-06.pt.trace.json.gz"), warn: []string{"dataloader-wait"}},
		{path: chrome("kineto_resnet50_nw4_v100_2021-01_oldformat.pt.trace.json.gz"), notWarn: []string{"dataloader-wait"}},
		{path: chrome("kineto_resnet50_nw4_v100_2021-06.pt.trace.json.gz"), notWarn: []string{"dataloader-wait"}},
		{path: testfix.Project("m0_munmap.nsys.sqlite"), warn: []string{"munmap-stall", "sync-memcpy"}},
		{path: testfix.Project("m0_munmap.pt.trace.json.gz"), warn: []string{"sync-memcpy"}, unobservable: []string{"munmap-stall"}},
		{path: testfix.Project("m1_reuse.nsys.sqlite"), notWarn: []string{"munmap-stall", "sync-memcpy", "dataloader-wait"}},
		// An HDF5 data set read on the main thread, its pages dropped from
		// the cache each epoch, and the same loop with the file cached.
		{path: testfix.Project("storage/s0_cold.nsys.sqlite"), warn: []string{"storage-read"}},
		{path: testfix.Project("storage/s1_warm.nsys.sqlite"), absent: []string{"storage-read"}},
		{path: testfix.Project("storage/s0_cold.pt.trace.json.gz"), unobservable: []string{"storage-read"}},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			v := analyzeJSON(t, c.path)
			for _, id := range c.warn {
				if !v.atLeastWarning(id) {
					t.Errorf("%s should be at warning or above: %+v", id, v.Findings)
				}
			}
			for _, id := range c.notWarn {
				if v.atLeastWarning(id) {
					t.Errorf("%s should be below warning: %+v", id, v.Findings)
				}
			}
			for _, id := range c.absent {
				if v.reported(id) {
					t.Errorf("%s should not be reported: %+v", id, v.Findings)
				}
			}
			for _, id := range c.unobservable {
				if !v.notObservable(id) || v.reported(id) {
					t.Errorf("%s should be not observable: %+v", id, v.NotObservable)
				}
			}
		})
	}
}

// TestEveryFixtureAnalyzes runs analyze on every real trace: no error, a
// verdict, and JSON that parses.
func TestEveryFixtureAnalyzes(t *testing.T) {
	var files []string
	files = append(files, testfix.SharedGlob(t, "chrome", "*.json.gz")...)
	files = append(files, testfix.SharedGlob(t, "h200", "*.json.gz")...)
	files = append(files, testfix.SharedGlob(t, "nsys", "*.sqlite")...)
	files = append(files, testfix.SharedGlob(t, "h200", "*.sqlite")...)
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			out, errOut, code := run(t, "analyze", "--format", "json", f)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var r struct {
				Verdict string `json:"verdict"`
				Job     *struct {
					Verdict string `json:"verdict"`
				} `json:"job"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if r.Job != nil { // an export of several GPU processes is a job
				r.Verdict = r.Job.Verdict
			}
			if r.Verdict == "" {
				t.Fatalf("no verdict")
			}
		})
	}
}
