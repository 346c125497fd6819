package chrome

import (
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
)

// The lexer reads the members of one JSON object (an event, or its args)
// in a single pass over its text: keys, and values as raw text with their
// kind. Nested values are skipped with valueScan. The same pass finds the
// end of the event, so event text is read once.

// errMore reports that the text ended inside a value: the chunk was cut
// there, or the input was truncated.
var errMore = errors.New("more input needed")

// Value kinds.
const (
	kNone   byte = iota // absent
	kString             // raw is the text between the quotes
	kNumber             // raw is the number's text
	kTrue
	kFalse
	kNull
	kObject // raw is the whole object, braces included
	kArray
)

// value is one member's value: its kind, and where its text lies in the
// text being lexed (for a string, between the quotes). It holds no
// pointers, so that storing one is a few plain writes.
type value struct {
	s, e int // text[s:e]
	kind byte
	esc  bool // a string with backslash escapes
}

// typeName names the JSON type of v, for errors.
func (v value) typeName() string {
	switch v.kind {
	case kString:
		return "string"
	case kNumber:
		return "number"
	case kTrue, kFalse:
		return "boolean"
	case kNull:
		return "null"
	case kObject:
		return "object"
	case kArray:
		return "array"
	}
	return "nothing"
}

// raw returns the value's text in b, the text it was lexed from.
func (v value) raw(b []byte) []byte { return b[v.s:v.e] }

// text returns a string value's text in b, unescaped. The result may share
// b's memory.
func (v value) text(b []byte) []byte {
	if !v.esc {
		return b[v.s:v.e]
	}
	return []byte(unquote(b[v.s:v.e]))
}

// unquote decodes the escapes of a string's text (without its quotes).
func unquote(raw []byte) string {
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	return gjson.ParseBytes(q).Str
}

// syntaxError is a syntax error at index at of the text being lexed.
type syntaxError struct {
	at  int
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

func syntaxErrorf(at int, format string, args ...any) error {
	return &syntaxError{at, fmt.Sprintf(format, args...)}
}

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && classes[b[i]] == clSpace {
		i++
	}
	return i
}

// stringEnd returns the index of the quote that closes the string whose
// text starts at b[i], and whether the text has escapes.
func stringEnd(b []byte, i int) (end int, esc bool, err error) {
	// Most strings are short keys and values: look at a few bytes first.
	for n := 0; i < len(b) && n < 32; i, n = i+1, n+1 {
		if c := b[i]; c == '"' {
			return i, false, nil
		} else if c == '\\' {
			break
		}
	}
	for {
		i = skipString(b, i)
		if i >= len(b) {
			return 0, false, errMore
		}
		if b[i] == '"' {
			return i, esc, nil
		}
		esc = true
		i += 2 // the backslash and the escaped byte
	}
}

// member lexes the object member at b[i] (after '{' or ','): its key and
// value. next is the index after the value's trailing ',' (more set) or
// the object's closing '}' (more clear).
func member(b []byte, i int, st *valueScan, v *value) (key []byte, next int, more bool, err error) {
	if b[i] != '"' {
		return nil, 0, false, syntaxErrorf(i, "want a key, got %s", describe(b[i]))
	}
	ke, kesc, err := stringEnd(b, i+1)
	if err != nil {
		return nil, 0, false, err
	}
	key = b[i+1 : ke]
	if kesc {
		key = []byte(unquote(key))
	}
	i = ke + 1
	if i < len(b) && b[i] == ':' && i+1 < len(b) && b[i+1] == ' ' {
		i += 2 // the usual `": "`
	} else {
		i = skipSpace(b, i)
		if i == len(b) {
			return nil, 0, false, errMore
		}
		if b[i] != ':' {
			return nil, 0, false, syntaxErrorf(i, "want ':' after key %q, got %s", key, describe(b[i]))
		}
		i++
	}
	i = skipSpace(b, i)
	if i == len(b) {
		return nil, 0, false, errMore
	}
	if i, err = lexValue(b, i, st, v); err != nil {
		return nil, 0, false, err
	}
	i = skipSpace(b, i)
	if i == len(b) {
		return nil, 0, false, errMore
	}
	switch b[i] {
	case ',':
		i = skipSpace(b, i+1)
		if i == len(b) {
			return nil, 0, false, errMore
		}
		return key, i, true, nil
	case '}':
		return key, i + 1, false, nil
	}
	return nil, 0, false, syntaxErrorf(i, "want ',' or '}' after the value of %q, got %s", key, describe(b[i]))
}

// lexValue lexes the value at b[i] into v and returns the index after it.
func lexValue(b []byte, i int, st *valueScan, v *value) (int, error) {
	c := b[i]
	switch {
	case c == '"':
		end, esc, err := stringEnd(b, i+1)
		if err != nil {
			return 0, err
		}
		v.s, v.e, v.kind, v.esc = i+1, end, kString, esc
		return end + 1, nil
	case c == '{' || c == '[':
		st.reset()
		st.stack = append(st.stack, c)
		end, done, bad, err := st.scan(b, i+1)
		if err == errNUL {
			return 0, syntaxErrorf(bad, "NUL byte")
		}
		if err != nil {
			return 0, syntaxErrorf(bad, "%v", err)
		}
		if !done {
			return 0, errMore
		}
		v.s, v.e, v.kind, v.esc = i, end, kObject, false
		if c == '[' {
			v.kind = kArray
		}
		return end, nil
	case c == '-' || isDigit(c):
		j := i + 1
		for j < len(b) && numberByte[b[j]] {
			j++
		}
		if j == len(b) {
			return 0, errMore // the number may go on
		}
		v.s, v.e, v.kind, v.esc = i, j, kNumber, false
		return j, nil
	case c >= 'a' && c <= 'z':
		j := i + 1
		for j < len(b) && b[j] >= 'a' && b[j] <= 'z' {
			j++
		}
		if j == len(b) {
			return 0, errMore
		}
		switch string(b[i:j]) {
		case "true":
			v.kind = kTrue
		case "false":
			v.kind = kFalse
		case "null":
			v.kind = kNull
		default:
			return 0, syntaxErrorf(i, "invalid literal %s", quoteText(b[i:j]))
		}
		v.s, v.e, v.esc = i, j, false
		return j, nil
	case c == 0:
		return 0, syntaxErrorf(i, "NUL byte")
	}
	return 0, syntaxErrorf(i, "want a value, got %s", describe(c))
}

// numberByte marks the bytes a JSON number may hold after its first.
var numberByte = func() (t [256]bool) {
	for _, c := range "0123456789+-.eE" {
		t[c] = true
	}
	return t
}()
