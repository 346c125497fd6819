package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/traceaudit/traceaudit/internal/testing/testaudit"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// TestBriefFitsAScreen: the default text of a trace is at most 40 lines,
// wraps its prose to the width given (a terminal's; code lines are cut
// at 100 columns only), gives each fix once, and points to --verbose.
func TestBriefFitsAScreen(t *testing.T) {
	r := testaudit.File(t, testfix.Project("r0_baseline.pt.trace.json.gz"))
	for _, width := range []int{0, 72, 140} {
		var buf bytes.Buffer
		if err := ForAnalysis(r).Render(&buf, Text, Options{Width: width}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) > 40 {
			t.Errorf("width %d: %d lines", width, len(lines))
		}
		limit := width
		if limit == 0 {
			limit = textWidth
		}
		for _, l := range lines {
			code := strings.HasPrefix(l, "    ")
			if n := utf8.RuneCountInString(l); n > limit && !(code && n <= textWidth) {
				t.Errorf("width %d: a line of %d columns: %q", width, n, l)
			}
		}
		if strings.Count(out, "num_workers=") != 1 || !strings.HasSuffix(out, "--verbose for the evidence and every finding\n") {
			t.Errorf("width %d: the fix twice, or no pointer to --verbose:\n%s", width, out)
		}
	}
}
