package analyzetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
)

// fake is an analyzer that reports the findings it is given, or is not
// observable when why is set.
func fake(why string, fs ...analyze.Finding) *analyze.Analyzer {
	a := &analyze.Analyzer{ID: "fake", Doc: "reports what it is told", Bands: &analyze.Bands{Warning: 0.1, Error: 0.3}}
	a.Run = func(p *analyze.Pass) (any, error) {
		for _, f := range fs {
			p.AddFinding(f)
		}
		return nil, nil
	}
	if why != "" {
		a.Observable = func(*analyze.Pass) (bool, string) { return false, why }
	}
	return a
}

const timelineSection = `-- timeline --
range host/1/1 0 +10ms "step"
os host/1/1 2ms +1ms "munmap"    # EVIDENCE
kernel gpu0/stream1 5ms +1ms "k"
`

// problems runs a on an archive made of wants and the timeline above (with
// EVIDENCE replaced by evidence) and returns what the harness reports.
func problems(t *testing.T, a *analyze.Analyzer, wants, evidence string) []string {
	t.Helper()
	c, err := parse(wants + "\n" + strings.Replace(timelineSection, "EVIDENCE", evidence, 1))
	if err != nil {
		t.Fatal(err)
	}
	res, err := analyze.Run(c.Timeline, []*analyze.Analyzer{a}, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return compare("x.txtar", c.wants, res)
}

var munmapEvidence = []analyze.Evidence{{StartNS: 2_500_000, EndNS: 2_600_000, Track: "host/1/1", What: "munmap for 1 ms"}}

func TestCompare(t *testing.T) {
	warn := analyze.Finding{Title: "stalls 20 % of each step", WastedNS: 2_000_000, Share: 0.2, Evidence: munmapEvidence,
		Fix: "reuse buffers", Code: "buf = ...", Detail: map[string]float64{"calls_per_step": 2.5}}
	other := warn
	other.ID, other.Share = "other-id", 0.5
	for _, c := range []struct {
		name      string
		a         *analyze.Analyzer
		wants, ev string
		want      []string // substrings, one per problem, in order
	}{
		{"match", fake("", warn), `want fake warning "20 %" wasted=2ms share=20% share=0.2 speedup=1.25 evidence=1 what="munmap" fix="reuse" code="buf" detail.calls_per_step=2.5`, "# want fake", nil},
		{"rounded", fake("", warn), `want fake share=0.20 share=20.0% detail.calls_per_step=3 speedup=1.3`, "", nil},
		{"comment prefix", fake("", warn), `# want fake warning`, "", nil},
		{"raw regexp", fake("", warn), "want fake `^stalls \\d+ %`", "", nil},
		{"title after keys", fake("", warn), `want fake wasted=2ms "stalls" share=20%`, "", nil},
		{"severity", fake("", warn), `want fake error`, "", []string{"x.txtar:1: want fake error: no finding matches:\n\tfake warning \"stalls 20 % of each step\"", "severity: got warning, want error"}},
		{"checks", fake("", warn), `want fake "30 %" wasted=3ms share=21% evidence=2 what="brk" detail.calls_per_step=2.4 detail.absent=1`, "", []string{
			`title: "stalls 20 % of each step" does not match "30 %"`, "wasted: got 2ms, want 3ms", "share: got 20%, want 21%", "evidence: got 1, want 2",
			`what: got ["munmap for 1 ms"], want "brk"`, "detail.calls_per_step: got 2.5, want 2.4", "detail.absent: got (absent), want 1"}},
		{"missing", fake(""), `want fake`, "", []string{"x.txtar:1: want fake: no fake finding"}},
		{"unexpected", fake("", warn, other), `want fake`, "", []string{"unexpected finding (add a want line):\n\tother-id error"}},
		{"two findings, two wants", fake("", warn, warn), "want fake\nwant fake", "", nil},
		{"two findings, one want", fake("", warn, warn), "want fake", "", []string{"unexpected finding"}},
		{"one finding, two wants", fake("", warn), "want fake\nwant fake", "", []string{"x.txtar:2: want fake: no fake finding"}},
		{"none", fake(""), "want-none fake", "", nil},
		{"none but found", fake("", warn), "want-none fake", "", []string{"x.txtar:1: want-none fake: got a finding:\n\tfake warning"}},
		{"none but blind", fake("no OS calls"), "want-none fake", "", []string{"want-none fake: fake did not run: not observable: no OS calls"}},
		{"want but blind", fake("no OS calls"), "want fake", "", []string{"want fake: fake did not run: not observable: no OS calls"}},
		{"unobservable", fake("no OS calls"), `want-unobservable fake "OS calls"`, "", nil},
		{"unobservable reason", fake("no OS calls"), `want-unobservable fake "NVTX"`, "", []string{`reason "no OS calls" does not match "NVTX"`}},
		{"unobservable but ran", fake(""), `want-unobservable fake`, "", []string{"fake was observable"}},
		{"blind, unwanted", fake("no OS calls"), ``, "", []string{"unexpected: fake not observable: no OS calls (add want-unobservable fake)"}},
		{"evidence elsewhere", fake("", analyze.Finding{Share: 0.2, Evidence: []analyze.Evidence{{StartNS: 0, EndNS: 2_000_000}}}), "want fake", "# want fake",
			[]string{"x.txtar:4: want fake: no finding matches:", "no evidence overlaps host/1/1 [2ms, 3ms)"}},
		{"evidence without finding", fake(""), "", "# want fake", []string{"x.txtar:4: want fake: no fake finding"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := problems(t, c.a, c.wants, c.ev)
			if len(got) != len(c.want) && !(len(c.want) > 1 && len(got) == 1) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(c.want), strings.Join(got, "\n---\n"))
			}
			all := strings.Join(got, "\n---\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems lack %q:\n%s", w, all)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ archive, want string }{
		{"no sections", "1: no -- timeline -- section"},
		{"-- timeline --\nkernel host/1/1 0", "2: kernel on host/1/1"},
		{"comment\n\n-- timeline --\nkernel gpu0/stream1 0\nkernal gpu0/stream1 0", `5: unknown line "kernal"`},
		{"want", "1: want: want an analyzer id"},
		{"want x share=lots", `1: share: want a decimal number, got "lots"`},
		{"want x colour=red", "1: colour: unknown key"},
		{"want x loud", `1: "loud": want key=value`},
		{"want x \"(\"", "1: error parsing regexp"},
		{"want-none x error", "1: want-none takes only an id"},
		{`want x "a" "b"`, `1: a second regexp "b"`},
		{`want-unobservable x "a" y=1`, `1: want-unobservable takes an id and a "reason regexp"`},
		{"-- timeline --\nkernel gpu0/stream1 0 \"k\" # want x error", "2: after an event, write only \"# want ID\""},
		{"-- config --\nmin-gap fast\n-- timeline --\n", `2: config min-gap: bad time "fast"`},
		{"-- config --\nband x=0.1\n-- timeline --\n", `2: config band: want ID=WARNING,ERROR`},
		{"-- config --\ncolour red\n-- timeline --\n", "2: config colour: unknown setting"},
		{"-- timeline --\n-- timeline --\n", `2: a second "timeline" section`},
	} {
		_, err := parse(c.archive)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.archive, err, c.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "case.txtar")
	archive := `A case.
want fake
-- config --
min-gap 50us   # shorter gaps count
data-range (?i)fetch
step-range ^step$
pinned-gbps 12.5
band fake=0.3,0.6
info-floor 0
-- steps --
0 10ms step
-- timeline --
range host/1/1 0 +10ms "step"
`
	if err := os.WriteFile(path, []byte(archive), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Config
	if cfg.MinGapNS != 50_000 || cfg.DataRange.String() != "(?i)fetch" || cfg.StepRange.String() != "^step$" ||
		cfg.PinnedGBps != 12.5 || cfg.Bands["fake"] != (analyze.Bands{Warning: 0.3, Error: 0.6}) || cfg.InfoFloor != 0 {
		t.Errorf("config %+v", cfg)
	}
	if c.Sections["steps"] != "0 10ms step\n" || c.Lines["steps"] != 11 || len(c.Timeline.Events) != 1 || len(c.wants) != 1 {
		t.Errorf("sections %q lines %v, %d events, %d wants", c.Sections, c.Lines, len(c.Timeline.Events), len(c.wants))
	}
	if _, err := Load(filepath.Join(dir, "absent.txtar")); err == nil {
		t.Error("no error for a missing file")
	}
	if err := os.WriteFile(path, []byte("-- timeline --\nkernal"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.HasPrefix(err.Error(), "case.txtar:2: ") {
		t.Errorf("error %v: want it to name the file and line", err)
	}
}
