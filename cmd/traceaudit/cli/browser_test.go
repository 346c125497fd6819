package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/headless"
	"github.com/traceaudit/traceaudit/internal/testing/mdcheck"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// These tests open traceaudit's reports in a real headless Chromium. They
// skip where Chromium (or Mermaid's script) is missing, and fail in CI
// (TRACEAUDIT_REQUIRE_FIXTURES=1, testfix.Missing), where .ci/run
// installs both.

func browser(t *testing.T) *headless.Browser {
	t.Helper()
	b, err := headless.New()
	if errors.Is(err, headless.ErrNoBrowser) {
		testfix.Missing(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b.Crashes > 0 {
			t.Logf("chromium crashed %d time(s) and was started again", b.Crashes)
		}
	})
	return b
}

// screenshotDir is where screenshots go: $TRACEAUDIT_SCREENSHOTS, to look
// at them, else a temporary folder.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("TRACEAUDIT_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// checkScreenshot checks a screenshot is a PNG of the window's size with
// more than a blank page on it.
func checkScreenshot(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("%s: %dx%d, want %dx%d", path, b.Dx(), b.Dy(), w, h)
	}
	colors := map[uint32]bool{}
	for y := 0; y < h; y += 7 {
		for x := 0; x < w; x += 7 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[r>>12<<8|g>>12<<4|b>>12] = true
		}
	}
	if len(colors) < 8 {
		t.Errorf("%s: %d colours: a blank page?", path, len(colors))
	}
}

func TestReportHTMLInChromium(t *testing.T) {
	br := browser(t)
	shots := screenshotDir(t)
	hostile := hostileTrace(t)
	for _, c := range []struct{ name, path string }{
		{"r0_baseline.pt.trace.json.gz", testfix.Project("r0_baseline.pt.trace.json.gz")},
		{"b0_pageable_sync.nsys.sqlite", testfix.Project("b0_pageable_sync.nsys.sqlite")},
		{"hostile", hostile},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "audit")
			if _, errOut, code := run(t, "analyze", "--out", out, c.path); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var rep struct {
				Verdict  string `json:"verdict"`
				Findings []struct {
					ID       string            `json:"id"`
					Evidence []json.RawMessage `json:"evidence"`
				} `json:"findings"`
			}
			b, _ := os.ReadFile(filepath.Join(out, "report.json"))
			if err := json.Unmarshal(b, &rep); err != nil || len(rep.Findings) == 0 {
				t.Fatalf("report.json: %v, %d findings", err, len(rep.Findings))
			}
			url := "file://" + filepath.Join(out, "report.html")
			dom, err := br.DumpDOM(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			checkDOM(t, dom, rep.Verdict)
			for _, f := range rep.Findings {
				sec := section(dom, `<section class="finding" id="finding-`+f.ID+`"`, "</section>")
				if sec == "" {
					t.Errorf("finding %s is not on the page", f.ID)
					continue
				}
				if got := strings.Count(section(sec, `<table class="evidence">`, "</table>"), "<tr>") - 1; got != len(f.Evidence) {
					t.Errorf("finding %s: %d evidence rows on the page, %d in report.json", f.ID, got, len(f.Evidence))
				}
			}
			for _, p := range []string{"timeline", "utilization", "steps", "findings"} {
				fig := section(dom, `<figure id="plot-`+p+`"`, "</figure>")
				if !strings.Contains(fig, "<svg") || strings.Count(fig, "<text") < 5 {
					t.Errorf("plot %s is not on the page as an SVG with its labels", p)
				}
			}
			shot := filepath.Join(shots, strings.ReplaceAll(c.name, ".", "_")+".report.png")
			if err := br.Screenshot(context.Background(), url, shot, 1280, 2400); err != nil {
				t.Fatal(err)
			}
			checkScreenshot(t, shot, 1280, 2400)
		})
	}
}

// checkDOM checks the page as Chromium built it: nothing from a name ran
// or became an element, and the verdict is shown.
func checkDOM(t *testing.T, dom, verdict string) {
	t.Helper()
	body := section(dom, "<body", ">")
	// (Chromium serialises text with its quotes: look for tags only.)
	if strings.Contains(body, "data-pwned") || regexp.MustCompile(`<[a-zA-Z][^<>]*\sid="pwned"`).MatchString(dom) {
		t.Error("a name from the trace ran as script or became an element")
	}
	if regexp.MustCompile(`<(script|img|iframe|object|embed)[\s>]`).MatchString(dom) {
		t.Error("the page holds a script, image or embedded object")
	}
	if !strings.Contains(dom, html.EscapeString(termSafeForTest(verdict))) {
		t.Errorf("the verdict %q is not on the page", verdict)
	}
}

func termSafeForTest(s string) string { return strings.ReplaceAll(s, "\x1b", "") }

// section is the text from the first start marker to the next end marker
// ("" when absent).
func section(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j+len(end)]
}

// mermaidJS locates Mermaid's browser bundle: $TRACEAUDIT_MERMAID_JS, else
// where .ci/run puts it.
func mermaidJS(t *testing.T) string {
	t.Helper()
	p := os.Getenv("TRACEAUDIT_MERMAID_JS")
	if p == "" {
		cache, _ := os.UserCacheDir()
		p = filepath.Join(cache, "traceaudit-ci", "mermaid", "mermaid.min.js")
	}
	if _, err := os.Stat(p); err != nil {
		testfix.Missing(t, "mermaid.min.js not found at %s (.ci/run fetches it: npm pack mermaid)", p)
	}
	return p
}

// TestMermaidInChromium parses and renders every Mermaid chart traceaudit
// writes for the project's traces, a diff and the hostile trace with
// Mermaid itself.
func TestMermaidInChromium(t *testing.T) {
	br := browser(t)
	js := mermaidJS(t)
	var blocks []string
	hostile := hostileTrace(t)
	for _, args := range [][]string{
		{"analyze", "--format", "markdown", "fixtures/r0_baseline.pt.trace.json.gz"},
		{"analyze", "--format", "markdown", "fixtures/b0_pageable_sync.nsys.sqlite"},
		{"analyze", "--format", "markdown", "fixtures/m0_munmap.nsys.sqlite"},
		{"analyze", "--format", "markdown", "fixtures/m0_munmap.pt.trace.json.gz"},
		{"diff", "--format", "markdown", "fixtures/r0_baseline.pt.trace.json.gz", "fixtures/r3_streams.pt.trace.json.gz"},
		{"analyze", "--format", "markdown", hostile},
		{"diff", "--format", "markdown", hostile, hostile},
	} {
		md, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		blocks = append(blocks, mdcheck.Blocks(md)...)
	}
	if len(blocks) < 10 {
		t.Fatalf("only %d charts", len(blocks))
	}
	dir := t.TempDir()
	src, _ := os.ReadFile(js)
	os.WriteFile(filepath.Join(dir, "mermaid.min.js"), src, 0o644)
	data, _ := json.Marshal(blocks) // escapes <, > and & as \u003c...
	page := fmt.Sprintf(mermaidPage, data)
	os.WriteFile(filepath.Join(dir, "charts.html"), []byte(page), 0o644)
	url := "file://" + filepath.Join(dir, "charts.html")
	dom, err := br.DumpDOM(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	res := section(dom, `<pre id="result">`, "</pre>")
	res = html.UnescapeString(strings.TrimSuffix(strings.TrimPrefix(res, `<pre id="result">`), "</pre>"))
	var results []struct {
		OK   bool   `json:"ok"`
		Err  string `json:"err"`
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(res), &results); err != nil || len(results) != len(blocks) {
		t.Fatalf("results %q: %v", res, err)
	}
	for i, r := range results {
		if !r.OK {
			t.Errorf("chart %d does not parse in Mermaid: %s\n%s", i, r.Err, blocks[i])
		}
	}
	shot := filepath.Join(screenshotDir(t), "mermaid.png")
	if err := br.Screenshot(context.Background(), url, shot, 1000, 1100); err != nil {
		t.Fatal(err)
	}
	checkScreenshot(t, shot, 1000, 1100)
}

// mermaidPage parses and renders the charts (a JSON array) with Mermaid,
// then writes one result per chart into #result.
const mermaidPage = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><script src="mermaid.min.js"></script></head>
<body>
<div id="charts"></div>
<pre id="result">pending</pre>
<script type="application/json" id="blocks">%s</script>
<script>
(async () => {
  mermaid.initialize({startOnLoad: false, securityLevel: "strict"});
  const blocks = JSON.parse(document.getElementById("blocks").textContent);
  const results = [];
  for (let i = 0; i < blocks.length; i++) {
    try {
      const parsed = await mermaid.parse(blocks[i]);
      const {svg} = await mermaid.render("chart" + i, blocks[i]);
      const div = document.createElement("div");
      div.innerHTML = svg;
      document.getElementById("charts").appendChild(div);
      results.push({ok: true, kind: parsed && parsed.diagramType || ""});
    } catch (e) {
      results.push({ok: false, err: String(e && e.message || e)});
    }
  }
  document.getElementById("result").textContent = JSON.stringify(results);
})();
</script>
</body></html>
`
