package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"
)

// report prints the results as a Markdown table, then the goals of the
// performance issue checked against them.
func report(w io.Writer, m *meter, prev []Result) {
	old := map[string]Result{}
	for _, p := range prev {
		old[p.Name+"|"+p.Input] = p
	}
	fmt.Fprintf(w, "traceaudit %s, %s; %d cores (%s/%s), %s; %d runs of each command, round robin; load average %.2f before, %.2f after\n",
		m.commit, m.started.UTC().Format(time.DateOnly), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), m.runs, m.load[0], m.load[1])
	if m.baseline != "" {
		fmt.Fprintf(w, "baseline: %s\n", m.baseline)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| input | size | events/rows | command | wall (median) | min | max | CPU (median) | MB/s | events/s | peak RSS | RSS / size | vs previous run |")
	fmt.Fprintln(w, "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range m.results {
		mb := float64(r.Bytes) / 1e6
		delta := "-"
		if p, ok := old[r.Name+"|"+r.Input]; ok && p.WallS > 0 && r.WallS > 0 {
			delta = fmt.Sprintf("wall %+.0f %%, RSS %+.0f %%", (r.WallS/p.WallS-1)*100, (float64(r.PeakRSS)/float64(max(p.PeakRSS, 1))-1)*100)
		}
		status := ""
		if r.Err != "" {
			status = " (failed: " + strings.TrimSpace(r.Err) + ")"
		}
		wall := max(r.WallS, 1e-9)
		fmt.Fprintf(w, "| %s | %.0f MB | %d | %s%s | %.2f s | %.2f s | %.2f s | %.2f s | %.0f | %s | %.0f MB | %.2f | %s |\n",
			r.Input, mb, r.Events, r.Name, status, r.WallS, r.MinWallS, r.MaxWallS, r.CPUS, mb/wall, perSecond(float64(r.Events)/wall),
			float64(r.PeakRSS)/1e6, float64(r.PeakRSS)/float64(max(r.Bytes, 1)), delta)
	}
	fmt.Fprintln(w)
	for _, line := range goals(m.results, m.model) {
		fmt.Fprintln(w, "- "+line)
	}
}

// goals checks the results against the performance issue's goals.
func goals(rs []*Result, model []ModelCost) []string {
	find := func(name, in string) *Result {
		for _, r := range rs {
			if r.Name == name && r.Input == in && r.Err == "" && r.WallS > 0 {
				return r
			}
		}
		return nil
	}
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	var out []string
	if f, one := find("traceaudit analyze", rankFolder), find("traceaudit analyze", rankLargest); f != nil && one != nil {
		fast, slow := float64(f.Bytes)/f.WallS/1e6, float64(one.Bytes)/one.WallS/1e6
		out = append(out, fmt.Sprintf("%d-rank folder (%.0f MB): analyze %.2f s, %.0f MB/s against %.0f MB/s for its largest rank alone (%.0f MB); goal: the single file's MB/s: %s. Peak RSS %.0f MB.",
			rankCount, float64(f.Bytes)/1e6, f.WallS, fast, slow, float64(one.Bytes)/1e6, mark(fast >= slow), float64(f.PeakRSS)/1e6))
	}
	if a, py := find("traceaudit analyze", "chrome-250MB"), find(pyJSONLoad, "chrome-250MB"); a != nil && py != nil {
		x := py.WallS / a.WallS
		rss := float64(a.PeakRSS) / float64(a.Bytes)
		out = append(out, fmt.Sprintf("Chrome 250 MB: analyze %.2f s (%.2f-%.2f) is %.1fx python's json.load (%.2f s), medians; goal 60x: %s. Peak RSS %.2fx the file; goal at most 0.5x: %s.",
			a.WallS, a.MinWallS, a.MaxWallS, x, py.WallS, mark(x >= 60), rss, mark(rss <= 0.5)))
	}
	if big, a := find("traceaudit analyze", "chrome-1GB"), find("traceaudit analyze", "chrome-250MB"); big != nil && a != nil {
		x := big.WallS / a.WallS
		out = append(out, fmt.Sprintf("Chrome 1 GB: analyze %.2f s, %.2fx the 250 MB trace's time for %.1fx its bytes; goal at most 4x: %s.",
			big.WallS, x, float64(big.Bytes)/float64(a.Bytes), mark(x <= 4)))
	}
	if gz, a := find("traceaudit analyze", "chrome-250MB.gz"), find("traceaudit analyze", "chrome-250MB"); gz != nil && a != nil {
		out = append(out, fmt.Sprintf("Chrome 250 MB as .json.gz: analyze %.2f s, %+.2f s (%+.0f %%) against the uncompressed file; goal within 10 %%: %s.",
			gz.WallS, gz.WallS-a.WallS, (gz.WallS/a.WallS-1)*100, mark(gz.WallS <= 1.1*a.WallS)))
	}
	if a, py := find("traceaudit analyze", "nsys-2M-rows"), find(pyFetch, "nsys-2M-rows"); a != nil && py != nil {
		x := py.WallS / a.WallS
		rss := float64(a.PeakRSS) / float64(a.Bytes)
		out = append(out, fmt.Sprintf("nsys 2 M rows: analyze %.2f s (%.2f-%.2f) is %.2fx python's row fetch (%.2f s), medians; goal 4x: %s. Peak RSS %.2fx the file; goal at most 1.2x: %s.",
			a.WallS, a.MinWallS, a.MaxWallS, x, py.WallS, mark(x >= 4), rss, mark(rss <= 1.2)))
	}
	for _, c := range model {
		a := find("traceaudit analyze", c.Input)
		if a == nil {
			continue
		}
		add := c.WithS - c.WithoutS
		out = append(out, fmt.Sprintf("%s: the step model adds %.3f s to the analysis (%.3f s with it, %.3f s without, in one process, the timeline read once), %.1f %% of analyze's %.2f s; goal at most 10 %%: %s.",
			c.Input, add, c.WithS, c.WithoutS, add/a.WallS*100, a.WallS, mark(add <= 0.1*a.WallS)))
	}
	var growth []string
	for _, n := range jobRanks {
		if j := find("traceaudit job", jobInput(n)); j != nil {
			growth = append(growth, fmt.Sprintf("%d ranks %.2f s, %.0f MB", n, j.WallS, float64(j.PeakRSS)/1e6))
		}
	}
	if len(growth) > 0 {
		out = append(out, "traceaudit job over per-rank analyses: "+strings.Join(growth, "; ")+".")
	}
	if j := find("traceaudit job", jobInput(jobRanks[len(jobRanks)-1])); j != nil {
		out = append(out, fmt.Sprintf("%d-rank job: traceaudit job %.2f s, peak RSS %.0f MB; goal at most 10 s and 1 GB: %s.",
			jobRanks[len(jobRanks)-1], j.WallS, float64(j.PeakRSS)/1e6, mark(j.WallS <= 10 && j.PeakRSS <= 1e9)))
	}
	for _, r := range rs {
		if r.Name != "traceaudit analyze" || r.Err != "" || r.WallS == 0 {
			continue
		}
		if b := find("baseline analyze", r.Input); b != nil {
			out = append(out, fmt.Sprintf("%s: analyze %.2f s against the baseline's %.2f s (%+.0f %%), peak RSS %.0f MB against %.0f MB, CPU %.2f s against %.2f s.",
				r.Input, r.WallS, b.WallS, (r.WallS/b.WallS-1)*100, float64(r.PeakRSS)/1e6, float64(b.PeakRSS)/1e6, r.CPUS, b.CPUS))
		}
	}
	return out
}

// perSecond formats a rate with a k or M suffix.
func perSecond(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0f k", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
