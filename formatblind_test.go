package traceaudit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/ingest"
)

// TestAnalyzersAreFormatBlind checks that no package under analyze/ names
// an input format or branches on Source.Format: analyzers depend on what
// the timeline observed (timeline.Observed), and format names stay in
// ingest.
func TestAnalyzersAreFormatBlind(t *testing.T) {
	var names []string
	for f := ingest.FormatUnknown + 1; f.String() != "unknown"; f++ {
		if n, _, _ := strings.Cut(f.String(), " "); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) < 2 {
		t.Fatalf("format names %v: want at least nsys and chrome", names)
	}
	files := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir("analyze", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					break
				}
				s, _ := strconv.Unquote(n.Value)
				for _, name := range names {
					if strings.Contains(s, name) {
						t.Errorf("%s: names the input format %q: depend on timeline.Observed instead", fset.Position(n.Pos()), name)
					}
				}
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isFormat(n.X) || isFormat(n.Y)) {
					t.Errorf("%s: compares Source.Format: depend on timeline.Observed instead", fset.Position(n.Pos()))
				}
			case *ast.SwitchStmt:
				if n.Tag != nil && isFormat(n.Tag) {
					t.Errorf("%s: switches on Source.Format: depend on timeline.Observed instead", fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("read only %d files under analyze/", files)
	}
}

// isFormat reports whether e reads a field named Format (Source.Format).
func isFormat(e ast.Expr) bool {
	s, ok := e.(*ast.SelectorExpr)
	return ok && s.Sel.Name == "Format"
}
