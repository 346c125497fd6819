// Package expect holds the expert reading of every real trace the project
// tests on (expectations.txt beside this file) and checks analyses against
// it: the verdict class, the findings an expert expects and those an
// expert must not see, each with a one-line reason.
//
// The file is a list of entries, one per trace:
//
//	trace shared/h200/r0_baseline.nsys.sqlite
//	verdict input-bound -- the main thread builds every batch (num_workers=0)
//	steps repeated range "get batch" -- NVTX ranges of the loop, not NCCL's
//	want dataloader-wait >=error -- the data wait dominates each step
//	never launch-bound >=warning -- 60 ms of compute in large kernels per step
//	unobservable munmap-stall -- the PyTorch profiler records no OS calls
//	speedup sync-memcpy <=7 -- the copies still take 2.4 ms from pinned memory
//	fix gpu-idle "preprocess" -- names the host function the GPU waits for
//	nofix * "DataLoader|torch" -- an MPI program in C: CUDA terms only
//	note jobs: communication-bound once NCCL kernels are the comm bucket
//
// A trace is "shared/SUB/FILE" (../shared/fixtures/SUB/FILE) or
// "fixtures/FILE". verdict takes the verdict's class (the text before the
// colon), or several separated by "|" where the class is legitimately
// open. want and never take a finding ID and an optional least severity
// (>=info is the default: reported at all). fix and nofix take a finding
// ID, or * for every finding, and a regular expression in double quotes or
// backquotes, matched against the finding's fix and code. Every line but
// trace and note ends with " -- " and the reason. Lines starting with #
// are comments.
package expect

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/model"
)

// Entry is the expert reading of one trace.
type Entry struct {
	// Trace is "shared/SUB/FILE" or "fixtures/FILE"; Line is its line.
	Trace string
	Line  int
	// Verdicts are the verdict classes accepted.
	Verdicts   []string
	VerdictWhy string
	// Steps, when set, is the steps' source the analysis must report.
	Steps    string
	StepsWhy string
	Rules    []Rule
	Notes    []string
}

// Rule is one want, never, unobservable, speedup, fix or nofix line.
type Rule struct {
	Kind string // "want", "never", "unobservable", "speedup", "fix", "nofix"
	ID   string // a finding ID, or "*" (fix, nofix)
	// Min is the least severity of want and never.
	Min analyze.Severity
	// Max is the highest estimated speedup allowed (speedup).
	Max float64
	// Re matches a finding's fix and code (fix, nofix).
	Re   *regexp.Regexp
	Why  string
	Line int
}

// Parse reads an expectations file.
func Parse(r io.Reader) ([]*Entry, error) {
	var out []*Entry
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kw, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		if kw == "trace" {
			out = append(out, &Entry{Trace: rest, Line: n})
			continue
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("line %d: %s before the first trace", n, kw)
		}
		e := out[len(out)-1]
		if kw == "note" {
			e.Notes = append(e.Notes, rest)
			continue
		}
		body, why, ok := strings.Cut(rest, " -- ")
		if !ok || strings.TrimSpace(why) == "" {
			return nil, fmt.Errorf("line %d: %s without \" -- reason\"", n, kw)
		}
		body, why = strings.TrimSpace(body), strings.TrimSpace(why)
		if err := e.add(kw, body, why, n); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, e := range out {
		if len(e.Verdicts) == 0 {
			return nil, fmt.Errorf("line %d: trace %s has no verdict line", e.Line, e.Trace)
		}
	}
	return out, nil
}

// add parses one line of an entry.
func (e *Entry) add(kw, body, why string, line int) error {
	f := strings.Fields(body)
	switch kw {
	case "verdict":
		if len(f) != 1 {
			return fmt.Errorf("verdict: want one class or A|B, got %q", body)
		}
		e.Verdicts, e.VerdictWhy = strings.Split(f[0], "|"), why
		return nil
	case "steps":
		e.Steps, e.StepsWhy = body, why
		return nil
	}
	if len(f) == 0 {
		return fmt.Errorf("%s: want a finding ID", kw)
	}
	r := Rule{Kind: kw, ID: f[0], Why: why, Line: line, Min: analyze.SeverityInfo}
	switch kw {
	case "want", "never":
		if len(f) > 2 {
			return fmt.Errorf("%s: want ID [>=SEVERITY], got %q", kw, body)
		}
		if len(f) == 2 {
			s, ok := strings.CutPrefix(f[1], ">=")
			sev, err := analyze.ParseSeverity(s)
			if !ok || err != nil {
				return fmt.Errorf("%s: bad severity %q (want >=info, >=warning or >=error)", kw, f[1])
			}
			r.Min = sev
		}
	case "unobservable":
		if len(f) != 1 {
			return fmt.Errorf("unobservable: want one ID, got %q", body)
		}
	case "speedup":
		if len(f) != 2 || !strings.HasPrefix(f[1], "<=") {
			return fmt.Errorf("speedup: want ID <=X, got %q", body)
		}
		x, err := strconv.ParseFloat(strings.TrimPrefix(f[1], "<="), 64)
		if err != nil {
			return fmt.Errorf("speedup: bad number %q", f[1])
		}
		r.Max = x
	case "fix", "nofix":
		q := strings.TrimSpace(strings.TrimPrefix(body, f[0]))
		s, err := strconv.Unquote(q)
		if err != nil {
			return fmt.Errorf("%s: want ID \"regexp\", got %q", kw, body)
		}
		if r.Re, err = regexp.Compile(s); err != nil {
			return fmt.Errorf("%s: %w", kw, err)
		}
	default:
		return fmt.Errorf("unknown line %q (trace, verdict, steps, want, never, unobservable, speedup, fix, nofix, note)", kw)
	}
	e.Rules = append(e.Rules, r)
	return nil
}

// Class is a verdict's class: the text before its colon.
func Class(verdict string) string {
	c, _, _ := strings.Cut(verdict, ":")
	return c
}

// Check compares an analysis with the entry and returns what disagrees,
// one line each, with the entry's reason. It also checks what holds for
// every trace: no estimate above what removing its cause gives (1 / (1 -
// share)), and no finding above info in a window that is not steady.
func (e *Entry) Check(r *audit.Analysis) []string {
	var out []string
	bad := func(line int, format string, args ...any) {
		out = append(out, fmt.Sprintf("expectations.txt:%d: %s: %s", line, e.Trace, fmt.Sprintf(format, args...)))
	}
	if c := Class(r.Verdict); !slices.Contains(e.Verdicts, c) {
		bad(e.Line, "verdict %q, want %s (%s)", r.Verdict, strings.Join(e.Verdicts, " or "), e.VerdictWhy)
	}
	if e.Steps != "" && r.Steps.Source != e.Steps {
		bad(e.Line, "steps from %s, want %s (%s)", r.Steps.Source, e.Steps, e.StepsWhy)
	}
	find := func(id string) *analyze.Finding {
		for i := range r.Findings {
			if r.Findings[i].ID == id {
				return &r.Findings[i]
			}
		}
		return nil
	}
	for _, rule := range e.Rules {
		f := find(rule.ID)
		switch rule.Kind {
		case "want":
			if f == nil || f.Severity < rule.Min {
				bad(rule.Line, "want %s at %s or above, got %s (%s)", rule.ID, rule.Min, severity(f), rule.Why)
			}
		case "never":
			if f != nil && f.Severity >= rule.Min {
				bad(rule.Line, "must not see %s at %s or above, got %s: %s (%s)", rule.ID, rule.Min, f.Severity, f.Title, rule.Why)
			}
		case "unobservable":
			if !slices.ContainsFunc(r.NotObservable, func(n analyze.NotObservable) bool { return n.ID == rule.ID }) {
				bad(rule.Line, "%s should be not observable (%s)", rule.ID, rule.Why)
			}
		case "speedup":
			if f != nil && f.EstimatedSpeedup > rule.Max {
				bad(rule.Line, "%s estimates %.2fx, at most %.2fx expected (%s)", rule.ID, f.EstimatedSpeedup, rule.Max, rule.Why)
			}
		case "fix", "nofix":
			out = append(out, e.checkText(rule, r, find)...)
		}
	}
	all, _ := r.Model.Fix(model.All)
	for _, f := range r.Findings {
		// A bound never promises more than removing the whole share; the
		// step model may (a sync costs more than its wait), but no one fix
		// more than all of them together.
		switch {
		case f.EstimateSource != "model" && f.EstimatedSpeedup > analyze.Speedup(f.Share)+1e-9:
			bad(e.Line, "%s estimates %.2fx, above the %.2fx that removing all of its %.1f %% would give", f.ID, f.EstimatedSpeedup, analyze.Speedup(f.Share), 100*f.Share)
		case f.EstimateSource == "model" && f.EstimatedSpeedup > all.Speedup+1e-9:
			bad(e.Line, "%s estimates %.2fx from the model, above all the fixes together (%.2fx)", f.ID, f.EstimatedSpeedup, all.Speedup)
		}
		if Class(r.Verdict) == audit.NotSteady && (f.Severity > analyze.SeverityInfo || f.EstimatedSpeedup != 1) {
			bad(e.Line, "%s is %s (est. %.2fx) in a window that is not steady", f.ID, f.Severity, f.EstimatedSpeedup)
		}
	}
	return out
}

// checkText applies a fix or nofix rule.
func (e *Entry) checkText(rule Rule, r *audit.Analysis, find func(string) *analyze.Finding) []string {
	var fs []*analyze.Finding
	if rule.ID == "*" {
		for i := range r.Findings {
			fs = append(fs, &r.Findings[i])
		}
	} else if f := find(rule.ID); f != nil {
		fs = append(fs, f)
	}
	var out []string
	if rule.Kind == "fix" && len(fs) == 0 {
		return []string{fmt.Sprintf("expectations.txt:%d: %s: want a %s finding whose fix matches %q (%s)", rule.Line, e.Trace, rule.ID, rule.Re, rule.Why)}
	}
	for _, f := range fs {
		m := rule.Re.MatchString(f.Fix) || rule.Re.MatchString(f.Code)
		if m != (rule.Kind == "fix") {
			out = append(out, fmt.Sprintf("expectations.txt:%d: %s: %s's fix %s %q (%s): %s", rule.Line, e.Trace, f.ID,
				map[bool]string{true: "matches", false: "does not match"}[m], rule.Re, rule.Why, f.Fix))
		}
	}
	return out
}

func severity(f *analyze.Finding) string {
	if f == nil {
		return "nothing"
	}
	return f.Severity.String()
}

// Table writes the entries as a Markdown table for the manual
// (docs/analyze.md): the trace, the verdict classes, the findings expected
// (with their least severity) and those that must not appear.
func Table(entries []*Entry) string {
	var b strings.Builder
	b.WriteString("| trace | verdict | expected | must not see |\n|---|---|---|---|\n")
	for _, e := range entries {
		var want, never []string
		for _, r := range e.Rules {
			switch r.Kind {
			case "want":
				want = append(want, ruleText(r))
			case "never":
				never = append(never, ruleText(r))
			case "unobservable":
				want = append(want, "`"+r.ID+"` not observable")
			}
		}
		name := e.Trace
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, strings.Join(e.Verdicts, " or "), list(want), list(never))
	}
	return b.String()
}

func ruleText(r Rule) string {
	if r.Min <= analyze.SeverityInfo {
		return "`" + r.ID + "`"
	}
	return fmt.Sprintf("`%s` %s+", r.ID, r.Min)
}

func list(items []string) string {
	if len(items) == 0 {
		return "-"
	}
	return strings.Join(items, ", ")
}
