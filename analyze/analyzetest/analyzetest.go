// Package analyzetest runs an analyzer on small text timelines and checks
// its findings against expectations written beside them, in the manner of
// golang.org/x/tools/go/analysis/analysistest.
//
// A test is one line per analyzer package:
//
//	func Test(t *testing.T) { analyzetest.Run(t, analyzetest.TestData(), gpuidle.Analyzer) }
//
// which runs every testdata/*.txtar (or only the names given). Each file is
// a txtar archive: a comment, then sections introduced by "-- NAME --":
//
//	Four 10 ms steps; kernels cover 8 ms of each: idle exactly at the warning band.
//	want gpu-idle warning "no kernel runs 20 %" wasted=2ms share=20%
//	-- config --
//	min-gap 50us
//	-- timeline --
//	range host/1/1 0 +10ms "ProfilerStep#1"
//	launch host/1/1 0 +5us gpu0/stream7 0 +8ms "gemm"
//	os host/1/1 9ms +1ms "munmap"   # want munmap-stall
//	...
//
// The timeline section is timelinetext (see that package). The config
// section sets analyze.Config fields, one per line: min-gap DURATION,
// data-range REGEXP, step-range REGEXP, pinned-gbps GBPS, band
// ID=WARNING,ERROR, info-floor SHARE. Other sections are left to the test
// (Case.Sections).
//
// Expectations are lines of the comment, or comments in the timeline:
//
//	want ID [SEVERITY] ["title regexp"] [key=value]...   (the regexp may come anywhere after the id)
//	want-none ID                          the analyzer ran and found nothing
//	want-unobservable ID ["reason regexp"]
//
// Keys: wasted=DURATION (exact), share=0.2 or share=20% and speedup=1.25
// and detail.NAME=4 (equal when rounded to the decimals written),
// evidence=N (count), what="regexp" (some evidence's text), fix="regexp",
// code="regexp", bound="regexp" (the residual the estimate leaves). A "# want ID" after an event line asks, in addition, that
// the finding's evidence overlap that line's events in time.
//
// Each want must match a finding of its own, and every finding and every
// not-observable entry must be wanted: anything else fails the test, with
// what was expected beside what the analyzer reported.
package analyzetest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/timeline"
	"github.com/traceaudit/traceaudit/timeline/timelinetext"
)

// TestData returns the testdata folder beside the calling test file.
func TestData() string {
	_, file, _, ok := runtime.Caller(1)
	if !ok {
		return "testdata"
	}
	return filepath.Join(filepath.Dir(file), "testdata")
}

// Case is one loaded test file.
type Case struct {
	// Path is the .txtar file.
	Path     string
	Timeline *timeline.Timeline
	Config   *analyze.Config
	// Sections holds the sections other than timeline and config, by
	// name, and Lines the archive line where each starts.
	Sections map[string]string
	Lines    map[string]int
	wants    []*want
}

// Load reads a test file: its timeline, its config (analyze's defaults
// changed by the config section) and its want annotations.
func Load(path string) (*Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s:%w", filepath.Base(path), err)
	}
	c.Path = path
	return c, nil
}

// errAt is an error at a line of the archive: "N: message".
func errAt(line int, format string, args ...any) error {
	return fmt.Errorf("%d: %s", line, fmt.Sprintf(format, args...))
}

func parse(data string) (*Case, error) {
	comment, files, err := parseTxtar(data)
	if err != nil {
		return nil, fmt.Errorf(" %w", err)
	}
	c := &Case{Config: analyze.DefaultConfig(), Sections: map[string]string{}, Lines: map[string]int{}}
	for i, l := range comment.lines {
		if text, ok := isWant(l); ok {
			w, err := parseWant(comment.line+i, text)
			if err != nil {
				return nil, errAt(comment.line+i, "%v", err)
			}
			c.wants = append(c.wants, w)
		}
	}
	var tlSec *section
	for i := range files {
		s := &files[i]
		switch s.name {
		case "timeline":
			tlSec = s
		case "config":
			if err := parseConfig(s, c.Config); err != nil {
				return nil, err
			}
		default:
			c.Sections[s.name], c.Lines[s.name] = s.text(), s.line
		}
	}
	if tlSec == nil {
		return nil, errAt(1, "no -- timeline -- section")
	}
	tl, spans, err := timelinetext.DecodeSpans([]byte(tlSec.text()))
	if err != nil {
		// timelinetext names the section's line: name the archive's.
		if e, ok := err.(*timelinetext.Error); ok && e.Line > 0 {
			return nil, errAt(tlSec.line+e.Line-1, "%v", e.Err)
		}
		return nil, errAt(tlSec.line, "%v", err)
	}
	c.Timeline = tl
	for i, l := range tlSec.lines {
		content, comm := timelinetext.SplitComment(l)
		text, ok := isWant(comm)
		if !ok {
			continue
		}
		line := tlSec.line + i
		w, err := parseWant(line, text)
		if err != nil {
			return nil, errAt(line, "%v", err)
		}
		if strings.TrimSpace(content) != "" {
			if w.verb != verbWant || w.severity != analyze.SeverityNone || w.title != nil || len(w.checks) > 0 {
				return nil, errAt(line, "after an event, write only \"# want ID\" (its evidence overlaps the event); put conditions on a want line of their own")
			}
			w.spans = spans[i+1]
		}
		c.wants = append(c.wants, w)
	}
	return c, nil
}

// parseConfig applies a config section to cfg.
func parseConfig(s *section, cfg *analyze.Config) error {
	for i, l := range s.lines {
		content, _ := timelinetext.SplitComment(l)
		k, v, _ := strings.Cut(strings.TrimSpace(content), " ")
		v = strings.TrimSpace(v)
		if k == "" {
			continue
		}
		var err error
		switch k {
		case "min-gap":
			cfg.MinGapNS, err = timelinetext.ParseTime(v)
		case "data-range":
			cfg.DataRange, err = regexp.Compile(v)
		case "step-range":
			cfg.StepRange, err = regexp.Compile(v)
		case "pinned-gbps":
			cfg.PinnedGBps, err = strconv.ParseFloat(v, 64)
		case "info-floor":
			cfg.InfoFloor, err = strconv.ParseFloat(v, 64)
		case "band":
			id, bands, ok := strings.Cut(v, "=")
			w, e, ok2 := strings.Cut(bands, ",")
			var b analyze.Bands
			var err1, err2 error
			b.Warning, err1 = strconv.ParseFloat(w, 64)
			b.Error, err2 = strconv.ParseFloat(e, 64)
			if !ok || !ok2 || err1 != nil || err2 != nil {
				err = fmt.Errorf("want ID=WARNING,ERROR, got %q", v)
			}
			cfg.Bands[id] = b
		default:
			err = fmt.Errorf("unknown setting (min-gap, data-range, step-range, pinned-gbps, band, info-floor)")
		}
		if err != nil {
			return errAt(s.line+i, "config %s: %v", k, err)
		}
	}
	return nil
}

// Result is what an analyzer reported on one test file.
type Result struct {
	Case   *Case
	Result *analyze.Result
}

// Run runs analyzer a, with what it requires, on dir/<name>.txtar for each
// name (every .txtar in dir when none is given), each in a subtest, and
// checks what it reports against the files' wants. It returns the results
// for further checks.
func Run(t *testing.T, dir string, a *analyze.Analyzer, names ...string) []*Result {
	t.Helper()
	if len(names) == 0 {
		files, _ := filepath.Glob(filepath.Join(dir, "*.txtar"))
		for _, f := range files {
			names = append(names, strings.TrimSuffix(filepath.Base(f), ".txtar"))
		}
		if len(names) == 0 {
			t.Fatalf("no .txtar files in %s", dir)
		}
	}
	var out []*Result
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Helper()
			r, problems, err := check(filepath.Join(dir, name+".txtar"), a)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Error(p)
			}
			if len(problems) > 0 {
				t.Log(summary(r))
			}
			out = append(out, r)
		})
	}
	return out
}

// check runs a on one file and returns its problems, one message each.
func check(path string, a *analyze.Analyzer) (*Result, []string, error) {
	c, err := Load(path)
	if err != nil {
		return nil, nil, err
	}
	res, err := analyze.Run(c.Timeline, []*analyze.Analyzer{a}, c.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	r := &Result{Case: c, Result: res}
	return r, compare(filepath.Base(path), c.wants, res), nil
}

// compare matches wants to what was reported.
func compare(file string, wants []*want, res *analyze.Result) []string {
	var problems []string
	at := func(w *want, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", file, w.line, w.text, fmt.Sprintf(format, args...)))
	}
	// used: matched by a want; shown: listed as the near miss of a want,
	// so not listed again as unexpected.
	used, shown := make([]bool, len(res.Findings)), make([]bool, len(res.Findings))
	unobs := func(id string) *analyze.NotObservable {
		for i := range res.NotObservable {
			if res.NotObservable[i].ID == id {
				return &res.NotObservable[i]
			}
		}
		return nil
	}
	wantedUnobs := map[string]bool{}
	// Finding wants first, then evidence wants, which may share a finding
	// with a finding want.
	order := slices.Clone(wants)
	slices.SortStableFunc(order, func(x, y *want) int { return btoi(x.spans != nil) - btoi(y.spans != nil) })
	for _, w := range order {
		switch w.verb {
		case verbNone:
			if n := unobs(w.id); n != nil {
				at(w, "%s did not run: not observable: %s", w.id, n.Why)
			}
			for i := range res.Findings {
				if f := &res.Findings[i]; f.ID == w.id {
					used[i] = true
					at(w, "got a finding:\n\t%s", describe(f))
				}
			}
		case verbUnobservable:
			wantedUnobs[w.id] = true
			n := unobs(w.id)
			switch {
			case n == nil:
				at(w, "%s was observable", w.id)
			case w.title != nil && !w.title.MatchString(n.Why):
				at(w, "reason %q does not match %q", n.Why, w.title)
			}
		default:
			var near []string
			found := false
			for i := range res.Findings {
				f := &res.Findings[i]
				if f.ID != w.id || used[i] && w.spans == nil {
					continue
				}
				m := w.mismatches(f)
				if len(m) == 0 {
					found = true
					if w.spans == nil {
						used[i] = true
					}
					break
				}
				near = append(near, "\t"+describe(f)+"\n\t\t"+strings.Join(m, "\n\t\t"))
				shown[i] = true
			}
			switch {
			case found:
			case len(near) > 0:
				at(w, "no finding matches:\n%s", strings.Join(near, "\n"))
			case unobs(w.id) != nil:
				at(w, "%s did not run: not observable: %s", w.id, unobs(w.id).Why)
			default:
				at(w, "no %s finding", w.id)
			}
		}
	}
	for i := range res.Findings {
		if !used[i] && !shown[i] {
			problems = append(problems, fmt.Sprintf("%s: unexpected finding (add a want line):\n\t%s", file, describe(&res.Findings[i])))
		}
	}
	for _, n := range res.NotObservable {
		if !wantedUnobs[n.ID] && !slices.ContainsFunc(wants, func(w *want) bool { return w.id == n.ID }) {
			problems = append(problems, fmt.Sprintf("%s: unexpected: %s not observable: %s (add want-unobservable %s)", file, n.ID, n.Why, n.ID))
		}
	}
	return problems
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// summary lists everything reported, for the log of a failed test.
func summary(r *Result) string {
	var b strings.Builder
	b.WriteString("reported:")
	for i := range r.Result.Findings {
		b.WriteString("\n\t" + headline(&r.Result.Findings[i]))
	}
	for _, n := range r.Result.NotObservable {
		fmt.Fprintf(&b, "\n\t%s not observable: %s", n.ID, n.Why)
	}
	if len(r.Result.Findings)+len(r.Result.NotObservable) == 0 {
		b.WriteString(" nothing")
	}
	return b.String()
}
