package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/traceaudit/traceaudit/internal/testing/testfix"
	"github.com/traceaudit/traceaudit/replay"
)

func TestColorAllowed(t *testing.T) {
	for _, c := range []struct {
		tty           bool
		noColor, term string
		want          bool
	}{
		{true, "", "xterm-256color", true},
		{true, "1", "xterm", false},
		{true, "", "dumb", false},
		{false, "", "xterm", false},
	} {
		if got := colorAllowed(c.tty, c.noColor, c.term); got != c.want {
			t.Errorf("%+v: %v", c, got)
		}
	}
}

// TestSeverityColors: on a colour terminal the severities are coloured;
// otherwise (a pipe, NO_COLOR) the text has no escape at all.
func TestSeverityColors(t *testing.T) {
	t.Chdir(testfix.Root())
	r0 := "fixtures/r0_baseline.pt.trace.json.gz"
	var plain, colored bytes.Buffer
	Run([]string{"analyze", r0}, &IO{Out: &plain, Err: &bytes.Buffer{}})
	Run([]string{"analyze", r0}, &IO{Out: &colored, Err: &bytes.Buffer{}, Color: true})
	if strings.Contains(plain.String(), "\x1b") {
		t.Error("escape sequences without a colour terminal")
	}
	for _, want := range []string{"\x1b[1;31mERROR  \x1b[0m dataloader-wait", "\x1b[34mINFO   \x1b[0m"} {
		if !strings.Contains(colored.String(), want) {
			t.Errorf("coloured output lacks %q", want)
		}
	}
	strip := strings.NewReplacer("\x1b[1;31m", "", "\x1b[1;33m", "", "\x1b[34m", "", "\x1b[0m", "")
	if strip.Replace(colored.String()) != plain.String() {
		t.Error("colours change more than the severities")
	}
	// JSON and Markdown are never coloured.
	var js bytes.Buffer
	Run([]string{"analyze", "--format", "json", r0}, &IO{Out: &js, Err: &bytes.Buffer{}, Color: true})
	if strings.Contains(js.String(), "\x1b") {
		t.Error("colours in JSON")
	}
	// diff statuses.
	var d bytes.Buffer
	Run([]string{"diff", r0, "fixtures/r3_streams.pt.trace.json.gz"}, &IO{Out: &d, Err: &bytes.Buffer{}, Color: true})
	if !strings.Contains(d.String(), "\x1b[32mresolved\x1b[0m") {
		t.Errorf("diff: resolved not green:\n%s", d.String())
	}
}

// TestStdin: "-" reads standard input, the same as the file.
func TestStdin(t *testing.T) {
	t.Chdir(testfix.Root())
	for _, name := range []string{"r0_baseline.pt.trace.json.gz", "b0_pageable_sync.nsys.sqlite"} {
		data, err := os.ReadFile("fixtures/" + name)
		if err != nil {
			t.Fatal(err)
		}
		var viaFile, viaStdin, errb bytes.Buffer
		Run([]string{"analyze", "--format", "json", "fixtures/" + name}, &IO{Out: &viaFile, Err: &errb})
		code := Run([]string{"analyze", "--format", "json", "-"}, &IO{In: bytes.NewReader(data), Out: &viaStdin, Err: &errb})
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errb.String())
		}
		want := strings.Replace(viaFile.String(), `"file": "fixtures/`+name+`"`, `"file": "stdin"`, 1)
		if viaStdin.String() != want {
			t.Errorf("%s: analyze - differs from analyze FILE", name)
		}
		// replay reads it once too (it used to read it again, empty).
		var planFile, planStdin bytes.Buffer
		Run([]string{"replay", "--dry-run", "--format", "json", "fixtures/" + name}, &IO{Out: &planFile, Err: &errb})
		code = Run([]string{"replay", "--dry-run", "--format", "json", "-"}, &IO{In: bytes.NewReader(data), Out: &planStdin, Err: &errb})
		want = strings.Replace(planFile.String(), `"file": "fixtures/`+name+`"`, `"file": "stdin"`, 1)
		if code != 0 || planStdin.String() != want {
			t.Errorf("%s: replay --dry-run - (exit %d, %s) differs from replay --dry-run FILE", name, code, errb.String())
		}
	}
	var errb bytes.Buffer
	code := Run([]string{"stats", "-"}, &IO{In: strings.NewReader("not a trace"), Out: &bytes.Buffer{}, Err: &errb})
	if code != 2 || !strings.HasPrefix(errb.String(), "traceaudit: stdin: not a recognised profile") {
		t.Errorf("bad stdin: %d %q", code, errb.String())
	}
	errb.Reset()
	code = Run([]string{"stats", "-"}, &IO{In: os.Stdin, InTTY: true, Out: &bytes.Buffer{}, Err: &errb})
	if code != 2 || !strings.Contains(errb.String(), "standard input is a terminal") {
		t.Errorf("terminal stdin: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := Run([]string{"diff", "-", "-"}, &IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &errb}); code != 2 || !strings.Contains(errb.String(), "read once") {
		t.Errorf("diff - -: %d %q", code, errb.String())
	}
}

// TestExamplesAndCompletion: every command has examples, and flag values
// complete.
func TestExamplesAndCompletion(t *testing.T) {
	root := NewRoot(&IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || strings.HasPrefix(c.Name(), "__") || c.Name() == "completion" || c.HasParent() && c.Parent().Name() == "completion" {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no examples", c.CommandPath())
		}
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "#") && !strings.Contains(line, "traceaudit") {
				t.Errorf("%s: example line %q does not run traceaudit", c.CommandPath(), line)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"analyze", "--format", ""}, []string{"text", "markdown", "json"}},
		{[]string{"diff", "--fail-on", "w"}, []string{"warning"}},
		{[]string{"analyze", "--fail-on", ""}, []string{"info", "warning", "error"}},
		{[]string{"stats", "--report", "c"}, []string{"copies"}},
		{[]string{"stats", "--format", ""}, []string{"text", "csv", "json"}},
		{[]string{"replay", "--format", "m"}, []string{"markdown"}},
		{[]string{"replay", "--variants", "pinned,p"}, []string{"pinned,pinned-copy-stream", "pinned,prefetch-workers"}},
		{[]string{"replay", "--variants", ""}, replay.Names()},
		{[]string{"job", "--format", "j"}, []string{"json"}},
		{[]string{"job", "--fail-on", "e"}, []string{"error"}},
	} {
		var out bytes.Buffer
		Run(append([]string{"__complete"}, c.args...), &IO{Out: &out, Err: &bytes.Buffer{}})
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if !strings.HasPrefix(l, ":") {
				got = append(got, l)
			}
		}
		for _, w := range c.want {
			if !strings.Contains("\n"+strings.Join(got, "\n")+"\n", "\n"+w+"\n") {
				t.Errorf("complete %q: %q lacks %q", c.args, got, w)
			}
		}
	}
}
