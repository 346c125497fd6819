package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
)

// A .json.gz trace is decompressed on its own goroutine, a block ahead of
// the parser, so that decompression and parsing overlap; the parser takes
// whole blocks instead of a pipe's small writes.
//
// The decompressor is klauspost/compress's (pure Go). On the 252 MB tiled
// benchmark trace it inflates about 15 % faster per core than
// compress/gzip; pgzip (the same inflater plus a goroutine for the CRC)
// used more CPU in all, which the parser's workers need (make bench).

const (
	gunzipBlock  = 1 << 20 // bytes per block handed to the parser
	gunzipBlocks = 2       // blocks decompressed ahead at most
)

// gunzip reads the decompressed text of a gzip file on a goroutine.
type gunzip struct {
	counted *countingReader // the compressed input
	full    chan []byte     // decompressed blocks, in order
	free    chan []byte     // blocks the parser is done with
	stop    chan struct{}   // closed by Close
	done    chan struct{}   // closed when the goroutine returns
	block   []byte          // the block being read, whole
	cur     []byte          // its unread part
	err     error           // the end: io.EOF or a read error, once full is drained
	lost    error           // why the stream ended early (truncated or corrupt tail)
	closed  atomic.Bool
}

// newGunzip starts decompressing r. The gzip header is read before it
// returns, so that a file that is not gzip fails here.
func newGunzip(r io.Reader) (*gunzip, error) {
	counted := &countingReader{r: bufio.NewReaderSize(r, 1<<20)}
	zr, err := gzip.NewReader(counted)
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	zr.Multistream(true)
	g := &gunzip{counted: counted, full: make(chan []byte, gunzipBlocks), free: make(chan []byte, gunzipBlocks+1),
		stop: make(chan struct{}), done: make(chan struct{})}
	for range gunzipBlocks + 1 {
		g.free <- make([]byte, gunzipBlock)
	}
	go g.run(zr)
	return g, nil
}

// run decompresses into free blocks until the end of the stream, an
// error, or Close.
func (g *gunzip) run(zr *gzip.Reader) {
	defer close(g.done)
	defer close(g.full)
	for {
		var buf []byte
		select {
		case buf = <-g.free:
		case <-g.stop:
			return
		}
		n := 0
		var err error
		for n < len(buf) && err == nil {
			var m int
			m, err = zr.Read(buf[n:])
			n += m
		}
		if n > 0 {
			select {
			case g.full <- buf[:n]:
			case <-g.stop:
				return
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum):
			// A truncated .gz: hand over what decompressed and let the
			// parser keep the complete events.
			g.lost = err
			return
		default:
			g.lost = err
			return
		}
	}
}

// Read implements io.Reader over the decompressed blocks. A stream that
// ends early reads as a short one (see truncation); a corrupt one as an
// error.
func (g *gunzip) Read(p []byte) (int, error) {
	for len(g.cur) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		if g.block != nil {
			g.free <- g.block[:cap(g.block)]
			g.block = nil
		}
		b, ok := <-g.full
		if !ok {
			// g.lost is set before full is closed.
			g.err = io.EOF
			if g.lost != nil && !g.truncation() {
				g.err = fmt.Errorf("gzip: %w", g.lost)
			}
			return 0, g.err
		}
		g.block, g.cur = b, b
	}
	n := copy(p, g.cur)
	g.cur = g.cur[n:]
	return n, nil
}

// truncation reports whether the stream ended early in the way a file cut
// short does (as opposed to corrupt data). Only valid once full is closed.
func (g *gunzip) truncation() bool {
	return g.lost != nil && (errors.Is(g.lost, io.ErrUnexpectedEOF) || errors.Is(g.lost, gzip.ErrChecksum))
}

// Close stops the decompressor and waits for it. It returns the reason the
// stream ended early when it was cut short (nil otherwise).
func (g *gunzip) Close() error {
	if g.closed.CompareAndSwap(false, true) {
		close(g.stop)
	}
	<-g.done
	if g.truncation() {
		return g.lost
	}
	return nil
}

// countingReader counts the bytes read through it; the count may be read
// from another goroutine.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
