// Package analyze runs analyzers over a timeline. It is modelled on
// golang.org/x/tools/go/analysis: an Analyzer is a value with a stable ID,
// its documentation, the analyzers whose results it needs (Requires), a
// check of whether the input holds the data it needs (Observable), and a Run
// function that reports Findings through a Pass. Shared indexes (steps,
// busy intervals, per-thread activity) are themselves analyzers that report
// nothing and return a result (analyze/index), computed once per run.
//
// Analyzers never see file formats: they read only the timeline.
package analyze

import (
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/traceaudit/traceaudit/timeline"
)

// Analyzer describes one analysis.
type Analyzer struct {
	// ID is stable and public (design.md): "gpu-idle", "sync-memcpy", ...
	// Index analyzers that report nothing have IDs starting with "index".
	ID string
	// Title is a one-line description shown in reports.
	Title string
	// Doc explains what the analyzer finds, how it counts wasted time, and
	// what it costs to run.
	Doc string
	// Requires lists analyzers whose results Run reads from Pass.ResultOf.
	Requires []*Analyzer
	// Observable reports whether the timeline holds the data the analyzer
	// needs; when it does not, why says what is missing and how to capture
	// it, and the analyzer is listed under not_observable instead of
	// running. Nil means always observable.
	Observable func(p *Pass) (ok bool, why string)
	// Run performs the analysis, recording findings with p.AddFinding. Its
	// result is available to dependent analyzers.
	Run func(p *Pass) (any, error)
	// Bands are the default severity bands of its findings' shares (nil:
	// its findings are info). Config.Bands overrides them.
	Bands *Bands
	// VerifyWith names the replay variants that measure its fixes: the
	// first its findings', unless a finding names its own (an epoch
	// restart's persistent workers, say).
	VerifyWith []string
	// Resize, when set, rewrites one of its findings for the size of the
	// fix the step model chose (a loader's workers): its detail, fix and
	// code. p holds the results of Requires, as Run's pass did.
	Resize func(p *Pass, f *Finding, size PoolSize)
}

// PoolSize is the size of a pool of producers the step model chose: a
// number of Workers, or where the trace does not count the workers that
// run, Factor times as many as run.
type PoolSize struct {
	Workers int
	Factor  float64
}

func (a *Analyzer) String() string { return a.ID }

// Pass is the input of one analyzer's Run.
type Pass struct {
	Analyzer *Analyzer
	Timeline *timeline.Timeline
	Config   *Config
	// ResultOf holds the results of the analyzers in Requires.
	ResultOf map[*Analyzer]any
	// AddFinding records a finding. The driver fills in ID, Severity (from
	// Share and the bands), EstimatedSpeedup and VerifyWith (the
	// analyzer's first) when unset.
	AddFinding func(Finding)
}

// Severity ranks findings.
type Severity int

// Severities, in increasing order.
const (
	SeverityNone Severity = iota
	SeverityInfo
	SeverityWarning
	SeverityError
)

func (s Severity) String() string {
	switch s {
	case SeverityInfo:
		return "info"
	case SeverityWarning:
		return "warning"
	case SeverityError:
		return "error"
	}
	return "none"
}

// ParseSeverity parses "info", "warning" or "error".
func ParseSeverity(s string) (Severity, error) {
	switch strings.ToLower(s) {
	case "info":
		return SeverityInfo, nil
	case "warning", "warn":
		return SeverityWarning, nil
	case "error":
		return SeverityError, nil
	}
	return SeverityNone, fmt.Errorf("severity %q: want info, warning or error", s)
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a severity name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	*s = v
	return err
}

// Evidence is one time range that shows a finding.
type Evidence struct {
	// StartNS and EndNS are on the trace's clock, in nanoseconds.
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
	// Track is "gpu<dev>/stream<id>" or "host/<pid>/<tid> (<thread name>)".
	Track string `json:"track"`
	// What names the events and the cost in words.
	What string `json:"what"`
}

// Finding is one cause of starvation, as the analyze JSON contract has it.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Title    string   `json:"title"`
	// WastedNS is the wasted time per steady step, in nanoseconds.
	WastedNS int64 `json:"wasted_ns"`
	// Share is the total wasted time over the steady window's length.
	Share float64 `json:"share"`
	// EstimatedSpeedup is what removing the cause gives a step: step /
	// (step - wasted + residual), where the residual is what the fix
	// leaves (Bound names it); never above 1 / (1 - Share), capped at 100.
	EstimatedSpeedup float64    `json:"estimated_speedup"`
	Evidence         []Evidence `json:"evidence"`
	// Fix says what to change, in plain words.
	Fix string `json:"fix"`
	// Code is the PyTorch change.
	Code string `json:"code"`
	// VerifyWith names the replay variants that measure the fix.
	VerifyWith []string `json:"verify_with"`
	// Detail holds analyzer-specific figures for reports and the replay
	// (e.g. "workers": 4). Not part of the contract's required fields.
	Detail map[string]float64 `json:"detail,omitempty"`
	// OneOff, when set, says that one steady step holds most of the
	// wasted time (index.OneOff): a cost the trace shows once. Its
	// severity is at most info, and the title carries the caveat.
	OneOff string `json:"one_off,omitempty"`
	// Bound names the residual the estimated speedup leaves (the copies
	// at the pinned reference bandwidth, the copy-engine time, ...);
	// written to JSON as detail.bound.
	Bound string `json:"-"`
	// EstimateSource says where EstimatedSpeedup comes from: "model" (the
	// step model's simulation of the fix) or "bound" (the analyzer's
	// bounded estimate); written to JSON as detail.estimate_source.
	EstimateSource string `json:"-"`
}

// NotObservable says why an analyzer could not run on this input.
type NotObservable struct {
	ID  string `json:"id"`
	Why string `json:"why"`
}

// Bands are the share thresholds of an analyzer's severities: a share at
// or above Warning is a warning, at or above Error an error, below Warning
// info.
type Bands struct{ Warning, Error float64 }

// Config holds the user's settings for a run.
type Config struct {
	// MinGapNS is the shortest GPU idle gap gpu-idle lists as evidence.
	MinGapNS int64
	// DataRange matches host ranges that load data.
	DataRange *regexp.Regexp
	// StepRange, when set, matches the host ranges that are steps.
	StepRange *regexp.Regexp
	// PinnedGBps is the pinned-copy bandwidth used when the trace has no
	// pinned copy of 1 MiB or more, in GB/s.
	PinnedGBps float64
	// Bands overrides severity bands per analyzer ID.
	Bands map[string]Bands
	// ProfilerEventNS is the host time per event a PyTorch profiler trace
	// records that the step model takes out before judging (0: the
	// model's documented constant; negative: none).
	ProfilerEventNS int64
	// UnprofiledStepNS, when set, is the loop's mean step without the
	// profiler as the user timed it: the step model then takes out the
	// cost per event that makes its unchanged step that long, in place of
	// ProfilerEventNS.
	UnprofiledStepNS int64
	// InfoFloor is the smallest share reported as an info finding; causes
	// below it, or below half their warning band, are not listed: they are
	// noise next to what the report is for.
	InfoFloor float64
	// SkipModel leaves the step model out (estimates stay bounds): for
	// make bench, which measures what the model adds to an analysis.
	SkipModel bool
	// KeepSchedules keeps the step model's graph so that the replay can
	// run its schedules (model.Model.Schedule).
	KeepSchedules bool
}

// DefaultDataRange is the default --data-range: DataLoader and the usual
// names of data-loading ranges, but not "prefetch".
const DefaultDataRange = `(?i)(dataloader|data[ _-]?load|get[ _-]?batch|next[ _-]?batch|load[ _-]?batch|fetch[ _-]?batch)`

// DefaultConfig returns the defaults of design.md.
func DefaultConfig() *Config {
	return &Config{
		MinGapNS:   100_000,
		DataRange:  regexp.MustCompile(DefaultDataRange),
		PinnedGBps: 25,
		Bands:      map[string]Bands{},
		InfoFloor:  0.01,
	}
}

// Result is what Run returns.
type Result struct {
	// Findings are sorted by wasted time, then ID.
	Findings      []Finding
	NotObservable []NotObservable
	// ResultOf holds every analyzer's result, index analyzers included.
	ResultOf map[*Analyzer]any
}

// Validate checks a set of analyzers: IDs set and unique, Run and Doc set,
// and Requires acyclic.
func Validate(analyzers []*Analyzer) error {
	seen := map[string]*Analyzer{}
	state := map[*Analyzer]int{} // 1 visiting, 2 done
	var visit func(a *Analyzer) error
	visit = func(a *Analyzer) error {
		switch {
		case a.ID == "":
			return errors.New("analyzer without ID")
		case a.Run == nil:
			return fmt.Errorf("analyzer %s: no Run", a.ID)
		case a.Doc == "":
			return fmt.Errorf("analyzer %s: no Doc", a.ID)
		}
		if o := seen[a.ID]; o != nil && o != a {
			return fmt.Errorf("duplicate analyzer ID %s", a.ID)
		}
		seen[a.ID] = a
		switch state[a] {
		case 1:
			return fmt.Errorf("analyzer %s: Requires cycle", a.ID)
		case 2:
			return nil
		}
		state[a] = 1
		for _, r := range a.Requires {
			if err := visit(r); err != nil {
				return err
			}
		}
		state[a] = 2
		return nil
	}
	for _, a := range analyzers {
		if err := visit(a); err != nil {
			return err
		}
	}
	return nil
}

// Run runs analyzers (and what they require, each once) on tl and returns
// their findings, sorted by wasted time. Analyzers run concurrently, up to
// GOMAXPROCS at a time, each once all it requires has run: they only read
// the timeline and the results they require. The result is the same as
// running them one after another in the order analyzers lists them (what
// an analyzer requires first): findings and what is not observable are
// gathered in that order, and the first error in it is returned. Cost: the
// sum of the analyzers', spread over the CPUs.
func Run(tl *timeline.Timeline, analyzers []*Analyzer, cfg *Config) (*Result, error) {
	if err := Validate(analyzers); err != nil {
		return nil, err
	}
	if cfg == nil {
		cfg = DefaultConfig()
	}
	order := runOrder(analyzers)
	pos := make(map[*Analyzer]int, len(order))
	for i, a := range order {
		pos[a] = i
	}
	type outcome struct {
		out      any
		findings []Finding
		notObs   *NotObservable
		err      error
		skipped  bool // a requirement failed
	}
	outs := make([]outcome, len(order))
	done := make([]chan struct{}, len(order))
	for i := range done {
		done[i] = make(chan struct{})
	}
	slots := make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))
	var wg sync.WaitGroup
	for i, a := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[i])
			o := &outs[i]
			p := &Pass{Analyzer: a, Timeline: tl, Config: cfg, ResultOf: map[*Analyzer]any{}}
			for _, r := range a.Requires {
				<-done[pos[r]]
				if ro := &outs[pos[r]]; ro.err != nil || ro.skipped {
					o.skipped = true
					return
				}
				p.ResultOf[r] = outs[pos[r]].out
			}
			slots <- struct{}{}
			defer func() { <-slots }()
			if a.Observable != nil {
				if ok, why := a.Observable(p); !ok {
					o.notObs = &NotObservable{ID: a.ID, Why: why}
					return
				}
			}
			p.AddFinding = func(f Finding) {
				if finish(&f, a, cfg) {
					o.findings = append(o.findings, f)
				}
			}
			out, err := a.Run(p)
			if err != nil {
				o.err = fmt.Errorf("%s: %w", a.ID, err)
				return
			}
			o.out = out
		}()
	}
	wg.Wait()
	res := &Result{ResultOf: map[*Analyzer]any{}}
	for i, a := range order {
		o := &outs[i]
		switch {
		case o.err != nil:
			return nil, o.err
		case o.skipped:
			continue
		case o.notObs != nil:
			res.NotObservable = append(res.NotObservable, *o.notObs)
			continue
		}
		res.Findings = append(res.Findings, o.findings...)
		res.ResultOf[a] = o.out
	}
	slices.SortStableFunc(res.Findings, func(a, b Finding) int {
		if a.WastedNS != b.WastedNS {
			if a.WastedNS > b.WastedNS {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	slices.SortFunc(res.NotObservable, func(a, b NotObservable) int { return strings.Compare(a.ID, b.ID) })
	return res, nil
}

// runOrder lists analyzers and what they require, each once, every
// analyzer after what it requires, in the order of a depth-first walk of
// analyzers.
func runOrder(analyzers []*Analyzer) []*Analyzer {
	var order []*Analyzer
	seen := map[*Analyzer]bool{}
	var visit func(a *Analyzer)
	visit = func(a *Analyzer) {
		if seen[a] {
			return
		}
		seen[a] = true
		for _, r := range a.Requires {
			visit(r)
		}
		order = append(order, a)
	}
	for _, a := range analyzers {
		visit(a)
	}
	return order
}

// finish fills in the derived fields of a finding reported by a and says
// whether it is worth listing: info findings under Config.InfoFloor or
// under half the warning band are not.
func finish(f *Finding, a *Analyzer, cfg *Config) bool {
	if f.ID == "" {
		f.ID = a.ID
	}
	if f.Title == "" {
		f.Title = a.Title
	}
	f.Share = min(max(f.Share, 0), 1)
	if f.EstimatedSpeedup == 0 {
		f.EstimatedSpeedup = Speedup(f.Share)
	}
	if f.Severity == SeverityNone {
		b, ok := cfg.Bands[f.ID]
		if !ok && a.Bands != nil {
			b, ok = *a.Bands, true
		}
		f.Severity = SeverityInfo
		floor := cfg.InfoFloor
		if ok {
			switch {
			case f.Share >= b.Error:
				f.Severity = SeverityError
			case f.Share >= b.Warning:
				f.Severity = SeverityWarning
			}
			floor = max(floor, b.Warning/2)
		}
		if f.Severity == SeverityInfo && f.Share < floor {
			return false
		}
		if f.OneOff != "" {
			// One step's event is not a per-step cost the trace can
			// judge: report it, neither warn nor fail CI on it.
			f.Severity = min(f.Severity, SeverityInfo)
		}
	}
	if f.OneOff != "" && !strings.Contains(f.Title, f.OneOff) {
		f.Title += "; " + f.OneOff
		if f.Fix != "" {
			f.Fix = OneOffFix + f.Fix
		}
	}
	if f.Evidence == nil {
		f.Evidence = []Evidence{}
	}
	if f.VerifyWith == nil {
		f.VerifyWith = append([]string{}, a.VerifyWith[:min(len(a.VerifyWith), 1)]...)
	}
	return true
}

// OneOffFix opens the fix of a finding that one steady step holds.
const OneOffFix = "(Seen in one step only: this holds if it recurs.) "

// BoundedSpeedup is the estimated speedup of a fix that removes wasted
// nanoseconds from a step of step nanoseconds and leaves residual of them:
// step / (step - wasted + residual), never above Speedup(share) (the whole
// share removed) and capped at 100. The residual is clamped to [0, wasted].
func BoundedSpeedup(step, wasted, residual int64, share float64) float64 {
	most := Speedup(share)
	if step <= 0 || wasted <= 0 {
		return min(1, most)
	}
	residual = min(max(residual, 0), wasted)
	left := step - wasted + residual
	if left <= 0 {
		return most
	}
	return max(1, min(float64(step)/float64(left), most))
}

// Speedup is the estimated speedup of removing a share of the step time:
// 1 / (1 - share), capped at 100.
func Speedup(share float64) float64 {
	if share >= 0.99 {
		return 100
	}
	if share <= 0 {
		return 1
	}
	return min(1/(1-share), 100)
}
