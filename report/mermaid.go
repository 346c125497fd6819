package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Mermaid charts for Markdown reports: GitHub renders them in pull request
// comments and job summaries, where image links to a report folder break.
// Every label goes through mermaidLabel; the charts use only `pie` and
// `xychart-beta` bar charts (checked by the tests with a parser of this
// subset, and with Mermaid itself in a browser).

// timeUnit picks ms or µs or s for values up to maxNS.
func timeUnit(maxNS int64) (name string, div float64) {
	switch {
	case maxNS >= 10e9:
		return "s", 1e9
	case maxNS >= 10e6:
		return "ms", 1e6
	}
	return "µs", 1e3
}

// num formats a chart value: at most 3 decimals, no exponent.
func num(x float64) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(x*1000)/1000, 'f', -1, 64)
}

// mermaidBlock writes lines as a fenced mermaid block.
func mermaidBlock(p *printer, lines []string) {
	p.line("")
	p.line("```mermaid")
	for _, l := range lines {
		p.line("%s", styled(l))
	}
	p.line("```")
}

// bucketColors are the two-clock buckets' colours in every figure
// (report/plot): compute, comm, copy, sync, os, data, other.
var bucketColors = []string{"#2ca02c", "#1f77b4", "#d62728", "#9467bd", "#8c564b", "#ff7f0e", "#a0a0a0"}

// barColor is the colour of bar charts.
const barColor = "#5b8db8"

// mermaidPie is a pie chart of labelled values with their colours (zero
// values left out).
func mermaidPie(title string, labels []string, values []float64, colors []string) []string {
	var vars []string
	var slices []string
	for i, l := range labels {
		if values[i] > 0 {
			vars = append(vars, fmt.Sprintf("%q: %q", "pie"+strconv.Itoa(len(slices)+1), colors[i]))
			slices = append(slices, fmt.Sprintf("    %q : %s", mermaidLabel(l), num(values[i])))
		}
	}
	head := []string{`%%{init: {"themeVariables": {` + strings.Join(vars, ", ") + `}}}%%`, "pie title " + mermaidLabel(title)}
	return append(head, slices...)
}

// mermaidBars is a bar chart: one bar per label, horizontal when there
// are many or long labels.
func mermaidBars(title, yTitle string, labels []string, values []float64, horizontal bool) []string {
	head := "xychart-beta"
	if horizontal {
		head += " horizontal"
	}
	top := 0.0
	for _, v := range values {
		top = max(top, v)
	}
	quoted := make([]string, len(labels))
	nums := make([]string, len(values))
	for i, l := range labels {
		quoted[i] = strconv.Quote(mermaidLabel(l))
		nums[i] = num(values[i])
	}
	return []string{
		`%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "` + barColor + `"}}}}%%`,
		head,
		"    title " + strconv.Quote(mermaidLabel(title)),
		"    x-axis [" + strings.Join(quoted, ", ") + "]",
		fmt.Sprintf("    y-axis %q 0 --> %s", mermaidLabel(yTitle), num(niceMax(top))),
		"    bar [" + strings.Join(nums, ", ") + "]",
	}
}

// niceMax rounds an axis maximum up to a round number (1, 1.2, 1.5, 2,
// 2.5, 3, 4, 5, 6 or 8 times a power of ten), with some headroom.
func niceMax(x float64) float64 {
	if x <= 0 {
		return 1
	}
	x *= 1.05
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}
