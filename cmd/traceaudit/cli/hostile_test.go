package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/mdcheck"
)

// Names in a trace are data written by someone else. The hostile trace's
// thread, range and kernel names and its file name hold HTML with
// scripts, Markdown, Mermaid syntax, terminal escapes and line breaks.
const (
	esc           = "\x1b"
	hostileThread = esc + "[31mRED" + esc + "[0m" + `main <script>document.body.setAttribute("data-pwned","1")</script>`
	hostileRange  = `get batch <img id="pwned" src=x onerror="document.body.setAttribute('data-pwned',1)"> **bold** | pipe [link](javascript:alert(1)) ` + "`tick` ~~s~~ ```fence $x$"
	hostileKernel = `gemm"]; click A call alert(1) %% <b id="pwned">k</b> ` + esc + "]0;title\x07 next\nline # heading\u202eevil"
	hostileFile   = "evil <i>x<i> [y](z) `t` | p.json"
)

// hostileTrace writes a Chrome trace of 5 input-bound steps whose names are
// hostile, and returns its path.
func hostileTrace(t *testing.T) string {
	t.Helper()
	var ev []map[string]any
	ev = append(ev, map[string]any{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": map[string]any{"name": hostileThread}})
	corr := 1
	for step := range 5 {
		t0 := float64(step) * 10000
		ev = append(ev,
			map[string]any{"ph": "X", "cat": "user_annotation", "name": fmt.Sprintf("ProfilerStep#%d", step+1), "pid": 1, "tid": 1, "ts": t0, "dur": 10000},
			map[string]any{"ph": "X", "cat": "user_annotation", "name": hostileRange, "pid": 1, "tid": 1, "ts": t0 + 1, "dur": 6000})
		for k := range 3 {
			s := t0 + 6100 + float64(k)*1000
			ev = append(ev,
				map[string]any{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": s, "dur": 10, "args": map[string]any{"correlation": corr}},
				map[string]any{"ph": "X", "cat": "kernel", "name": hostileKernel, "pid": 0, "tid": 7, "ts": s + 20, "dur": 800, "args": map[string]any{"correlation": corr, "device": 0, "stream": 7}})
			corr++
		}
		ev = append(ev,
			map[string]any{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": t0 + 9200, "dur": 500, "args": map[string]any{"correlation": corr}},
			map[string]any{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": t0 + 9210, "dur": 480,
				"args": map[string]any{"correlation": corr, "bytes": 4000000, "device": 0, "stream": 7}})
		corr++
	}
	b, err := json.Marshal(map[string]any{"traceEvents": ev})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), hostileFile)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkMarkdown checks a Markdown report's structure and charts.
func checkMarkdown(t *testing.T, what, md string) {
	t.Helper()
	for _, err := range mdcheck.Structure(md) {
		t.Errorf("%s: %v", what, err)
	}
	blocks := mdcheck.Blocks(md)
	for _, b := range blocks {
		if err := mdcheck.Mermaid(b); err != nil {
			t.Errorf("%s: mermaid: %v\n%s", what, err, b)
		}
	}
}

func TestHostileNames(t *testing.T) {
	path := hostileTrace(t)
	out := filepath.Join(t.TempDir(), "audit")

	// Text: no control character reaches the terminal, the names' visible
	// parts do.
	for _, args := range [][]string{{"analyze", path}, {"stats", path}, {"stats", "--report", "kernels", path}, {"stats", "--report", "nvtx", path},
		{"diff", path, path}, {"replay", "--dry-run", path}} {
		text, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		for i, r := range text {
			if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' {
				t.Errorf("%v: control character %q at %d", args, r, i)
				break
			}
		}
	}
	text, _, _ := run(t, "analyze", "--verbose", path)
	for _, want := range []string{"RED", "<script>document.body", "get batch <img"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q", want)
		}
	}

	// Markdown (stdout and report.md), analyze and diff.
	if _, errOut, code := run(t, "analyze", "--out", out, path); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	md, _, _ := run(t, "analyze", "--format", "markdown", path)
	report, _ := os.ReadFile(filepath.Join(out, "report.md"))
	diff, _, _ := run(t, "diff", "--format", "markdown", path, path)
	for what, m := range map[string]string{"analyze markdown": md, "report.md": string(report), "diff markdown": diff} {
		checkMarkdown(t, what, m)
		if strings.Contains(m, esc) || strings.Contains(m, "\x07") {
			t.Errorf("%s: a terminal escape", what)
		}
	}
	if len(mdcheck.Blocks(md)) != 2 {
		t.Errorf("analyze markdown: want 2 mermaid charts")
	}

	// HTML: escaped by html/template, no script, the evidence tables keep
	// four cells a row (the browser test checks the page as rendered).
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	for _, bad := range []string{"<script", "<img", `<b id="pwned"`, "<i>x<i>", esc, "\x07"} {
		if strings.Contains(html, bad) {
			t.Errorf("report.html holds %q", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;document.body", "get batch &lt;img id=&#34;pwned&#34;", "evil &lt;i&gt;x&lt;i&gt;"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks the escaped name %q", want)
		}
	}
	for _, row := range strings.Split(html, "<tr>")[1:] {
		row = row[:strings.Index(row, "</tr>")]
		if strings.Contains(row, `class="mono"`) && strings.Count(row, "<td") != 4 {
			t.Errorf("evidence row with %d cells: %s", strings.Count(row, "<td"), row)
		}
	}

	// The plots: well-formed SVG.
	svgs, _ := filepath.Glob(filepath.Join(out, "*.svg"))
	for _, f := range svgs {
		b, _ := os.ReadFile(f)
		d := xml.NewDecoder(bytes.NewReader(b))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("%s: %v", filepath.Base(f), err)
				break
			}
		}
	}
	if len(svgs) != 4 {
		t.Errorf("%d SVG plots", len(svgs))
	}

	// The annotated trace: JSON, names kept without controls.
	var tr struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "annotated.json"))
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	var sawKernel bool
	for _, e := range tr.TraceEvents {
		if strings.ContainsAny(e.Name, esc+"\x07\n") {
			t.Errorf("control character in %q", e.Name)
		}
		sawKernel = sawKernel || strings.HasPrefix(e.Name, `gemm"]; click A call alert(1) %% <b id="pwned">k</b>`)
	}
	if !sawKernel {
		t.Error("annotated.json lacks the kernel")
	}

	// CSV: one kernel row, parseable.
	csvOut, _, _ := run(t, "stats", "--report", "kernels", "--format", "csv", path)
	recs, err := csv.NewReader(strings.NewReader(csvOut)).ReadAll()
	if err != nil || len(recs) != 2 || !strings.HasPrefix(recs[1][0], `gemm"]; click`) || strings.ContainsAny(recs[1][0], esc+"\n") {
		t.Errorf("CSV %v %q", err, recs)
	}
}
