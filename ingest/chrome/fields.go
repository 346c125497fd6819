package chrome

import (
	"errors"
	"fmt"
	"unsafe"
)

// Reading one event: its members are lexed into fields, and the fields
// Parse uses are checked and converted here, with errors that name the
// member.

// fields holds the members of one event that Parse reads.
type fields struct {
	ph, cat, name, pid, tid, ts, dur, args value
}

// event lexes the event object at b[i] into w.f, maps it, and returns the
// index after it.
func (w *worker) event(b []byte, i int, idx int) (int, error) {
	f := &w.f
	f.ph.kind, f.cat.kind, f.name.kind, f.pid.kind, f.tid.kind, f.ts.kind, f.dur.kind, f.args.kind =
		kNone, kNone, kNone, kNone, kNone, kNone, kNone, kNone
	i = skipSpace(b, i+1)
	if i == len(b) {
		return 0, errMore
	}
	if b[i] == '}' {
		return i + 1, nil // an empty object: nothing to map
	}
	for {
		key, next, more, err := member(b, i, &w.scan, &w.v)
		if err != nil {
			return 0, err
		}
		switch view(key) {
		case "ph":
			f.ph = w.v
		case "cat":
			f.cat = w.v
		case "name":
			f.name = w.v
		case "pid":
			f.pid = w.v
		case "tid":
			f.tid = w.v
		case "ts":
			f.ts = w.v
		case "dur":
			f.dur = w.v
		case "args":
			f.args = w.v
		}
		i = next
		if !more {
			break
		}
		if w.unread() {
			// Skip the rest of an event Parse does not read (flows,
			// memory instants): find its end without lexing members.
			w.scan.reset()
			w.scan.stack = append(w.scan.stack, '{')
			end, done, bad, err := w.scan.scan(b, i)
			switch {
			case err != nil:
				return 0, syntaxErrorf(bad, "%v", err)
			case !done:
				return 0, errMore
			}
			return end, nil
		}
	}
	return i, w.mapEvent(idx)
}

// unread reports whether the members lexed so far show that the event is
// one Parse skips: a flow or other phase it does not map, or a memory
// instant. Kineto writes "ph" first, and "name" and "cat" early.
func (w *worker) unread() bool {
	f := &w.f
	if f.ph.kind != kString || f.ph.esc {
		return false
	}
	switch view(f.ph.raw(w.b)) {
	case "X", "M":
		return false
	case "i", "I":
		return f.name.kind == kString && view(f.name.raw(w.b)) == "[memory]" ||
			f.cat.kind == kString && view(f.cat.raw(w.b)) == "cpu_instant_event"
	}
	return true
}

// view is the bytes of b as a string, without copying: for lookups and
// comparisons only, never kept (b is a reused input buffer).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// fieldErr formats an error about a member of event idx.
func (w *worker) fieldErr(idx int, field, format string, args ...any) error {
	return &evError{elem: idx, field: field, msg: fmt.Sprintf(format, args...), off: -1}
}

// str returns the text of an optional string member.
func (w *worker) str(v value, idx int, field string) (string, error) {
	switch v.kind {
	case kNone, kNull:
		return "", nil
	case kString:
		return view(v.text(w.b)), nil
	}
	return "", w.fieldErr(idx, field, "want a string, got %s", v.typeName())
}

// id reads a pid or tid: an integer, or a string such as "stream 7".
// numeric is false for a string that holds no id ("Spans").
func (w *worker) id(v value, idx int, field string) (val int64, numeric bool, err error) {
	switch v.kind {
	case kNumber:
		if n, ok := parseInt(v.raw(w.b)); ok {
			return n, true, nil
		}
		return 0, false, w.fieldErr(idx, field, "want an integer id, got %s", quoteText(v.raw(w.b)))
	case kString:
		n, ok := parseIDString(v.text(w.b))
		return n, ok, nil
	case kNone:
		return 0, false, w.fieldErr(idx, field, "missing")
	}
	return 0, false, w.fieldErr(idx, field, "want a number or string id, got %s", v.typeName())
}

// micros reads a timestamp or duration member in microseconds as
// nanoseconds.
func (w *worker) micros(v value, idx int, field string) (int64, error) {
	switch v.kind {
	case kNumber:
	case kNone:
		return 0, w.fieldErr(idx, field, "missing")
	default:
		return 0, w.fieldErr(idx, field, "want a number, got %s", v.typeName())
	}
	ns, frac, err := parseMicros(v.raw(w.b))
	if err != nil {
		return 0, w.fieldErr(idx, field, "%v: %s", err, quoteText(v.raw(w.b)))
	}
	if frac {
		w.res.seen.fractions = true
	}
	return ns, nil
}

// intArg reads an integer member of args; numeric strings are accepted
// (ROCm writes some sizes as strings).
func (w *worker) intArg(v value, idx int, field string) (int64, error) {
	var raw []byte
	switch v.kind {
	case kNumber:
		raw = v.raw(w.b)
	case kString:
		raw = trimSpace(v.text(w.b))
	case kNull:
		return 0, nil
	default:
		return 0, w.fieldErr(idx, "args."+field, "want an integer, got %s", v.typeName())
	}
	n, ok := parseInt(raw)
	if !ok {
		return 0, w.fieldErr(idx, "args."+field, "want an integer, got %s", quoteText(raw))
	}
	return n, nil
}

// eachArg calls fn for the members of the event's args object until fn
// returns false.
func (w *worker) eachArg(idx int, fn func(key []byte, v value) bool) error {
	b := w.b
	a := w.f.args
	if a.kind != kObject {
		return nil
	}
	at, end := a.s, a.e
	bb := b[:end]
	i := skipSpace(bb, at+1)
	if i < end && bb[i] == '}' {
		return nil
	}
	var v value
	for i < end {
		key, next, more, err := member(bb, i, &w.scan, &v)
		if err != nil {
			var se *syntaxError
			if errors.As(err, &se) {
				return w.fieldErr(idx, "args", "%s", se.msg)
			}
			return w.fieldErr(idx, "args", "malformed object")
		}
		if !fn(key, v) || !more {
			return nil
		}
		i = next
	}
	return nil
}
