package chrome

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/timeline"
)

func parseString(s string, opts Options) (*timeline.Timeline, []string, error) {
	var warns []string
	opts.Warn = func(m string) { warns = append(warns, m) }
	tl, err := Parse(strings.NewReader(s), timeline.Source{Path: "x.json"}, opts)
	if err == nil {
		if verr := tl.Validate(); verr != nil {
			return nil, warns, fmt.Errorf("returned timeline does not validate: %w", verr)
		}
	}
	return tl, warns, err
}

// ev builds one event object from name=value pairs (values are raw JSON).
func ev(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %s", kv[i], kv[i+1])
	}
	b.WriteByte('}')
	return b.String()
}

func trace(events ...string) string {
	return `{"schemaVersion": 1, "traceEvents": [` + strings.Join(events, ",\n") + `]}`
}

var (
	kernel = ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7", "ts", "10.5", "dur", "2", "args", `{"correlation": 5}`)
	launch = ev("ph", `"X"`, "cat", `"cuda_runtime"`, "name", `"cudaLaunchKernel"`, "pid", "100", "tid", "100", "ts", "10", "dur", "0.25", "args", `{"correlation": 5}`)
)

func TestParseErrors(t *testing.T) {
	good := strings.Repeat(launch+",", 17)
	cases := []struct{ in, want string }{
		{"", "chrome: empty input"},
		{" \n\t ", "chrome: empty input"},
		{"hello", "chrome: want a JSON object or array at the top level, got invalid character 'h'"},
		{"42", "chrome: want a JSON object or array at the top level, got number"},
		{`"traceEvents"`, "got string"},
		{`{"foo": 1}`, "chrome: no traceEvents array: not a Chrome trace"},
		{`{}`, "chrome: no traceEvents array"},
		{`{"traceEvents": {}}`, "chrome: traceEvents: want an array, got object"},
		{`{"traceEvents": 3}`, "chrome: traceEvents: want an array, got number"},
		{`{"traceEvents": [1]}`, "chrome: traceEvents[0]: want an object, got number"},
		{`{"traceEvents": [{}, "x"]}`, "chrome: traceEvents[1]: want an object, got string"},
		{`{"schemaVersion": 1, "deviceProp`, "chrome: unexpected end of input at byte 32, before traceEvents"},
		{`{"a" 1, "traceEvents": []}`, `chrome: a: want ':', got number at byte 5`},
		{`{"traceEvents": []} x`, "chrome: unexpected data after the end of the trace at byte 20"},
		{`{"traceEvents": []}{}`, "after the end of the trace"},
		{`{"traceEvents": [{"args": [}]}`, "chrome: traceEvents[0]: unexpected '}' at byte 27"},
		{`{"traceEvents": [{"ph": "X" @}]}`, `chrome: traceEvents[0]: want ',' or '}' after the value of "ph", got invalid character '@' at byte 28`},
		{`{"traceEvents": [{"ph": "X", "x": tru}]}`, `chrome: traceEvents[0]: invalid literal "tru" at byte 34`},
		{`{"traceEvents": [{"ph": "X", "ph" "X"}]}`, `chrome: traceEvents[0]: want ':' after key "ph", got string at byte 34`},
		{`{"traceEvents": [{"ph": "X",}]}`, `chrome: traceEvents[0]: want a key, got invalid character '}' at byte 28`},
		{`{"traceEvents": [{} {}]}`, "chrome: traceEvents: want ',' or ']' after element 0, got object at byte 20"},
		{trace(good + ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7", "ts", "{}", "dur", "1")),
			"chrome: traceEvents[17].ts: want a number, got object"},
		{trace(ev("ph", `"X"`, "cat", `"cpu_op"`, "name", "12", "pid", "1", "tid", "1", "ts", "1")), "chrome: traceEvents[0].name: want a string, got number"},
		{trace(ev("ph", "1", "name", `"x"`)), "chrome: traceEvents[0].ph: want a string, got number"},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7", "ts", "1", "dur", "-3")), "chrome: traceEvents[0].dur: negative duration -3"},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7", "ts", "NaN")), "chrome: traceEvents[0]: want a value, got invalid character 'N' at byte 105"},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7", "ts", "1e400")), "chrome: traceEvents[0].ts: out of range: \"1e400\""},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7", "ts", "9999999999999999")), "chrome: traceEvents[0].ts: out of range"},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7", "ts", `"12"`)), "chrome: traceEvents[0].ts: want a number, got string"},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7")), "chrome: traceEvents[0].ts: missing"},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", `"stream x"`, "ts", "1")), "chrome: traceEvents[0].tid: want a numeric thread or stream id, got \"stream x\""},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "ts", "1")), "chrome: traceEvents[0].tid: missing"},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0.5", "tid", "1", "ts", "1")), "chrome: traceEvents[0].pid: want an integer id, got \"0.5\""},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "[]", "tid", "1", "ts", "1")), "chrome: traceEvents[0].pid: want a number or string id, got array"},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7", "ts", "1", "args", `{"correlation": {}}`)), "chrome: traceEvents[0].args.correlation: want an integer, got object"},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7", "ts", "1", "args", `{"correlation": 1.5}`)), "chrome: traceEvents[0].args.correlation: want an integer, got \"1.5\""},
		{trace(ev("ph", `"X"`, "cat", `"gpu_memcpy"`, "name", `"Memcpy HtoD (Pinned -> Device)"`, "pid", "0", "tid", "7", "ts", "1", "args", `{"bytes": -8}`)), "chrome: traceEvents[0].args.bytes: negative size -8"},
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7", "ts", "1", "args", "[1]")), "chrome: traceEvents[0].args: want an object, got array"},
		{`[` + ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7", "ts", `"x"`) + `]`, "chrome: [0].ts: want a number, got string"},
		{`{"deviceProperties": 5, "traceEvents": []}`, "chrome: deviceProperties: want an array, got number"},
		{`{"deviceProperties": [{"id": "zero"}], "traceEvents": []}`, "chrome: deviceProperties[0].id: want an integer, got \"\\\"zero\\\"\""},
		{`{"baseTimeNanoseconds": {}, "traceEvents": []}`, "chrome: baseTimeNanoseconds: want an integer, got object"},
		{`{"baseTimeNanoseconds": "soon", "traceEvents": []}`, "chrome: baseTimeNanoseconds: want an integer, got \"soon\""},
		{`{"baseTimeNanoseconds": 4611686018427387904, "traceEvents": [` + kernel + `]}`, "chrome: baseTimeNanoseconds 4611686018427387904 puts event times beyond 2^62 ns"},
		// An event error before a syntax error later in the same buffer wins.
		{trace(ev("ph", `"X"`, "cat", `"kernel"`, "name", `"k"`, "pid", "0", "tid", "7", "ts", "1", "dur", "-1"), "@"), "chrome: traceEvents[0].dur: negative duration -1"},
	}
	for _, c := range cases {
		for _, size := range []int{0, 7} {
			tl, _, err := parseString(c.in, Options{bufSize: size})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(%.60q) [buffer %d] = %v, %v\nwant error containing %q", c.in, size, tl != nil, err, c.want)
			}
		}
	}
}

func TestBaseTimeBeforeOrAfterEvents(t *testing.T) {
	events := `"traceEvents": [` + kernel + "," + launch + `]`
	for _, in := range []string{
		`{"baseTimeNanoseconds": 1790857026000000000, ` + events + `}`,
		`{` + events + `, "displayTimeUnit": "ms", "baseTimeNanoseconds": 1790857026000000000}`,
		`{` + events + `, "baseTimeNanoseconds": "1790857026000000000"}`,
	} {
		tl, warns, err := parseString(in, Options{})
		if err != nil || len(warns) > 0 {
			t.Fatalf("%v %v", err, warns)
		}
		if got := tl.Events[0].Start; got != 1790857026000010000 || tl.Events[1].Start != 1790857026000010500 || tl.Events[1].End != 1790857026000012500 {
			t.Errorf("%.40q: starts %d, %d", in, got, tl.Events[1].Start)
		}
		if tl.Source.Version != "kineto-2024" {
			t.Errorf("version %q", tl.Source.Version)
		}
	}
}

func TestSmallTraces(t *testing.T) {
	for _, in := range []string{`{"traceEvents": []}`, `[]`, "\ufeff[]", `{"traceEvents": [], "traceEvents": []}`, " [ ] \n", `[{}]`, `[{},]`} {
		tl, warns, err := parseString(in, Options{})
		if err != nil || len(tl.Events) != 0 || len(warns) != 0 {
			t.Errorf("%q: %v events, %v, %v", in, tl, warns, err)
		}
	}
	in := trace(
		launch, kernel,
		ev("ph", `"X"`, "cat", `"cpu_op"`, "name", `"aten::mm"`, "pid", "100", "tid", `"100"`, "ts", "9"), // no dur: 0
		ev("ph", `"i"`, "name", `"marker"`, "pid", "100", "tid", "100", "ts", "11", "s", `"t"`),
		ev("ph", `"i"`, "name", `"Iteration Start: PyTorch Profiler"`, "pid", `"Traces"`, "tid", `"x"`, "ts", "1", "s", `"g"`),
		ev("ph", `"i"`, "cat", `"cpu_instant_event"`, "name", `"[memory]"`, "pid", "100", "tid", "100", "ts", "1"),
		ev("ph", `"X"`, "cat", `"Trace"`, "name", `"PyTorch Profiler (0)"`, "pid", `"Spans"`, "tid", `"PyTorch Profiler"`, "ts", "1", "dur", "100"),
		ev("ph", `"X"`, "cat", `"kernel"`, "name", `"on a span row"`, "pid", `"Spans"`, "tid", "1", "ts", "1"),
		ev("ph", `"s"`, "cat", `"ac2g"`, "name", `"ac2g"`, "id", "5", "pid", "100", "tid", "100", "ts", "10"),
		ev("ph", `"X"`, "cat", `"mtia_runtime"`, "name", `"x"`, "pid", "1", "tid", "1", "ts", "1"),
		ev("ph", `"X"`, "cat", `"mtia_runtime"`, "name", `"y"`, "pid", "1", "tid", "1", "ts", "1"),
		ev("ph", `"X"`, "name", `"no category"`, "pid", "1", "tid", "1", "ts", "1"),
		ev("ph", `"M"`, "name", `"thread_name"`, "pid", "100", "tid", "100", "args", `{"name": "thread 100 (trainer)"}`),
		ev("ph", `"M"`, "name", `"thread_name"`, "pid", "0", "tid", "7", "args", `{"name": "stream 7 "}`),
	)
	tl, warns, err := parseString(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range tl.Events {
		e := &tl.Events[i]
		got = append(got, fmt.Sprintf("%s %q %d-%d %s link=%d", e.Kind, tl.EventName(int32(i)), e.Start, e.End, tl.TrackOf(int32(i)).Label(), e.Link))
	}
	want := []string{
		`op "aten::mm" 9000-9000 host/100/100 (trainer) link=-1`,
		`api "cudaLaunchKernel" 10000-10250 host/100/100 (trainer) link=2`,
		`kernel "k" 10500-12500 gpu0/stream7 link=1`,
		`marker "marker" 11000-11000 host/100/100 (trainer) link=-1`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantWarn := `skipped 3 events of categories traceaudit does not read: "mtia_runtime" x2, "(none)" x1`
	if len(warns) != 1 || warns[0] != wantWarn {
		t.Errorf("warnings %q\nwant %q", warns, wantWarn)
	}
	// The PyTorch profiler records its own ranges, never OS calls or NVTX,
	// whatever this trace holds.
	if o := tl.Observed; !o.CanAnnotations || o.CanOSCalls || o.CanNVTX {
		t.Errorf("capabilities %+v", o)
	}
	if tl.Source.Version != "kineto-2024" || tl.Events[1].API != timeline.APILaunch {
		t.Errorf("version %q, API %v", tl.Source.Version, tl.Events[1].API)
	}
}

func TestMemcpyNames(t *testing.T) {
	cases := map[string]string{
		"Memcpy HtoD (Pageable -> Device)": "HtoD pageable device",
		"Memcpy HtoD (Pinned -> Device)":   "HtoD pinned device",
		"Memcpy DtoH (Device -> Pageable)": "DtoH device pageable",
		"Memcpy DtoD (Device -> Device)":   "DtoD device device",
		"Memcpy HtoH (Pinned -> Pinned)":   "HtoH pinned pinned",
		"Memcpy PtoP (Device -> Device)":   "PtoP device device",
		"Memcpy HtoD (Host -> Device)":     "HtoD host device",
		"Memcpy DtoH (Device -> Managed)":  "DtoH device managed",
		"Memcpy AtoD (Array -> Device)":    "array array device",
		"Memcpy HtoD (Unknown -> Device)":  "HtoD unknown device",
		"Memcpy HtoD":                      "HtoD unknown unknown",
		"Memcpy XtoY (Foo -> Bar)":         "unknown unknown unknown",
		"Memcpy ":                          "unknown unknown unknown",
	}
	for name, want := range cases {
		c, s, d := parseMemcpyName(name)
		if got := fmt.Sprint(c, " ", s, " ", d); got != want {
			t.Errorf("%q: %s, want %s", name, got, want)
		}
	}
	for name, want := range map[string]timeline.MemKind{"Memset (Device)": timeline.MemDevice, "Memset (Unknown)": timeline.MemUnknown, "Memset (Managed)": timeline.MemManaged, "Memset": timeline.MemUnknown} {
		if got := parseMemsetName(name); got != want {
			t.Errorf("%q: %v, want %v", name, got, want)
		}
	}
}

func TestThreadLabel(t *testing.T) {
	cases := map[string]string{
		"thread 4515 (python3.8)":    "python3.8",
		"thread 0 (python)":          "python",
		"thread 692 (pt_autograd_0)": "pt_autograd_0",
		"thread 12":                  "thread 12",
		"trainer":                    "trainer",
		"stream 7 ":                  "",
		"Device 0":                   "",
		"":                           "",
	}
	for in, want := range cases {
		got, ok := threadLabel(in)
		if got != want || ok != (want != "") {
			t.Errorf("threadLabel(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
