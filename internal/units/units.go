// Package units formats durations, sizes, bandwidths, shares and counts for
// people: analyzers' evidence texts, reports and plots use the same forms.
package units

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Dur formats nanoseconds with a unit chosen for the magnitude:
// "850 ns", "12.4 µs", "3.21 ms", "1.25 s".
func Dur(ns int64) string {
	a := math.Abs(float64(ns))
	switch {
	case a < 1e3:
		return fmt.Sprintf("%d ns", ns)
	case a < 1e6:
		return sig3(float64(ns)/1e3) + " µs"
	case a < 1e9:
		return sig3(float64(ns)/1e6) + " ms"
	}
	return sig3(float64(ns)/1e9) + " s"
}

// Bytes formats a size in decimal units: "512 B", "64.0 KB", "201 MB".
func Bytes(b int64) string {
	a := math.Abs(float64(b))
	switch {
	case a < 1e3:
		return fmt.Sprintf("%d B", b)
	case a < 1e6:
		return sig3(float64(b)/1e3) + " KB"
	case a < 1e9:
		return sig3(float64(b)/1e6) + " MB"
	}
	return sig3(float64(b)/1e9) + " GB"
}

// GBps formats a bandwidth in GB/s from bytes over nanoseconds.
func GBps(bytes, ns int64) string {
	if ns <= 0 {
		return "-"
	}
	return sig3(float64(bytes) / float64(ns))
}

// Pct formats a share in [0, 1] as a percentage: "78 %", "4.2 %", "0.31 %".
func Pct(share float64) string {
	p := share * 100
	switch {
	case p == 0:
		return "0 %"
	case math.Abs(p) >= 10:
		return fmt.Sprintf("%.0f %%", p)
	case math.Abs(p) >= 1:
		return fmt.Sprintf("%.1f %%", p)
	}
	return fmt.Sprintf("%.2f %%", p)
}

// Speedup formats a ratio: "1.53x".
func Speedup(x float64) string { return fmt.Sprintf("%.2fx", x) }

// Count formats an integer with thousands separators: "12,345".
func Count(n int) string { return Count64(int64(n)) }

// Count64 is Count for int64.
func Count64(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// sig3 prints x with three significant digits and no exponent.
func sig3(x float64) string {
	a := math.Abs(x)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", x)
	case a >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// Clip shortens s to at most n runes, marking the cut with "…".
func Clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// TopCounts lists the names of counts, most counted first (ties by name),
// each as item writes it, at most n of them and then "and K more", joined
// by ", ".
func TopCounts(counts map[string]int, n int, item func(name string, count int) string) string {
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	var out []string
	for i, k := range names {
		if i == n {
			out = append(out, fmt.Sprintf("and %d more", len(names)-n))
			break
		}
		out = append(out, item(k, counts[k]))
	}
	return strings.Join(out, ", ")
}
