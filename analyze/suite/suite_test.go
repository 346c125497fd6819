package suite_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze"
	"github.com/traceaudit/traceaudit/analyze/suite"
)

func TestValid(t *testing.T) {
	if err := analyze.Validate(suite.Default); err != nil {
		t.Fatal(err)
	}
	for _, a := range suite.Default {
		if suite.ByID(a.ID) != a {
			t.Errorf("ByID(%q) does not find it", a.ID)
		}
	}
	if suite.ByID("no-such-analyzer") != nil {
		t.Error("ByID found an unknown id")
	}
}

// TestEveryAnalyzerHasHarnessTests: each analyzer of the suite is tested in
// its own package through analyzetest, with text timelines on which it
// fires (want ID) and on which it runs and stays quiet (want-none ID).
func TestEveryAnalyzerHasHarnessTests(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, a := range suite.Default {
		// The package that defines Run is the analyzer's.
		fn := runtime.FuncForPC(reflect.ValueOf(a.Run).Pointer()).Name()
		i := strings.Index(fn, "/analyze/passes/")
		if i < 0 {
			t.Errorf("%s: Run is %s, outside analyze/passes/<name>", a.ID, fn)
			continue
		}
		pkg, _, _ := strings.Cut(fn[i+1:], ".")
		dir := filepath.Join(root, filepath.FromSlash(pkg))
		tests, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		calls := false
		for _, f := range tests {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			calls = calls || strings.Contains(string(b), "analyzetest.Run(")
		}
		if !calls {
			t.Errorf("%s: no test in %s calls analyzetest.Run", a.ID, pkg)
		}
		cases, _ := filepath.Glob(filepath.Join(dir, "testdata", "*.txtar"))
		var all strings.Builder
		for _, f := range cases {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all.Write(b)
		}
		id := regexp.QuoteMeta(a.ID)
		if !regexp.MustCompile(`(?m)^(# )?want ` + id + `\b`).MatchString(all.String()) {
			t.Errorf("%s: no case in %s/testdata where it fires (want %s)", a.ID, pkg, a.ID)
		}
		if !regexp.MustCompile(`(?m)^(# )?want-none ` + id + `\s*$`).MatchString(all.String()) {
			t.Errorf("%s: no case in %s/testdata where it runs and stays quiet (want-none %s)", a.ID, pkg, a.ID)
		}
	}
}
