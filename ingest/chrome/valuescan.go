package chrome

import (
	"bytes"
	"errors"
	"fmt"
)

// errEOF reports the end of the input inside a value; the caller decides
// whether that is truncation (inside or after traceEvents) or an error.
var errEOF = errors.New("unexpected end of input")

// errNUL reports a NUL byte where JSON text was expected: the zero-filled
// tail that a crash can leave in a file. It is treated as the end of the
// data.
var errNUL = errors.New("NUL byte")

// valueScan follows the structure of one JSON value (a top-level value, or
// a nested value inside an event) through text that may arrive in pieces: the open brackets, and whether the scan is inside a
// string or just after a backslash in one. It checks that brackets match
// and that no byte outside strings is foreign to JSON; it does not check
// the grammar of scalars, which the field readers do for the fields they
// use.
type valueScan struct {
	stack []byte
	inStr bool
	esc   bool
}

func (st *valueScan) reset() {
	st.stack = st.stack[:0]
	st.inStr, st.esc = false, false
}

// scan advances over b[i:]. It returns the index just after the end of the
// value and done, or len(b) and !done when the data ran out first. A
// syntax error is reported with the index of the offending byte.
func (st *valueScan) scan(b []byte, i int) (end int, done bool, bad int, err error) {
	for i < len(b) {
		if st.esc {
			st.esc = false
			i++
			continue
		}
		if st.inStr {
			i = skipString(b, i)
			if i == len(b) {
				return len(b), false, 0, nil
			}
			if b[i] == '\\' {
				st.esc = true
				i++
				continue
			}
			i++ // the closing quote
			st.inStr = false
			if len(st.stack) == 0 {
				return i, true, 0, nil // a bare string value
			}
			continue
		}
		// Skip the bytes between structural characters: spaces, numbers,
		// literals, commas and colons.
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i == len(b) {
			break
		}
		c := b[i]
		switch classes[c] {
		case clQuote:
			st.inStr = true
			i++
		case clOpen:
			st.stack = append(st.stack, c)
			i++
		case clClose:
			if len(st.stack) == 0 || st.stack[len(st.stack)-1] != c-2 { // '['+2 == ']', '{'+2 == '}'
				return 0, false, i, fmt.Errorf("unexpected %q", c)
			}
			st.stack = st.stack[:len(st.stack)-1]
			i++
			if len(st.stack) == 0 {
				return i, true, 0, nil
			}
		case clNUL:
			return 0, false, i, errNUL
		default:
			return 0, false, i, fmt.Errorf("invalid character %q", c)
		}
	}
	return len(b), false, 0, nil
}

// plain marks the bytes that need no attention outside strings.
var plain = func() (t [256]bool) {
	for c, cl := range classes {
		t[c] = cl == clSpace || cl == clPunct || cl == clScalar
	}
	return t
}()

// skipString returns the index of the next '"' or '\\' in b at or after i,
// or len(b). Short strings (keys, most values) are scanned byte by byte;
// long ones (kernel names) with IndexByte over windows that double in size,
// so that the work stays linear however many escapes a string holds.
func skipString(b []byte, i int) int {
	for n := 0; i < len(b) && n < 16; i, n = i+1, n+1 {
		if c := b[i]; c == '"' || c == '\\' {
			return i
		}
	}
	for w := 64; i < len(b); w *= 2 {
		win := b[i:min(i+w, len(b))]
		lim := win
		q := bytes.IndexByte(win, '"')
		if q >= 0 {
			lim = win[:q]
		}
		if k := bytes.IndexByte(lim, '\\'); k >= 0 {
			return i + k
		}
		if q >= 0 {
			return i + q
		}
		i += len(win)
	}
	return len(b)
}
