package chrome

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
)

// The top level of a trace is an object of a few small keys around
// traceEvents, or a bare array of events. It is tokenized here byte by
// byte; the traceEvents array is read in chunks (chunks.go) as it streams
// by, and the keys Parse reads (deviceProperties, baseTimeNanoseconds) are
// captured whole and read with gjson.

// parseTop reads the top level: an object holding traceEvents, or a bare
// array of events.
func (p *parser) parseTop() error {
	in := p.in
	c, ok := in.skipSpace()
	if ok && c == 0xEF && in.ensure(3) && bytes.Equal(in.buf[in.pos:in.pos+3], []byte{0xEF, 0xBB, 0xBF}) {
		in.pos += 3 // a UTF-8 byte order mark
		c, ok = in.skipSpace()
	}
	if !ok {
		if in.err != nil {
			return fmt.Errorf("chrome: %w", in.err)
		}
		return errors.New("chrome: empty input")
	}
	switch c {
	case '[':
		in.pos++
		p.prefix = ""
		p.sawEvents = true
		if err := p.events(); err != nil {
			return err
		}
		in = p.in
	case '{':
		in.pos++
		if err := p.parseObject(); err != nil {
			return err
		}
		in = p.in
	default:
		return fmt.Errorf("chrome: want a JSON object or array at the top level, got %s", describe(c))
	}
	// Only whitespace (or a zero-filled tail) may follow.
	for {
		c, ok := in.skipSpace()
		if !ok {
			break
		}
		if c != 0 {
			return p.syntaxErr("", in.offset(in.pos), errors.New("unexpected data after the end of the trace"))
		}
		in.pos++
	}
	if in.err != nil {
		return fmt.Errorf("chrome: %w", in.err)
	}
	return nil
}

// parseObject reads the members of the top-level object, whose '{' is
// consumed. traceEvents is read as it streams by; the few other keys
// traceaudit reads are captured whole and the rest skipped.
func (p *parser) parseObject() error {
	in := p.in
	first := true
	for {
		c, ok := in.skipSpace()
		if !ok {
			return p.eofErr()
		}
		if c == '}' && first {
			in.pos++
			break
		}
		if c != '"' {
			return p.syntaxErr("", in.offset(in.pos), fmt.Errorf("want a key, got %s", describe(c)))
		}
		key, err := p.readKey()
		if err != nil {
			return err
		}
		if c, ok = in.skipSpace(); !ok {
			return p.eofErr()
		}
		if c != ':' {
			return p.syntaxErr(key+": ", in.offset(in.pos), fmt.Errorf("want ':', got %s", describe(c)))
		}
		in.pos++
		if c, ok = in.skipSpace(); !ok {
			return p.eofErr()
		}
		switch key {
		case "traceEvents":
			if c != '[' {
				return fmt.Errorf("chrome: traceEvents: want an array, got %s", describe(c))
			}
			in.pos++
			p.prefix = "traceEvents"
			p.sawEvents = true
			if err := p.events(); err != nil {
				return err
			}
			in = p.in
		case "deviceProperties", "baseTimeNanoseconds", "distributedInfo":
			raw, err := p.readValue(key, true)
			if err != nil {
				return err
			}
			p.top[key] = raw
		default:
			if _, err := p.readValue(key, false); err != nil {
				return err
			}
			if isRuntimeVersionKey(key) {
				p.runtimeKeys = true
			}
		}
		first = false
		if c, ok = in.skipSpace(); !ok {
			return p.eofErr()
		}
		in.pos++
		if c == '}' {
			break
		}
		if c != ',' {
			return p.syntaxErr(key+": ", in.offset(in.pos-1), fmt.Errorf("want ',' or '}' after the value, got %s", describe(c)))
		}
	}
	if !p.sawEvents {
		return errors.New("chrome: no traceEvents array: not a Chrome trace")
	}
	return nil
}

// eofErr is the error for an input that ends in the top-level object.
func (p *parser) eofErr() error {
	if p.in.err != nil {
		return fmt.Errorf("chrome: %w", p.in.err)
	}
	if p.in.eof && p.in.end > p.in.pos && p.in.buf[p.in.pos] == 0 {
		return errNUL
	}
	return errEOF
}

// readKey reads a string at in.pos and returns its text.
func (p *parser) readKey() (string, error) {
	raw, err := p.readValue("", true)
	if err != nil {
		return "", err
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	return gjson.ParseBytes(raw).Str, nil
}

// readValue consumes one JSON value and returns a copy of its text when
// capture is set. key names the value in errors.
func (p *parser) readValue(key string, capture bool) ([]byte, error) {
	in := p.in
	if _, ok := in.skipSpace(); !ok {
		return nil, p.eofErr()
	}
	start := in.pos
	c := in.buf[in.pos]
	st := &p.scan
	st.reset()
	scalar := false
	switch classes[c] {
	case clScalar:
		scalar = true
	case clQuote:
		st.inStr = true
		in.pos++
	case clOpen:
		st.stack = append(st.stack, c)
		in.pos++
	case clNUL:
		return nil, errNUL
	default:
		return nil, p.syntaxErr(key+": ", in.offset(in.pos), fmt.Errorf("want a value, got %s", describe(c)))
	}
	for {
		b := in.buf[:in.end]
		if scalar {
			i := in.pos
			for i < len(b) && classes[b[i]] == clScalar {
				i++
			}
			in.pos = i
			if i < len(b) || in.eof {
				break
			}
		} else {
			end, done, bad, err := st.scan(b, in.pos)
			if err == errNUL {
				in.pos = bad
				return nil, errNUL
			}
			if err != nil {
				return nil, p.syntaxErr(key+": ", in.offset(bad), err)
			}
			in.pos = end
			if done {
				break
			}
		}
		keep := in.pos
		if capture {
			keep = start
		}
		shift, ok := in.fill(keep, false)
		start -= shift
		if !ok {
			if scalar && in.err == nil {
				break // a scalar may end at the end of the input
			}
			return nil, p.eofErr()
		}
	}
	if !capture {
		return nil, nil
	}
	return bytes.Clone(in.buf[start:in.pos]), nil
}

// syntaxErr formats a syntax error at an input offset.
func (p *parser) syntaxErr(path string, off int64, err error) error {
	return fmt.Errorf("chrome: %s%v at byte %d", path, err, off)
}

// evPath is the JSON path of event i.
func (p *parser) evPath(i int) string {
	return fmt.Sprintf("%s[%d]", p.prefix, i)
}
