package analyzetest

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/timeline/timelinetext"
)

// Want verbs.
const (
	verbWant         = "want"
	verbNone         = "want-none"
	verbUnobservable = "want-unobservable"
)

// want is one expectation.
type want struct {
	line     int    // in the archive
	text     string // as written
	verb     string
	id       string
	severity analyze.Severity // SeverityNone: any
	title    *regexp.Regexp   // the finding's title, or want-unobservable's reason
	checks   []cond
	// spans, for an evidence want (a "# want ID" after an event), are the
	// events of that line: some evidence of the finding must overlap one.
	spans []timelinetext.Span
}

// cond is one key=value condition on a finding.
type cond struct {
	key, want string
	// got returns the finding's value in the form the condition is
	// written in, and whether it satisfies the condition.
	got func(f *analyze.Finding) (string, bool)
}

// isWant reports whether a comment or comment-section line is an
// annotation, returning it without the leading '#'.
func isWant(l string) (string, bool) {
	l = strings.TrimSpace(l)
	l = strings.TrimSpace(strings.TrimPrefix(l, "#"))
	verb, _, _ := strings.Cut(l, " ")
	switch verb {
	case verbWant, verbNone, verbUnobservable:
		return l, true
	}
	return "", false
}

// parseWant reads `want ID [SEVERITY] ["title regexp"] [key=value]...`,
// `want-none ID` or `want-unobservable ID ["reason regexp"]`.
func parseWant(line int, text string) (*want, error) {
	f, err := timelinetext.Fields(text)
	if err != nil {
		return nil, err
	}
	w := &want{line: line, text: text, verb: f[0]}
	if len(f) < 2 {
		return nil, fmt.Errorf("%s: want an analyzer id", w.verb)
	}
	w.id = f[1]
	rest := f[2:]
	if w.verb == verbNone {
		if len(rest) > 0 {
			return nil, fmt.Errorf("want-none takes only an id")
		}
		return w, nil
	}
	if w.verb == verbWant && len(rest) > 0 {
		if s, err := analyze.ParseSeverity(rest[0]); err == nil {
			w.severity = s
			rest = rest[1:]
		}
	}
	for _, kv := range rest {
		if timelinetext.IsQuoted(kv) {
			if w.title != nil {
				return nil, fmt.Errorf("a second regexp %s (one for the title; fix=, code= and what= take others)", kv)
			}
			if w.title, err = quotedRegexp(kv); err != nil {
				return nil, err
			}
			continue
		}
		if w.verb == verbUnobservable {
			return nil, fmt.Errorf("want-unobservable takes an id and a \"reason regexp\"")
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want key=value (wasted, share, speedup, evidence, what, fix, code, detail.NAME)", kv)
		}
		c, err := newCheck(k, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		w.checks = append(w.checks, c)
	}
	return w, nil
}

func quotedRegexp(q string) (*regexp.Regexp, error) {
	s, err := strconv.Unquote(q)
	if err != nil {
		return nil, fmt.Errorf("bad string %s", q)
	}
	return regexp.Compile(s)
}

// newCheck builds the condition of one key=value.
func newCheck(k, v string) (cond, error) {
	c := cond{key: k, want: v}
	switch {
	case k == "wasted":
		ns, err := timelinetext.ParseTime(v)
		if err != nil {
			return c, err
		}
		c.got = func(f *analyze.Finding) (string, bool) {
			return timelinetext.FormatTime(f.WastedNS), f.WastedNS == ns
		}
	case k == "share" || k == "speedup" || strings.HasPrefix(k, "detail."):
		match, err := rounded(v)
		if err != nil {
			return c, err
		}
		name := strings.TrimPrefix(k, "detail.")
		c.got = func(f *analyze.Finding) (string, bool) {
			switch k {
			case "share":
				return match(f.Share)
			case "speedup":
				return match(f.EstimatedSpeedup)
			}
			x, ok := f.Detail[name]
			if !ok {
				return "(absent)", false
			}
			return match(x)
		}
	case k == "evidence":
		n, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("want a count, got %q", v)
		}
		c.got = func(f *analyze.Finding) (string, bool) {
			return strconv.Itoa(len(f.Evidence)), len(f.Evidence) == n
		}
	case k == "what" || k == "fix" || k == "code" || k == "bound":
		re, err := quotedRegexp(v)
		if err != nil {
			return c, err
		}
		c.got = func(f *analyze.Finding) (string, bool) {
			switch k {
			case "fix":
				return strconv.Quote(f.Fix), re.MatchString(f.Fix)
			case "code":
				return strconv.Quote(f.Code), re.MatchString(f.Code)
			case "bound":
				return strconv.Quote(f.Bound), re.MatchString(f.Bound)
			}
			var all []string
			for _, e := range f.Evidence {
				if re.MatchString(e.What) {
					return strconv.Quote(e.What), true
				}
				all = append(all, strconv.Quote(e.What))
			}
			return "[" + strings.Join(all, ", ") + "]", false
		}
	default:
		return c, fmt.Errorf("unknown key (wasted, share, speedup, evidence, what, fix, code, bound, detail.NAME)")
	}
	return c, nil
}

// rounded returns a matcher of numbers against v, written with as many
// decimals as the comparison needs: "0.25" matches 0.2549, "25%" matches a
// share of 0.2502.
func rounded(v string) (func(float64) (string, bool), error) {
	pct := strings.HasSuffix(v, "%")
	num := strings.TrimSuffix(v, "%")
	x, err := strconv.ParseFloat(num, 64)
	if err != nil || strings.ContainsAny(num, "eEnN") {
		return nil, fmt.Errorf("want a decimal number, got %q", v)
	}
	dec := 0
	if _, frac, ok := strings.Cut(num, "."); ok {
		dec = len(frac)
	}
	want := strconv.FormatFloat(x, 'f', dec, 64)
	scale := math.Pow(10, float64(dec))
	return func(got float64) (string, bool) {
		if pct {
			got *= 100
		}
		// Half away from zero, as people round: 1.25 is 1.3 to one decimal.
		s := strconv.FormatFloat(math.Round(got*scale)/scale, 'f', dec, 64)
		if s == "-"+want || "-"+s == want { // -0 and 0 round alike
			s = want
		}
		if pct {
			return s + "%", s == want
		}
		return s, s == want
	}, nil
}

// mismatches lists how finding f fails w (nil: it matches).
func (w *want) mismatches(f *analyze.Finding) []string {
	var out []string
	if w.severity != analyze.SeverityNone && f.Severity != w.severity {
		out = append(out, fmt.Sprintf("severity: got %s, want %s", f.Severity, w.severity))
	}
	if w.title != nil && !w.title.MatchString(f.Title) {
		out = append(out, fmt.Sprintf("title: %q does not match %q", f.Title, w.title))
	}
	for _, c := range w.checks {
		if got, ok := c.got(f); !ok {
			out = append(out, fmt.Sprintf("%s: got %s, want %s", c.key, got, c.want))
		}
	}
	if w.spans != nil && !overlapsAny(f.Evidence, w.spans) {
		out = append(out, fmt.Sprintf("no evidence overlaps %s", spansText(w.spans)))
	}
	return out
}

func overlapsAny(ev []analyze.Evidence, spans []timelinetext.Span) bool {
	return slices.ContainsFunc(ev, func(e analyze.Evidence) bool {
		return slices.ContainsFunc(spans, func(s timelinetext.Span) bool {
			if s.Start == s.End || e.StartNS == e.EndNS { // instants: containment
				return e.StartNS <= s.End && s.Start <= e.EndNS
			}
			return e.StartNS < s.End && s.Start < e.EndNS
		})
	})
}

func spansText(spans []timelinetext.Span) string {
	var parts []string
	for _, s := range spans {
		parts = append(parts, fmt.Sprintf("%s [%s, %s)", s.Track, timelinetext.FormatTime(s.Start), timelinetext.FormatTime(s.End)))
	}
	return strings.Join(parts, " or ")
}

// headline writes a finding on one line, in the terms of want lines.
func headline(f *analyze.Finding) string {
	return fmt.Sprintf("%s %s %q wasted=%s share=%s speedup=%s evidence=%d", f.ID, f.Severity, f.Title,
		timelinetext.FormatTime(f.WastedNS), strconv.FormatFloat(f.Share, 'f', 4, 64),
		strconv.FormatFloat(f.EstimatedSpeedup, 'f', 2, 64), len(f.Evidence))
}

// describe writes a finding's headline with its evidence below.
func describe(f *analyze.Finding) string {
	var b strings.Builder
	b.WriteString(headline(f))
	for _, e := range f.Evidence {
		fmt.Fprintf(&b, "\n\t\t[%s, %s) %s: %s", timelinetext.FormatTime(e.StartNS), timelinetext.FormatTime(e.EndNS), e.Track, e.What)
	}
	return b.String()
}
