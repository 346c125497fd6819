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
