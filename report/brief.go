package report

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/model"
	"github.com/traceaudit/traceaudit/internal/units"
)

// Limits of the brief text: a screen (design: at most 40 lines a trace).
const (
	briefCauses   = 6
	briefFixLines = 6
	briefCode     = 8
)

// symptomID is the finding that sums up idle time whose causes the others
// name: the brief lists it only when nothing else explains the step.
const symptomID = "gpu-idle"

// briefText writes the answer first, in a screen: the verdict, one line
// per root cause with its share of the step and the gain of fixing it,
// the first fix with its code, one evidence line per cause, what the
// trace cannot show, and where the rest is (--verbose).
func briefText(p *printer, r *audit.Analysis) {
	p.line("%s  (%s)", filepath.Base(r.File), r.Format)
	if n := aloneNote(r); n != "" {
		for _, l := range wrap(n, p.cols()) {
			p.line("%s", l)
		}
	}
	briefBody(p, r)
}

// briefBody is the brief after the trace's name and notes: the verdict,
// the steps, the causes, the first fix, the evidence and what the trace
// cannot show.
func briefBody(p *printer, r *audit.Analysis) {
	for _, l := range wrap(r.Verdict, p.cols()) {
		p.line("%s", l)
	}
	for _, l := range wrap("steps: "+stepsSummary(r.Steps, func(s string) string { return s }), p.cols()) {
		p.line("%s", l)
	}
	causes := rootCauses(r.Findings)
	if len(causes) == 0 {
		p.line("")
		p.line("no findings: nothing starves the GPU beyond the info threshold")
		briefUnobservable(p, r)
		return
	}
	p.line("")
	for _, l := range wrap(fmt.Sprintf("causes: share of the step, and the step's speedup if fixed (%s)", estimateOrigin(r.Model)), p.cols()) {
		p.line("%s", l)
	}
	shown := causes[:min(len(causes), briefCauses)]
	for _, f := range shown {
		sev := p.paint(fmt.Sprintf("%-7s", strings.ToUpper(f.Severity.String())), severityColor(f.Severity.String()))
		p.line("  %s %-20s %6s  %s", sev, f.ID, units.Pct(f.Share), gain(f))
	}
	if more := len(causes) - len(shown); more > 0 {
		p.line("  and %d more (--verbose)", more)
	}
	if a, ok := r.Model.Fix(model.All); ok && r.Model.Faithful() && len(causes) > 1 {
		p.line("  %-28s %6s  %s", "all of them together", "", units.Speedup(a.Speedup))
	}
	top := causes[0]
	p.line("")
	p.line("fix first: %s", top.ID)
	fix := wrap(top.Fix, p.cols()-2)
	for i, l := range fix {
		if i == briefFixLines {
			p.line("  ... (--verbose for the whole fix)")
			break
		}
		p.line("  %s", l)
	}
	if top.Code != "" {
		code := strings.Split(top.Code, "\n")
		for i, l := range code {
			if i == briefCode {
				p.line("    ...")
				break
			}
			p.line("    %s", fitLine(l, textWidth-4)) // code is cut at 100 columns only: it is copied, not read
		}
	}
	p.line("")
	p.line("evidence (the worst instance of each; time from the start of the trace):")
	for _, f := range shown {
		if len(f.Evidence) == 0 {
			continue
		}
		e := f.Evidence[0]
		p.line("%s", fitLine(fmt.Sprintf("  %-20s %s  %s", f.ID, at(e.StartNS-windowStart(r)), e.What), p.cols()))
	}
	briefUnobservable(p, r)
	p.line("")
	p.line("--verbose for the evidence and every finding")
}

// rootCauses are the findings that name a cause, the symptom left out
// where another finding explains it, ranked by the gain of their fix
// (the step model's), then by the time they waste.
func rootCauses(fs []analyze.Finding) []analyze.Finding {
	var out []analyze.Finding
	for _, f := range fs {
		if f.ID == symptomID && len(fs) > 1 {
			continue
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b analyze.Finding) int {
		if c := cmp.Compare(b.EstimatedSpeedup, a.EstimatedSpeedup); c != 0 {
			return c
		}
		return cmp.Compare(b.WastedNS, a.WastedNS)
	})
	return out
}

// causesFirst is fs with the root causes first, by the gain of their
// fix, and the symptom last.
func causesFirst(fs []analyze.Finding) []analyze.Finding {
	out := rootCauses(fs)
	for _, f := range fs {
		if f.ID == symptomID && len(out) < len(fs) {
			out = append(out, f)
		}
	}
	return out
}

// gain is a finding's estimate in the brief: "5.12x", "at most 1.87x"
// for a bound, "1.00x, seen in one step" for a one-off.
func gain(f analyze.Finding) string {
	s := units.Speedup(f.EstimatedSpeedup)
	if f.EstimateSource == "bound" {
		s = "at most " + s
	}
	if f.OneOff != "" {
		s += ", seen in one step only"
	}
	return s
}

// estimateOrigin says where the brief's estimates come from.
func estimateOrigin(m *model.Model) string {
	switch {
	case m == nil:
		return "bounds: no steady loop with a main thread to simulate"
	case !m.Faithful():
		return fmt.Sprintf("bounds: the step model does not reproduce the trace, fidelity %.2f", m.Fidelity)
	}
	return fmt.Sprintf("the step model, fidelity %.2f", m.Fidelity)
}

// briefUnobservable names, one line each, what the trace could not show:
// analyzers that cannot judge for the same reason share a line.
func briefUnobservable(p *printer, r *audit.Analysis) {
	if len(r.NotObservable) == 0 {
		return
	}
	p.line("")
	p.line("not observable in this trace:")
	var order []string
	ids := map[string][]string{}
	for _, n := range r.NotObservable {
		if ids[n.Why] == nil {
			order = append(order, n.Why)
		}
		ids[n.Why] = append(ids[n.Why], n.ID)
	}
	for _, why := range order {
		p.line("%s", fitLine("  "+strings.Join(ids[why], ", ")+": "+why, p.cols()))
	}
}

// fitLine cuts s to width columns, ending it with "…" when cut.
func fitLine(s string, width int) string {
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	return string(r[:width-1]) + "…"
}
