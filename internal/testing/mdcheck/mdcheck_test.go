package mdcheck

import (
	"strings"
	"testing"
)

func TestMermaid(t *testing.T) {
	good := []string{
		"%%{init: {\"themeVariables\": {\"pie1\": \"#2ca02c\"}}}%%\npie title Where the mean steady step goes (512 ms)\n    \"compute 60.6 ms\" : 60.579\n    \"sync 381 µs\" : 0.381\n",
		"xychart-beta horizontal\n    title \"Wasted (ms)\"\n    x-axis [\"gpu-idle\", \"sync-api\"]\n    y-axis \"ms per step\" 0 --> 500\n    bar [451.145, 14.9]\n",
	}
	for _, g := range good {
		if err := Mermaid(g); err != nil {
			t.Errorf("%v\n%s", err, g)
		}
	}
	bad := map[string]string{
		"unknown chart":      "graph TD\n A-->B\n",
		"quote in label":     "pie title x\n    \"a\"b\" : 1\n",
		"markup in label":    "pie title x\n    \"<b>a</b>\" : 1\n",
		"negative slice":     "pie title x\n    \"a\" : -1\n",
		"zero slice":         "pie title x\n    \"a\" : 0\n",
		"bars vs labels":     "xychart-beta\n    x-axis [\"a\", \"b\"]\n    y-axis \"ms\" 0 --> 10\n    bar [1]\n",
		"bar above axis":     "xychart-beta\n    x-axis [\"a\"]\n    y-axis \"ms\" 0 --> 10\n    bar [11]\n",
		"not a number":       "xychart-beta\n    x-axis [\"a\"]\n    bar [x]\n",
		"bad directive":      "%%{init: {bad}}%%\npie title x\n    \"a\" : 1\n",
		"click injection":    "xychart-beta\n    x-axis [\"a\"]\n    bar [1]\n    click a call alert(1)\n",
		"unquoted x label":   "xychart-beta\n    x-axis [a]\n    bar [1]\n",
		"title with bracket": "xychart-beta\n    title \"a]b\"\n    x-axis [\"a\"]\n    bar [1]\n",
	}
	for name, b := range bad {
		if err := Mermaid(b); err == nil {
			t.Errorf("%s: accepted\n%s", name, b)
		}
	}
	md := "x\n```mermaid\npie title a\n    \"b\" : 1\n```\n\n```python\nprint(1)\n```\n```mermaid\nxychart-beta\n```\n"
	if bs := Blocks(md); len(bs) != 2 || !strings.HasPrefix(bs[0], "pie") || bs[1] != "xychart-beta\n" {
		t.Errorf("blocks %q", bs)
	}
}

func TestStructure(t *testing.T) {
	ok := "| a | b |\n|---|---|\n| `x|y` escaped? no | 2 |\n"
	if errs := Structure(ok); len(errs) != 1 {
		t.Errorf("an unescaped pipe in a code span splits the cell: %v", errs)
	}
	fine := "| a | b |\n|---|---|\n| `x\\|y` | 2 \\| 3 |\n\n<details><summary>E</summary>\n\n</details>\n<sub>by `a<b>`</sub>\n```python\n<script>\n| | |\n```\n"
	if errs := Structure(fine); len(errs) != 0 {
		t.Errorf("%v", errs)
	}
	for name, md := range map[string]string{
		"raw script":     "text <script>alert(1)</script>\n",
		"raw img":        "| a |\n|---|\n| <img src=x> |\n",
		"unclosed fence": "```python\nx\n",
		"extra cell":     "| a | b |\n|---|---|\n| 1 | 2 | 3 |\n",
		"span unclosed":  "| a | b |\n|---|---|\n| ``x | y` | 2 |\n",
	} {
		if errs := Structure(md); len(errs) == 0 {
			t.Errorf("%s: no error", name)
		}
	}
}
