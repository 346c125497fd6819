package chrome

import (
	"errors"
	"fmt"

	"github.com/traceaudit/traceaudit/timeline"
)

// Chrome trace timestamps are decimal microseconds, written by Kineto as
// integers (2021-2023), with three decimals (2024 on), and in principle in
// any JSON number form. They are converted to int64 nanoseconds from the
// text of the number, never through float64: a double holds about 15.9
// significant digits, and an epoch timestamp in nanoseconds needs 19.

var (
	errSyntax = errors.New("not a valid JSON number")
	errRange  = errors.New("out of range")
)

// maxExp bounds the exponent we track; anything beyond it is out of range
// (for a non-zero mantissa) or rounds to zero.
const maxExp = 1 << 20

// parseMicros converts the text of a JSON number of microseconds into
// nanoseconds exactly: digits past the nanosecond are rounded half away from
// zero. frac reports whether the text had a fractional part or an exponent
// (the Kineto ns-resolution era). Values beyond ±timeline.MaxTime are an
// error.
func parseMicros(s []byte) (ns int64, frac bool, err error) {
	i := 0
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intEnd := i
	if intEnd == intStart {
		return 0, false, errSyntax
	}
	fracStart, fracEnd := i, i
	if i < len(s) && s[i] == '.' {
		i++
		fracStart = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		fracEnd = i
		if fracEnd == fracStart {
			return 0, false, errSyntax
		}
		frac = true
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		frac = true
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		if i == len(s) {
			return 0, false, errSyntax
		}
		for i < len(s) && isDigit(s[i]) {
			if exp < maxExp {
				exp = exp*10 + int(s[i]-'0')
			}
			i++
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return 0, false, errSyntax
	}

	// The value in ns is D * 10^scale, where D is the digit string formed
	// by the integer and fraction digits.
	nInt, nFrac := intEnd-intStart, fracEnd-fracStart
	n := nInt + nFrac
	digit := func(k int) byte { // k-th digit of D
		if k < nInt {
			return s[intStart+k] - '0'
		}
		return s[fracStart+k-nInt] - '0'
	}
	scale := exp - nFrac + 3
	kept := n // digits of D at or above the nanosecond
	if scale < 0 {
		kept = n + scale
	}
	const limit = uint64(timeline.MaxTime)
	var acc uint64
	for k := 0; k < kept && k < n; k++ {
		if acc > limit/10 {
			return 0, frac, errRange
		}
		acc = acc*10 + uint64(digit(k))
		if acc > limit {
			return 0, frac, errRange
		}
	}
	if scale > 0 && acc != 0 {
		for range scale {
			if acc > limit/10 {
				return 0, frac, errRange
			}
			acc *= 10
		}
		if acc > limit {
			return 0, frac, errRange
		}
	}
	// Round half away from zero on the first dropped digit.
	if kept >= 0 && kept < n && digit(kept) >= 5 {
		acc++
		if acc > limit {
			return 0, frac, errRange
		}
	}
	if neg {
		return -int64(acc), frac, nil
	}
	return int64(acc), frac, nil
}

// parseInt parses the text of a JSON integer (optionally negative). It
// rejects fractions, exponents and values outside int64.
func parseInt(s []byte) (int64, bool) {
	i := 0
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	if i == len(s) {
		return 0, false
	}
	var acc uint64
	for ; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) {
			return 0, false
		}
		if acc > (1<<63)/10 {
			return 0, false
		}
		acc = acc*10 + uint64(c-'0')
		if acc > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(acc), true // -(1<<63) wraps to itself: MinInt64
	}
	if acc > 1<<63-1 {
		return 0, false
	}
	return int64(acc), true
}

// parseIDString reads a pid or tid written as a string: "1890023232",
// "stream 7", "stream 7 " (Kineto pads stream names) or "stream 7 (sync)".
// It accepts an optional word prefix, the integer, and an optional
// parenthesised suffix, around spaces.
func parseIDString(s []byte) (int64, bool) {
	s = trimSpace(s)
	if v, ok := parseInt(s); ok {
		return v, true
	}
	// word prefix
	i := 0
	for i < len(s) && isLetter(s[i]) {
		i++
	}
	if i == 0 || i == len(s) || s[i] != ' ' {
		return 0, false
	}
	for i < len(s) && s[i] == ' ' {
		i++
	}
	j := i
	if j < len(s) && s[j] == '-' {
		j++
	}
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	v, ok := parseInt(s[i:j])
	if !ok {
		return 0, false
	}
	rest := trimSpace(s[j:])
	if len(rest) == 0 || (rest[0] == '(' && rest[len(rest)-1] == ')' && len(s[j:]) > len(rest)) {
		return v, true
	}
	return 0, false
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func trimSpace(s []byte) []byte {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// quoteText renders an offending value for an error message, shortened.
func quoteText(s []byte) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q...", s[:40])
	}
	return fmt.Sprintf("%q", s)
}
