package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/analyze/audit"
	"github.com/traceaudit/traceaudit/internal/version"
)

func TestRenderUnsupported(t *testing.T) {
	r := &audit.Analysis{File: "a.json", Findings: nil}
	for _, c := range []struct {
		f   Format
		doc any
	}{{Text, struct{}{}}, {Markdown, 42}, {CSV, r}, {"yaml", r}, {JSON, []int{1}}} {
		var buf bytes.Buffer
		if err := Render(&buf, c.f, c.doc, Options{}); !errors.Is(err, ErrFormat) {
			t.Errorf("%s of %T: %v, want ErrFormat", c.f, c.doc, err)
		}
		if buf.Len() != 0 {
			t.Errorf("%s of %T wrote %q", c.f, c.doc, buf.String())
		}
	}
}

// TestRenderJSONStamped: every JSON document starts with schema_version
// and tool_version; several reports are an array of stamped objects.
func TestRenderJSONStamped(t *testing.T) {
	r := &audit.Analysis{File: "a.json", Format: "chrome-trace", WindowNS: 7}
	var buf bytes.Buffer
	if err := Render(&buf, JSON, r, Options{}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"schema_version\": 1,\n  \"tool_version\": " + quote(version.Tool()) + ",\n  \"file\": \"a.json\",\n"
	if !strings.HasPrefix(buf.String(), want) || !strings.HasSuffix(buf.String(), "}\n") {
		t.Errorf("got\n%s\nwant it to start with\n%s", buf.String(), want)
	}
	buf.Reset()
	if err := Render(&buf, JSON, []*audit.Analysis{r, r}, Options{}); err != nil {
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
	if err := Render(&buf, JSON, struct{}{}, Options{}); err != nil || buf.String() != "{\n  \"schema_version\": 1,\n  \"tool_version\": "+quote(version.Tool())+"\n}\n" {
		t.Errorf("empty object: %v %q", err, buf.String())
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
