package timelinetext

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// SplitComment splits a line into its content and its comment: the text
// after the first '#' outside a quoted string (without the '#'), or "".
func SplitComment(line string) (content, comment string) {
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '"', '`':
			end, _ := skipString(line, i)
			i = end - 1
		case '#':
			return line[:i], line[i+1:]
		}
	}
	return line, ""
}

// skipString returns the index just past the string starting at s[i]
// (Go syntax: "interpreted" with escapes, or `raw`), or len(s) and false
// when it is not terminated.
func skipString(s string, i int) (int, bool) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q == '"':
			j++
		case s[j] == q:
			return j + 1, true
		}
	}
	return len(s), false
}

// Fields splits a line's content into fields separated by blanks. A quoted
// string (Go syntax, "..." or `...`) is part of one field, blanks
// included, so that a field may be `"a name"` or `key="a value"`.
func Fields(s string) ([]string, error) {
	var out []string
	for i := 0; i < len(s); {
		if s[i] == ' ' || s[i] == '\t' || s[i] == '\r' {
			i++
			continue
		}
		start := i
		for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\r' {
			if s[i] != '"' && s[i] != '`' {
				i++
				continue
			}
			j, ok := skipString(s, i)
			if !ok {
				return nil, fmt.Errorf("unterminated string %s", s[i:])
			}
			i = j
		}
		out = append(out, s[start:i])
	}
	return out, nil
}

// IsQuoted reports whether field f is a quoted string.
func IsQuoted(f string) bool { return strings.HasPrefix(f, `"`) || strings.HasPrefix(f, "`") }

// unquote reads a quoted field.
func unquote(f string) (string, error) {
	s, err := strconv.Unquote(f)
	if err != nil || !IsQuoted(f) {
		return "", fmt.Errorf("bad string %s", f)
	}
	return s, nil
}

// Time units, in nanoseconds; longer suffixes first, so that "ms" is not
// read as "s".
var timeUnits = []struct {
	name string
	ns   int64
}{{"ms", 1e6}, {"us", 1e3}, {"µs", 1e3}, {"ns", 1}, {"s", 1e9}}

// ParseTime reads a time or duration: a decimal number with an optional
// unit (ns, us or µs, ms, s; bare numbers are nanoseconds), optionally
// negative: "0", "1500", "4.2ms", "-3us". The value must be a whole number
// of nanoseconds.
func ParseTime(s string) (int64, error) {
	v, err := withUnit(s, func(yield func(string, int64) bool) {
		for _, u := range timeUnits {
			if !yield(u.name, u.ns) {
				return
			}
		}
	})
	if err != nil {
		return 0, fmt.Errorf("bad time %q: %w", s, err)
	}
	return v, nil
}

// withUnit reads a decimal number followed by one of units' suffixes (or
// none: unit 1).
func withUnit(s string, units func(yield func(string, int64) bool)) (int64, error) {
	num, unit := s, int64(1)
	units(func(name string, n int64) bool {
		if rest, ok := strings.CutSuffix(s, name); ok && rest != "" && rest[len(rest)-1] >= '0' && rest[len(rest)-1] <= '9' {
			num, unit = rest, n
			return false
		}
		return true
	})
	return decimal(num, unit)
}

// FormatTime writes ns in the largest unit not larger than it that keeps it
// exact with at most three decimals ("4.2ms", "1.5s", "250us", "1.234us",
// "17"); bare numbers are nanoseconds. ParseTime reads it back exactly.
func FormatTime(ns int64) string {
	for _, u := range []struct {
		name string
		ns   int64
	}{{"s", 1e9}, {"ms", 1e6}, {"us", 1e3}} {
		if (ns >= u.ns || ns <= -u.ns) && ns%(u.ns/1000) == 0 {
			return formatDecimal(ns, u.ns) + u.name
		}
	}
	return strconv.FormatInt(ns, 10)
}

// Size units, in bytes, for reading and writing.
var sizeUnits = []struct {
	name string
	n    int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}, {"B", 1}}

// ParseSize reads a byte count: a number with an optional unit (B, KiB,
// MiB, GiB, kB, MB, GB): "4096", "64MiB", "1.5GB". It must be a whole,
// non-negative number of bytes.
func ParseSize(s string) (int64, error) {
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("bad size %q: negative", s)
	}
	v, err := withUnit(s, func(yield func(string, int64) bool) {
		for _, u := range sizeUnits {
			if !yield(u.name, u.n) {
				return
			}
		}
	})
	if err != nil {
		return 0, fmt.Errorf("bad size %q: %w", s, err)
	}
	return v, nil
}

// FormatSize writes n bytes in the largest binary unit that divides it
// ("64MiB", "1536KiB", "1000").
func FormatSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range sizeUnits[:3] {
		if n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// decimal reads "[-]digits[.digits]" times unit, exactly: an error when
// the result is not whole or does not fit in an int64.
func decimal(s string, unit int64) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || hasDot && frac == "" || !digits(whole) || !digits(frac) {
		return 0, errors.New("want a decimal number")
	}
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil {
		return 0, errors.New("out of range")
	}
	hi, v := bits.Mul64(w, uint64(unit))
	frac = strings.TrimRight(frac, "0")
	if frac != "" {
		if len(frac) > 18 {
			return 0, errors.New("not a whole number of nanoseconds or bytes")
		}
		f, _ := strconv.ParseUint(frac, 10, 64)
		scale := uint64(1)
		for range frac {
			scale *= 10
		}
		fh, fl := bits.Mul64(f, uint64(unit))
		// f < scale, so fh < scale and the quotient fits.
		q, rem := bits.Div64(fh, fl, scale)
		if rem != 0 {
			return 0, errors.New("not a whole number of nanoseconds or bytes")
		}
		var carry uint64
		v, carry = bits.Add64(v, q, 0)
		hi += carry
	}
	if hi != 0 || v > math.MaxInt64 {
		return 0, errors.New("out of range")
	}
	if neg {
		return -int64(v), nil
	}
	return int64(v), nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// formatDecimal writes v/unit with up to three decimals, trailing zeros
// trimmed; v must be a multiple of unit/1000.
func formatDecimal(v, unit int64) string {
	neg := v < 0
	u := uint64(v)
	if neg {
		u = uint64(-v) // exact for math.MinInt64 as well
	}
	w, f := u/uint64(unit), u%uint64(unit)
	s := strconv.FormatUint(w, 10)
	if f != 0 {
		fs := fmt.Sprintf("%03d", f/(uint64(unit)/1000))
		s += "." + strings.TrimRight(fs, "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}
