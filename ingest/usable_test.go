package ingest

import (
	"errors"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/timeline/timelinetest"
)

// Usable refuses timestamps no profiler writes (before the clock's start,
// or a span of more than a week: a corrupt value or merged traces) and
// names the events at the ends; a trace of plausible times passes, and one
// without GPU work is refused for that.
func TestUsableTimes(t *testing.T) {
	const day = 24 * 3600 * 1_000_000_000
	for _, c := range []struct {
		name        string
		first, last int64 // the kernel's and the API call's start
		want        string
	}{
		{"plausible", 1000, 5 * timelinetest.Ms, ""},
		{"a week", 0, MaxSpanNS - 10, ""},
		{"negative", -5, 5 * timelinetest.Ms, `timestamps out of range: kernel "gemm" starts at -5 ns, before the clock's start`},
		{"months", 1000, 58 * day, `timestamps out of range: the events span 5011200 s, from kernel "gemm" to api "cudaDeviceSynchronize"`},
	} {
		b := timelinetest.New()
		h := b.Thread(1, 1, "python")
		s := b.Stream(0, 7)
		b.Launch(h, s, "gemm", c.first+1, c.first+2, c.first, c.first+5)
		b.API(h, "cudaDeviceSynchronize", c.last, c.last+5)
		err := Usable(b.Build(t))
		var ie *Error
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.As(err, &ie) || ie.Path != "synthetic" || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	b := timelinetest.New()
	b.API(b.Thread(1, 1, ""), "cudaFree", 10, 20)
	if err := Usable(b.Build(t)); !errors.Is(err, ErrNoGPUWork) {
		t.Errorf("no GPU work: %v", err)
	}
}
