package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestBarWaitsThenThrottlesThenErases(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "reading x", true)
	clock := b.start
	b.now = func() time.Time { return clock }
	b.Update(1, 10)
	if buf.Len() != 0 {
		t.Fatalf("shown before the delay: %q", buf.String())
	}
	clock = clock.Add(1500 * time.Millisecond)
	b.Update(5, 10)
	if !strings.Contains(buf.String(), "reading x  50.0 %") {
		t.Fatalf("got %q", buf.String())
	}
	n := buf.Len()
	clock = clock.Add(10 * time.Millisecond)
	b.Update(6, 10)
	if buf.Len() != n {
		t.Fatal("not throttled")
	}
	b.Done()
	if !strings.HasSuffix(buf.String(), "\r\x1b[K") {
		t.Fatalf("not erased: %q", buf.String())
	}
}

func TestNilBarIsQuiet(t *testing.T) {
	var b *Bar = New(nil, "x", false)
	b.Update(1, 2)
	b.Done()
}

func TestRelabelAndElapsedOnly(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "exporting r.nsys-rep with nsys", true)
	clock := b.start
	b.now = func() time.Time { return clock }
	clock = clock.Add(2300 * time.Millisecond)
	b.Update(0, 0)
	if got := buf.String(); got != "\rexporting r.nsys-rep with nsys (2.3s)\x1b[K" {
		t.Fatalf("got %q", got)
	}
	b.Relabel("reading r.nsys-rep")
	clock = clock.Add(time.Second)
	b.Update(1, 4)
	if !strings.Contains(buf.String(), "\rreading r.nsys-rep  25.0 % (3.3s)") {
		t.Fatalf("got %q", buf.String())
	}
}
