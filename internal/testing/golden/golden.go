// Package golden compares test output with golden files under testdata/,
// printing a line diff on mismatch; `go test -update` rewrites them.
package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files with the current output")

// Check compares got with the file at path (relative to the test's package
// directory), or rewrites the file when -update is set.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the output (go test -update rewrites it):\n%s", path, Diff(string(want), string(got)))
	}
}

// Diff is a compact line diff of want and got: the first differing lines
// with a few lines of context, "-" for want and "+" for got.
func Diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	// Longest common subsequence on lines: fine for golden-file sizes.
	n, m := len(w), len(g)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if w[i] == g[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var b strings.Builder
	shown := 0
	for i, j := 0, 0; (i < n || j < m) && shown < 40; {
		switch {
		case i < n && j < m && w[i] == g[j]:
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(&b, "%4d +%s\n", j+1, g[j])
			j++
			shown++
		default:
			fmt.Fprintf(&b, "%4d -%s\n", i+1, w[i])
			i++
			shown++
		}
	}
	if shown == 40 {
		b.WriteString("...\n")
	}
	return b.String()
}
