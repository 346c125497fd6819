package ingest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math/rand"
	"testing"
	"time"
)

func gz(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// readAll reads r in reads of odd sizes, as the parser's buffers do.
func readAll(r io.Reader) ([]byte, error) {
	var out []byte
	buf := make([]byte, 70001)
	for i := 0; ; i++ {
		n, err := r.Read(buf[:1+(i*7919)%len(buf)])
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// withTimeout fails the test instead of hanging when fn deadlocks.
func withTimeout(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a deadlock, not a slow run (the race detector on a busy machine)
		t.Fatal("gunzip hung")
	}
}

func TestGunzipRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, gunzipBlock - 1, gunzipBlock, gunzipBlock + 1, 3*gunzipBlock + 12345} {
		data := make([]byte, n)
		for i := range data {
			data[i] = "{}[],:\"abc0123 \n"[r.Intn(16)]
		}
		withTimeout(t, func() {
			g, err := newGunzip(bytes.NewReader(gz(t, data)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := readAll(g)
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("%d bytes: read %d bytes, err %v", n, len(got), err)
			}
			if lost := g.Close(); lost != nil {
				t.Errorf("%d bytes: Close: %v", n, lost)
			}
		})
	}
}

// Concatenated gzip members read as one stream, as gzip(1) does.
func TestGunzipMultistream(t *testing.T) {
	a, b := bytes.Repeat([]byte("first "), 300000), bytes.Repeat([]byte("second "), 200000)
	withTimeout(t, func() {
		g, err := newGunzip(bytes.NewReader(append(gz(t, a), gz(t, b)...)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAll(g)
		if err != nil || !bytes.Equal(got, append(a, b...)) {
			t.Errorf("read %d bytes, err %v", len(got), err)
		}
		g.Close()
	})
}

// A file cut short reads as a shorter stream that ends cleanly, and Close
// says it was truncated; a corrupt one is an error.
func TestGunzipTruncatedAndCorrupt(t *testing.T) {
	data := bytes.Repeat([]byte(`{"ph": "X", "name": "aten::mm", "ts": 1.5},`), 200000)
	z := gz(t, data)
	withTimeout(t, func() {
		g, err := newGunzip(bytes.NewReader(z[:len(z)/2]))
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAll(g)
		if err != nil || len(got) == 0 || len(got) >= len(data) || !bytes.Equal(got, data[:len(got)]) {
			t.Errorf("truncated: read %d of %d bytes, err %v", len(got), len(data), err)
		}
		if lost := g.Close(); !errors.Is(lost, io.ErrUnexpectedEOF) {
			t.Errorf("truncated: Close = %v, want io.ErrUnexpectedEOF", lost)
		}
	})
	bad := bytes.Clone(z)
	for i := len(bad) / 3; i < len(bad)/3+64; i++ {
		bad[i] ^= 0x5a
	}
	withTimeout(t, func() {
		g, err := newGunzip(bytes.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := readAll(g); err == nil && g.Close() == nil {
			t.Error("corrupt data read without an error")
		}
		g.Close()
	})
	if _, err := newGunzip(bytes.NewReader([]byte("not gzip at all"))); err == nil {
		t.Error("plain text accepted as gzip")
	}
}

// Close while the decompressor is ahead of the reader returns at once.
func TestGunzipEarlyClose(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), gunzipBlock/2) // 8 blocks
	withTimeout(t, func() {
		g, err := newGunzip(bytes.NewReader(gz(t, data)))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1000)
		if _, err := g.Read(buf); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // let it fill every block
		if lost := g.Close(); lost != nil {
			t.Errorf("Close: %v", lost)
		}
	})
}
