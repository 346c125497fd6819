package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/analyze/compare"
	"github.com/traceaudit/traceaudit/analyze/job"
	"github.com/traceaudit/traceaudit/analyze/stats"
	"github.com/traceaudit/traceaudit/internal/version"
)

func TestRenderUnsupported(t *testing.T) {
	r := &audit.Analysis{File: "a.json", Findings: nil}
	for _, c := range []struct {
		f    Format
		doc  *Document
		want string
	}{
		{Text, ForValue(struct{}{}), "report: text of struct {}: "},
		{Markdown, ForValue(42), "report: markdown of int: "},
		{CSV, ForAnalysis(r), "report: csv of *audit.Analysis: "},
		{HTML, ForBatch(&job.Batch{}), "report: html of *job.Batch: "},
		{ChromeTrace, ForDiff(&compare.Diff{}), "report: chrome-trace of *compare.Diff: "},
		{"yaml", ForAnalysis(r), `report: "yaml": `},
		{JSON, ForValue([]int{1}), "report: json of []int: "},
	} {
		var buf bytes.Buffer
		err := c.doc.Render(&buf, c.f, Options{})
		if !errors.Is(err, ErrFormat) || err.Error() != c.want+ErrFormat.Error() {
			t.Errorf("%s of %T: %v, want %s%v", c.f, c.doc.value, err, c.want, ErrFormat)
		}
		if buf.Len() != 0 {
			t.Errorf("%s of %T wrote %q", c.f, c.doc.value, buf.String())
		}
	}
}

// TestPlotWithoutFolder: a document without a report folder says so,
// naming its type; one whose folder holds only its renderings draws
// nothing.
func TestPlotWithoutFolder(t *testing.T) {
	if err := ForStats(&stats.Stats{}).Plot(nil); !errors.Is(err, ErrFormat) || err.Error() != "report folder of *stats.Stats: "+ErrFormat.Error() {
		t.Errorf("stats: %v", err)
	}
	if err := ForBatch(&job.Batch{}).Plot(nil); err != nil {
		t.Errorf("batch: %v", err)
	}
}

// TestRenderJSONStamped: every JSON document starts with schema_version
// and tool_version; several reports are an array of stamped objects.
func TestRenderJSONStamped(t *testing.T) {
	r := &audit.Analysis{File: "a.json", Format: "chrome-trace", WindowNS: 7}
	var buf bytes.Buffer
	if err := ForAnalysis(r).Render(&buf, JSON, Options{}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"schema_version\": 1,\n  \"tool_version\": " + quote(version.Tool()) + ",\n  \"file\": \"a.json\",\n"
	if !strings.HasPrefix(buf.String(), want) || !strings.HasSuffix(buf.String(), "}\n") {
		t.Errorf("got\n%s\nwant it to start with\n%s", buf.String(), want)
	}
	buf.Reset()
	if err := ForAnalyses([]*audit.Analysis{r, r}).Render(&buf, JSON, Options{}); err != nil {
		t.Fatal(err)
	}
	var arr []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &arr); err != nil || len(arr) != 2 {
		t.Fatalf("%v %d", err, len(arr))
	}
	for _, o := range arr {
		if o["schema_version"] != float64(version.Schema) || o["tool_version"] != version.Tool() || o["window_ns"] != float64(7) {
			t.Errorf("%v", o)
		}
	}
	buf.Reset()
	if err := ForValue(struct{}{}).Render(&buf, JSON, Options{}); err != nil || buf.String() != "{\n  \"schema_version\": 1,\n  \"tool_version\": "+quote(version.Tool())+"\n}\n" {
		t.Errorf("empty object: %v %q", err, buf.String())
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
