package chrome

import (
	"bytes"
	"fmt"
	"runtime"

	"github.com/traceaudit/traceaudit/internal/units"
)

// The events array is read in chunks that the workers parse in parallel,
// each finding its own event boundaries. The reader does not scan the
// text: it cuts each buffer at the last place that looks like the start
// of an element, "}, {" followed by a key. A chunk's parse is right only if
// the chunk starts where the previous one ended, between elements, so the
// chunks are accepted in input order and each is checked against the end
// of the one before. A chunk cut in the wrong place (the pattern inside a
// string) is parsed again, in this goroutine, from the last complete
// element before it. Real traces are cut right every time; the check makes
// odd ones correct.

// maxEventSize bounds one event's text (Kineto's largest are a few kB).
const maxEventSize = 256 << 20

// findCut returns the index in b of the last '{' after lo that is preceded
// by "}," and followed by a quote (spaces allowed between), or -1.
func findCut(b []byte, lo int) int {
	for j := len(b); j > lo; {
		k := bytes.LastIndexByte(b[lo:j], '{')
		if k < 0 {
			return -1
		}
		k += lo
		j = k
		if a := skipSpace(b, k+1); a == len(b) || b[a] != '"' {
			continue
		}
		q := k - 1
		for q > lo && classes[b[q]] == clSpace {
			q--
		}
		if q <= lo || b[q] != ',' {
			continue
		}
		q--
		for q > lo && classes[b[q]] == clSpace {
			q--
		}
		if q >= lo && b[q] == '}' {
			return k
		}
	}
	return -1
}

// events reads the events array, whose '[' is consumed. It returns nil
// after the closing ']' (p.in then continues after it), errEOF or errNUL
// when the input ends first (truncation), or an error.
func (p *parser) events() error {
	in := p.in
	p.endState = stElem
	p.acceptedTo = in.offset(in.pos)
	p.lastGood = p.acceptedTo
	p.carry = nil
	start := stElem
	for {
		if !in.eof && in.end < len(in.buf) {
			in.fill(in.pos, false)
		}
		if in.err != nil {
			// A read error: the events before it come first.
			for len(p.fifo) > 0 {
				if stop := p.verify(true); stop != nil {
					return p.stop(stop)
				}
			}
			return fmt.Errorf("chrome: %w", in.err)
		}
		hi := in.end
		if !in.eof {
			if hi = findCut(in.buf[:in.end], in.pos); hi < 0 {
				if in.end-in.pos > maxEventSize {
					p.drain()
					return fmt.Errorf("chrome: %s: event larger than %d MiB at byte %d", p.evPath(p.nEvents), maxEventSize>>20, in.offset(in.pos))
				}
				in.fill(in.pos, false) // no place to cut: read more, growing the buffer
				continue
			}
		}
		c := &chunk{data: in.buf, lo: in.pos, hi: hi, base: in.base, start: start, final: in.eof}
		start = stElem
		p.dispatch(c)
		if c.final {
			in.pos = in.end
			break
		}
		in.pos = hi
		in.fill(hi, true) // the rest goes to a fresh buffer: this one is the chunk's
		if stop := p.verify(len(p.fifo) >= p.maxInFlight); stop != nil {
			return p.stop(stop)
		}
	}
	for len(p.fifo) > 0 {
		if stop := p.verify(true); stop != nil {
			return p.stop(stop)
		}
	}
	return p.stop(&outcome{eof: true})
}

// outcome is why reading the events array stops.
type outcome struct {
	arrayEnd []byte // the input from just after ']' to the end of what was read
	endAt    int64  // input offset of arrayEnd[0]
	nul      bool   // a NUL byte ends the data
	eof      bool   // the input ends inside the array
	err      error
}

// stop waits for the chunks still in flight, drops them, and acts on o.
func (p *parser) stop(o *outcome) error {
	rest := p.drain()
	switch {
	case o.err != nil:
		return o.err
	case o.arrayEnd != nil:
		// Continue the top level after ']' with what was read past it.
		data := append(o.arrayEnd, rest...)
		data = append(data, p.in.buf[p.in.pos:p.in.end]...)
		p.in = p.in.resume(data, o.endAt)
		p.closed = true
		return nil
	case o.nul:
		return errNUL
	}
	return errEOF
}

// drain waits for the chunks in flight and returns their text, in order.
func (p *parser) drain() []byte {
	var rest []byte
	for _, c := range p.fifo {
		<-c.done
		rest = append(rest, c.data[c.lo:c.hi]...)
		c.res = chunkResult{}
		p.in.putBuf(c.data)
	}
	p.fifo = nil
	return rest
}

// dispatch queues chunk c for a worker; a lone final chunk (a small input)
// is parsed right here.
func (p *parser) dispatch(c *chunk) {
	c.done = make(chan struct{})
	p.fifo = append(p.fifo, c)
	if !p.started && c.final && len(p.fifo) == 1 {
		p.mainWorker().run(c)
		close(c.done)
		return
	}
	if !p.started {
		p.start()
	}
	p.jobs <- c
}

// start launches one worker per GOMAXPROCS.
func (p *parser) start() {
	n := runtime.GOMAXPROCS(0)
	p.started = true
	p.jobs = make(chan *chunk, p.maxInFlight)
	for range n {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			w := newWorker()
			w.arena = &p.arena
			w.shapes = p.opts.Shapes
			for c := range p.jobs {
				w.run(c)
				close(c.done)
			}
		}()
	}
}

// finish stops the workers.
func (p *parser) finish() {
	if p.started {
		close(p.jobs)
		p.wg.Wait()
		p.started = false
	}
}

func (p *parser) mainWorker() *worker {
	if p.main == nil {
		p.main = newWorker()
		p.main.arena = &p.arena
		p.main.shapes = p.opts.Shapes
	}
	return p.main
}

// verify accepts the finished chunks at the head of the queue, in order,
// waiting for the head when wait is set. It returns why reading must stop,
// or nil.
func (p *parser) verify(wait bool) *outcome {
	for len(p.fifo) > 0 {
		c := p.fifo[0]
		if !wait {
			select {
			case <-c.done:
			default:
				return nil
			}
		}
		<-c.done
		wait = false
		p.fifo = p.fifo[1:]
		o := p.accept(c)
		p.in.putBuf(c.data)
		c.data = nil
		if o != nil {
			return o
		}
	}
	return nil
}

// accept takes the result of chunk c if its parse started in the right
// state, and otherwise parses its text again from the last complete
// element.
func (p *parser) accept(c *chunk) *outcome {
	if p.carry == nil && c.start != p.endState {
		p.carry, p.carryState, p.carryAt = []byte{}, p.endState, p.acceptedTo
	}
	if p.carry != nil {
		// Parse the unfinished element before c together with c's text.
		buf := append(p.carry, c.data[c.lo:c.hi]...)
		re := &chunk{data: buf, lo: 0, hi: len(buf), base: p.carryAt, start: p.carryState, final: c.final}
		p.mainWorker().run(re)
		p.carry = nil
		c = re
	}
	r := &c.res
	if r.err != nil {
		return &outcome{err: p.formatErr(r.err)}
	}
	p.results = append(p.results, r)
	p.nEvents += r.nElems
	if m := p.opts.MaxEvents; m > 0 && int64(p.nEvents) > m {
		return &outcome{err: fmt.Errorf("chrome: %w: more than %s events by byte %d, at most %s fit", ErrTooLarge,
			units.Count64(int64(p.nEvents)), p.acceptedTo, units.Count64(m))}
	}
	if r.nElems > 0 {
		p.lastGood = c.base + int64(r.lastGood)
	}
	p.acceptedTo = c.base + int64(c.hi)
	switch {
	case r.arrayEnd >= 0:
		return &outcome{arrayEnd: bytes.Clone(c.data[r.arrayEnd:c.hi]), endAt: c.base + int64(r.arrayEnd)}
	case r.nul >= 0:
		return &outcome{nul: true}
	case c.final:
		return &outcome{eof: true}
	case r.dirty:
		if c.hi-r.lastGood > maxEventSize {
			return &outcome{err: fmt.Errorf("chrome: %s: event larger than %d MiB at byte %d", p.evPath(p.nEvents), maxEventSize>>20, c.base+int64(r.lastGood))}
		}
		p.carry = bytes.Clone(c.data[r.lastGood:c.hi])
		p.carryState, p.carryAt = r.goodState, c.base+int64(r.lastGood)
	default:
		p.endState = r.end
	}
	return nil
}

// formatErr names the element of an error by its index in the array.
func (p *parser) formatErr(e *evError) error {
	idx := p.nEvents + e.elem
	switch {
	case e.field != "":
		return fmt.Errorf("chrome: %s.%s: %s", p.evPath(idx), e.field, e.msg)
	case e.array:
		return fmt.Errorf("chrome: %s: want ',' or ']' after element %d, got %s at byte %d", p.prefix, idx, e.msg, e.off)
	case e.off >= 0:
		return fmt.Errorf("chrome: %s: %s at byte %d", p.evPath(idx), e.msg, e.off)
	}
	return fmt.Errorf("chrome: %s: %s", p.evPath(idx), e.msg)
}
