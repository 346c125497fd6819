package report

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/index"
	"github.com/traceaudit/traceaudit/internal/units"
)

// ForAnalysis is the document of one trace analysed by itself: text,
// Markdown, JSON, HTML and the annotated Chrome trace; its report folder
// shows the trace's timeline, utilization, steps and findings.
func ForAnalysis(r *audit.Analysis) *Document {
	return &Document{value: r, formats: map[Format]renderer{
		Text:        asText(func(p *printer) { analyzeText(p, r) }),
		Markdown:    asMarkdown(func(p *printer, o Options) { analyzeMarkdown(p, r, o) }),
		JSON:        asJSON(r),
		HTML:        asHTML(func() htmlPage { return analyzeHTML(r) }),
		ChromeTrace: func(w io.Writer, _ Options) error { return chromeTrace(w, r) },
	}, plots: func(p Plotter) error { return p.Analysis(r) }}
}

// analyzeText writes the terminal report of a trace read by itself (a
// job's report is jobText): its rank note (aloneNote) where it is one rank
// of several, the verdict, then the step split, then findings by wasted
// time with fix, code and evidence, then what the input could not show.
func analyzeText(p *printer, r *audit.Analysis) {
	if !p.verbose {
		briefText(p, r)
		return
	}
	p.line("%s  (%s)", filepath.Base(r.File), r.Format)
	if n := aloneNote(r); n != "" {
		for _, l := range wrap(n, p.cols()) {
			p.line("%s", l)
		}
	}
	p.line("%s", r.Verdict)
	p.line("")
	writeStepsText(p, r)
	if len(r.Findings) == 0 {
		p.line("")
		p.line("no findings: nothing starves the GPU beyond the info threshold")
	}
	findingsText(p, r.Findings, windowStart(r), func(f analyze.Finding) string {
		return fmt.Sprintf("traceaudit replay --variants %s %s", strings.Join(f.VerifyWith, ","), r.File)
	})
	notObservableText(p, r)
}

// aloneNote says, for one rank of a larger job read by itself (a world
// size over 1, or MPI calls on its main thread), that what holds it back
// from outside needs the other ranks' traces, else "".
func aloneNote(r *audit.Analysis) string {
	if (r.WorldSize == nil || *r.WorldSize < 2) && len(r.MPICalls) > 0 {
		return fmt.Sprintf("one process of an MPI program, read alone: its MPI calls (%s) wait for ranks whose processes this trace "+
			"does not hold, so the time in them is set by those ranks; profile every rank (nsys profile ... under mpirun) to see which one",
			strings.Join(r.MPICalls, ", "))
	}
	if r.Rank == nil || r.WorldSize == nil || *r.WorldSize < 2 {
		return ""
	}
	return fmt.Sprintf("rank %d of %d, read alone: whether another rank holds this one back (a straggler, waits in collectives) "+
		"needs all %d ranks' traces (traceaudit analyze DIR, or traceaudit job rank*.json)", *r.Rank, *r.WorldSize, *r.WorldSize)
}

// notObservableText lists what the trace could not show.
func notObservableText(p *printer, r *audit.Analysis) {
	if len(r.NotObservable) == 0 {
		return
	}
	p.line("")
	p.line("not observable in this trace:")
	for _, n := range r.NotObservable {
		for j, l := range wrap(n.ID+": "+n.Why, p.cols()-2) {
			if j == 0 {
				p.line("  %s", l)
			} else {
				p.line("    %s", l)
			}
		}
	}
}

// analyzeMarkdown writes a report that reads well on GitHub: verdict,
// findings table, per-step split, each finding's fix and code, plots, what
// the trace could not show, and the command that produced it.
func analyzeMarkdown(p *printer, r *audit.Analysis, o Options) {
	p.line("## traceaudit: %s", mdEscape(filepath.Base(r.File)))
	p.line("")
	if n := aloneNote(r); n != "" {
		p.line("> %s", mdEscape(n))
		p.line("")
	}
	p.line("**%s**", mdEscape(r.Verdict))
	p.line("")
	s := r.Steps
	sum := stepsSummary(s, mdEscape)
	if HasComm(r) {
		p.line("%s. GPU busy in the steady state: kernels %s, collectives %s, copies %s.", sum, units.Pct(r.GPU.ComputeBusyShare), units.Pct(r.GPU.CommBusyShare), units.Pct(r.GPU.CopyBusyShare))
	} else {
		p.line("%s. GPU busy in the steady state: kernels %s, copies %s.", sum, units.Pct(r.GPU.ComputeBusyShare), units.Pct(r.GPU.CopyBusyShare))
	}
	if m := modelNote(r); m != "" {
		p.line("")
		p.line("%s.", mdEscape(m))
	}
	p.line("")
	// The causes first, by the gain of their fix (as the text has them),
	// then the symptom that sums them up.
	byWaste := r // the chart of wasted time keeps its order
	byGain := *r
	byGain.Findings = causesFirst(r.Findings)
	r = &byGain
	findingsTable(p, r)
	p.line("")
	writeStepTable(p, r)
	for _, c := range analyzeCharts(byWaste) {
		mermaidBlock(p, c)
	}
	for _, f := range r.Findings {
		findingMarkdown(p, f, windowStart(r), "traceaudit replay --variants "+strings.Join(f.VerifyWith, ",")+" "+filepath.Base(r.File))
	}
	mdPlots(p, o.Plots, true)
	if len(r.NotObservable) > 0 {
		p.line("")
		p.line("### Not observable in this trace")
		p.line("")
		for _, n := range r.NotObservable {
			p.line("- `%s`: %s", n.ID, mdEscape(n.Why))
		}
	}
	mdCommand(p, o.Command)
}

// findingsTable is the one-line-per-finding summary table.
func findingsTable(p *printer, r *audit.Analysis) {
	if len(r.Findings) == 0 {
		p.line("No findings: nothing starves the GPU beyond the info threshold.")
		return
	}
	p.line("| | finding | wasted per step | share | est. speedup | fix |")
	p.line("|---|---|---:|---:|---:|---|")
	for _, f := range r.Findings {
		p.line("| %s | `%s` %s | %s | %s | %s | %s |", severityIcon(f.Severity.String()), f.ID, mdEscape(f.Title),
			units.Dur(f.WastedNS), units.Pct(f.Share), units.Speedup(f.EstimatedSpeedup), mdEscape(firstSentence(f.Fix)))
	}
}

func analyzeHTML(r *audit.Analysis) htmlPage {
	pg := htmlPage{Title: "traceaudit: " + filepath.Base(r.File), Verdict: r.Verdict, Worst: worstClass(r)}
	pg.Sub = []string{fmt.Sprintf("%s (%s), a window of %s", r.File, r.Format, units.Dur(r.WindowNS))}
	if n := aloneNote(r); n != "" {
		pg.Sub = append(pg.Sub, n)
	}
	s := r.Steps
	lead := stepsSummary(s, func(s string) string { return s })
	comm := HasComm(r)
	busy := fmt.Sprintf("kernels %s, copies %s", units.Pct(r.GPU.ComputeBusyShare), units.Pct(r.GPU.CopyBusyShare))
	if comm {
		busy = fmt.Sprintf("kernels %s, collectives %s, copies %s", units.Pct(r.GPU.ComputeBusyShare), units.Pct(r.GPU.CommBusyShare), units.Pct(r.GPU.CopyBusyShare))
	}
	pg.Lead = []string{fmt.Sprintf("%s. GPU busy in the steady state: %s, any work %s.", lead, busy, units.Pct(r.GPU.BusyShare))}
	if m := modelNote(r); m != "" {
		pg.Lead = append(pg.Lead, m+".")
	}
	if len(r.Findings) > 0 {
		t := htmlTable{ID: "summary", Caption: "Causes, by what fixing each gains (the symptom last)",
			Head: []htmlHead{txt("severity"), txt("finding"), hnum("wasted per step"), hnum("share"), hnum("est. speedup"), txt("fix")}}
		for _, f := range causesFirst(r.Findings) {
			t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{{Sev: f.Severity.String()}, ct(f.ID + ": " + f.Title),
				cn(units.Dur(f.WastedNS)), cn(units.Pct(f.Share)), cn(units.Speedup(f.EstimatedSpeedup)), ct(firstSentence(f.Fix))}})
		}
		pg.Tables = append(pg.Tables, t)
	} else {
		pg.Lead = append(pg.Lead, "No findings: nothing starves the GPU beyond the info threshold.")
	}
	if len(s.PerStep) > 0 {
		t := htmlTable{ID: "steps", Caption: "Steps: where the time goes",
			Head: []htmlHead{txt("step"), hnum("length"), hnum("compute"), hnum("copy"), hnum("sync"), hnum("os"), hnum("data"), hnum("other")}}
		// cells are a split's columns, with comm after compute where the
		// run communicates.
		cells := func(b index.Breakdown) []htmlCell {
			var c []htmlCell
			for _, k := range shownBuckets(comm) {
				c = append(c, cn(bucketDur(r, k, b[k])))
			}
			return c
		}
		if comm {
			t.Head = slices.Insert(t.Head, 3, hnum("comm"))
		}
		for i, st := range s.PerStep {
			t.Rows = append(t.Rows, htmlRow{Cells: append([]htmlCell{ct(stepLabel(st, i)), cn(units.Dur(st.EndNS - st.StartNS))}, cells(st.BreakdownNS)...)})
		}
		b := s.BreakdownNS
		t.Rows = append(t.Rows, htmlRow{Class: "total", Cells: append([]htmlCell{ct("mean steady step"), cn(units.Dur(b.Total()))}, cells(b)...)})
		pg.Tables = append(pg.Tables, t)
	}
	origin := windowStart(r)
	for _, f := range causesFirst(r.Findings) {
		pg.Findings = append(pg.Findings, findingHTML(f, origin, "traceaudit replay --variants "+strings.Join(f.VerifyWith, ",")+" "+filepath.Base(r.File)))
	}
	pg.NotesTitle = "Not observable in this trace"
	for _, n := range r.NotObservable {
		pg.Notes = append(pg.Notes, htmlNote{ID: n.ID, Text: n.Why})
	}
	return pg
}

// worstClass is the CSS class of the report's worst severity.
func worstClass(r *audit.Analysis) string {
	if m := MaxSeverity(r); m > 0 {
		return m.String()
	}
	return ""
}

// analyzeCharts are the Mermaid charts of an analyze report: where the
// mean steady step goes (a pie of the two-clock split), and the wasted
// time per step of each finding that wastes any.
func analyzeCharts(r *audit.Analysis) [][]string {
	var charts [][]string
	b := r.Steps.BreakdownNS
	step := b.Total()
	if step > 0 {
		_, div := timeUnit(step)
		labels := make([]string, index.NumBuckets)
		values := make([]float64, index.NumBuckets)
		for k := range index.NumBuckets {
			labels[k] = k.String() + " " + units.Dur(b[k])
			values[k] = float64(b[k]) / div
		}
		charts = append(charts, mermaidPie("Where the mean steady step goes ("+units.Dur(step)+")", labels, values, bucketColors))
	}
	var ids []string
	var wasted []int64
	var top int64
	for _, f := range r.Findings {
		if f.WastedNS > 0 {
			ids = append(ids, f.ID)
			wasted = append(wasted, f.WastedNS)
			top = max(top, f.WastedNS)
		}
	}
	if len(ids) > 0 {
		unit, div := timeUnit(top)
		values := make([]float64, len(wasted))
		for i, w := range wasted {
			values[i] = float64(w) / div
		}
		charts = append(charts, mermaidBars("Wasted time per step by finding ("+unit+")", unit+" per step", ids, values, true))
	}
	return charts
}

// windowStart is the trace's first timestamp, from which evidence times
// are shown.
func windowStart(r *audit.Analysis) int64 { return r.WindowStartNS }

// MaxSeverity is the highest severity among the reports' findings.
func MaxSeverity(reports ...*audit.Analysis) analyze.Severity {
	m := analyze.SeverityNone
	for _, r := range reports {
		for _, f := range r.Findings {
			m = max(m, f.Severity)
		}
	}
	return m
}
