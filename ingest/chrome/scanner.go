package chrome

import (
	"errors"
	"fmt"
	"io"

	"github.com/traceaudit/traceaudit/internal/hugepage"
)

// input reads the trace once, front to back, through buffers it owns; the
// top level is tokenized from them (toplevel.go), and the events array is
// handed to workers a buffer at a time (chunks.go). The byte classes here
// are shared by all the scanning code.

// defaultBufSize is the size of one read buffer, and so about the size of
// the chunk of event text a worker parses at a time. Buffers start at
// minBufSize and double with each chunk, so that small inputs stay cheap.
const (
	defaultBufSize = 2 << 20
	minBufSize     = 64 << 10
)

// progressStep is how many bytes pass between Progress callbacks.
const progressStep = 8 << 20

// input is a forward-only buffered view of the reader.
type input struct {
	r     io.Reader
	buf   []byte // buf[pos:end] is read but not consumed
	pos   int
	end   int
	base  int64 // offset in the input of buf[0]
	eof   bool  // the reader is exhausted
	err   error // a read error other than the end of the input
	free  chan []byte
	size  int   // buffer size
	total int64 // input size for progress, -1 if unknown
	next  int64 // offset of the next Progress callback
	prog  func(done, total int64)
}

func newInput(r io.Reader, size int64, bufSize int, prog func(done, total int64)) *input {
	if bufSize <= 0 {
		bufSize = defaultBufSize
	}
	in := &input{r: r, total: -1, next: progressStep, prog: prog, free: make(chan []byte, 16), size: bufSize}
	first := min(bufSize, minBufSize)
	if size > 0 {
		in.total = size
		first = int(min(int64(bufSize), max(size+1, int64(first))))
	}
	in.buf = make([]byte, first)
	return in
}

// offset is the input offset of buf[i].
func (in *input) offset(i int) int64 { return in.base + int64(i) }

// getBuf returns a free buffer of at least n bytes.
func (in *input) getBuf(n int) []byte {
	select {
	case b := <-in.free:
		if len(b) >= n {
			return b
		}
	default:
	}
	if n == defaultBufSize {
		return hugepage.Bytes(n) // one huge page
	}
	return make([]byte, n)
}

// putBuf returns a buffer for reuse. Safe for concurrent use.
func (in *input) putBuf(b []byte) {
	if len(b) != in.size {
		return // let oversized buffers go
	}
	select {
	case in.free <- b:
	default:
	}
}

// release gives back the huge pages of the buffers kept for reuse, once
// the input is read: nothing holds them (a buffer is reused only once its
// chunk is parsed), and no collection would free them before the analysis
// ends.
func (in *input) release() {
	for {
		select {
		case b := <-in.free:
			hugepage.Free(b)
		default:
			return
		}
	}
}

// fill reads more input into buf[end:], first moving buf[keep:end] to the
// front of the buffer (into a fresh buffer when fresh is set, leaving the
// old one to whoever holds it). It grows the buffer when keep is 0 and the
// buffer is full. It returns the shift applied to buffer indexes (subtract
// it from positions), and false at the end of the input.
func (in *input) fill(keep int, fresh bool) (shift int, ok bool) {
	if in.eof {
		return 0, false
	}
	n := in.end - keep
	if fresh || keep > 0 || in.end == len(in.buf) {
		size := len(in.buf)
		if fresh && size < in.size {
			size = min(2*size, in.size)
		}
		if n > size/2 {
			size *= 2
		}
		nb := in.buf
		if fresh || size != len(in.buf) {
			nb = in.getBuf(size)
		}
		copy(nb, in.buf[keep:in.end])
		in.buf = nb
		in.base += int64(keep)
		in.pos -= keep
		in.end = n
		shift = keep
	}
	for zeros := 0; in.end < len(in.buf); {
		m, err := in.r.Read(in.buf[in.end:])
		if m < 0 || m > len(in.buf)-in.end {
			in.err = errors.New("read: invalid count from reader")
			in.eof = true
			break
		}
		in.end += m
		if err != nil {
			in.eof = true
			switch {
			case errors.Is(err, io.EOF):
			case errors.Is(err, io.ErrUnexpectedEOF):
				// A gzip stream cut short: the input is truncated.
			default:
				in.err = fmt.Errorf("read: %w", err)
			}
			break
		}
		if m == 0 {
			if zeros++; zeros == 100 {
				in.err = fmt.Errorf("read: %w", io.ErrNoProgress)
				in.eof = true
				break
			}
			continue
		}
		if in.end-n >= len(in.buf)/2 || in.end == len(in.buf) {
			break // enough new data to work on
		}
	}
	if done := in.offset(in.end); in.prog != nil && done >= in.next {
		in.prog(done, in.total)
		in.next = (done/progressStep + 1) * progressStep
	}
	return shift, in.end > in.pos || !in.eof
}

// peek returns the next byte without consuming it; ok is false at the end
// of the input.
func (in *input) peek() (byte, bool) {
	for in.pos >= in.end {
		if _, ok := in.fill(in.pos, false); !ok {
			return 0, false
		}
	}
	return in.buf[in.pos], true
}

// ensure reads until at least n bytes are unconsumed; false at the end of
// the input.
func (in *input) ensure(n int) bool {
	for in.end-in.pos < n {
		if _, ok := in.fill(in.pos, false); !ok || in.eof && in.end-in.pos < n {
			return false
		}
	}
	return true
}

// skipSpace skips JSON whitespace and returns the next byte, unconsumed.
func (in *input) skipSpace() (byte, bool) {
	for {
		c, ok := in.peek()
		if !ok {
			return 0, false
		}
		if c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			return c, true
		}
		in.pos++
	}
}

// drainRest reads the rest of the input and returns how many bytes it had
// beyond what is buffered.
func (in *input) drainRest() int64 {
	var n int64
	var tmp [32 << 10]byte
	for zeros := 0; !in.eof && zeros < 100; {
		m, err := in.r.Read(tmp[:])
		if m > 0 && m <= len(tmp) {
			n += int64(m)
			zeros = 0
		} else {
			zeros++
		}
		if err != nil {
			in.eof = true
		}
	}
	return n
}

// resume returns an input that reads data, which starts at input offset
// base, and then the rest of in.
func (in *input) resume(data []byte, base int64) *input {
	n := *in
	n.buf, n.pos, n.end, n.base = data, 0, len(data), base
	if len(n.buf) == 0 {
		n.buf = make([]byte, minBufSize)
	}
	return &n
}

// byteClass classifies a byte outside strings.
type byteClass uint8

const (
	clInvalid byteClass = iota
	clSpace
	clQuote
	clOpen
	clClose
	clPunct  // , :
	clScalar // digits, signs, '.', letters of literals and numbers
	clNUL    // a NUL byte: zero-filled tail of a file cut by a crash
)

var classes = func() (t [256]byteClass) {
	for _, c := range " \t\r\n" {
		t[c] = clSpace
	}
	t['"'] = clQuote
	t['{'], t['['] = clOpen, clOpen
	t['}'], t[']'] = clClose, clClose
	t[','], t[':'] = clPunct, clPunct
	for c := '0'; c <= '9'; c++ {
		t[c] = clScalar
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = clScalar
		t[c-'a'+'A'] = clScalar
	}
	t['-'], t['+'], t['.'] = clScalar, clScalar, clScalar
	t[0] = clNUL
	return t
}()

// describe names the JSON type that starts with byte c, for errors.
func describe(c byte) string {
	switch {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == '-' || isDigit(c):
		return "number"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	}
	return fmt.Sprintf("invalid character %q", c)
}
