package golden

import (
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	d := Diff("a\nb\nc\n", "a\nB\nc\nd\n")
	for _, want := range []string{"-b", "+B", "+d"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff %q lacks %q", d, want)
		}
	}
	if strings.Contains(d, "-a") || strings.Contains(d, "-c") {
		t.Errorf("diff marks common lines: %q", d)
	}
	if Diff("same\n", "same\n") != "" {
		t.Error("equal texts must give an empty diff")
	}
}
