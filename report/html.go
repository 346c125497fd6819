package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/traceaudit/traceaudit/internal/version"
)

// The HTML report (report.html in report folders) is one self-contained
// page: inline CSS, the plots as inline SVG, no script, no external
// resource, and a Content-Security-Policy that forbids both, so it works
// offline and nothing in it can run. html/template escapes every string
// of the document.

//go:embed html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Parse(htmlSource))

// htmlPage is what the template shows.
type htmlPage struct {
	Title, Verdict, Worst string
	Sub, Lead             []string
	Tables                []htmlTable
	Findings              []htmlFinding
	Plots                 []htmlPlot
	NotesTitle            string
	Notes                 []htmlNote
	Command, Tool         string
}

type htmlTable struct {
	ID, Caption string
	Head        []htmlHead
	Rows        []htmlRow
}

type htmlHead struct {
	Text string
	Num  bool
}

type htmlRow struct {
	Class string
	Cells []htmlCell
}

type htmlCell struct{ Text, Class, Sev string }

type htmlFinding struct {
	ID, Severity, Title, Figures, Fix, Code, Verify string
	Evidence                                        []htmlEvidence
}

type htmlEvidence struct{ At, Length, Track, What string }

type htmlPlot struct {
	Name, Title, Caption string
	SVG                  template.HTML
}

type htmlNote struct{ ID, Text string }

// writePage writes the HTML report of a page, with Options.Plots inline
// and the command line that produced it.
func writePage(w io.Writer, pg htmlPage, o Options) error {
	pg.Command, pg.Tool = termSafe(o.Command), version.Tool()
	for _, p := range o.Plots {
		svg, err := inlineSVG(p.SVG)
		if err != nil {
			return fmt.Errorf("report: html: plot %s: %w", p.File, err)
		}
		pg.Plots = append(pg.Plots, htmlPlot{Name: strings.TrimSuffix(p.File, filepath.Ext(p.File)), Title: p.Title, Caption: p.Caption, SVG: svg})
	}
	clean(&pg)
	var buf bytes.Buffer
	if err := htmlTemplate.Execute(&buf, pg); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// clean strips control characters from every string of the page (the
// template escapes markup; controls are invalid in HTML).
func clean(pg *htmlPage) {
	for _, s := range []*string{&pg.Title, &pg.Verdict, &pg.NotesTitle} {
		*s = termSafe(*s)
	}
	for i := range pg.Sub {
		pg.Sub[i] = termSafe(pg.Sub[i])
	}
	for i := range pg.Lead {
		pg.Lead[i] = termSafe(pg.Lead[i])
	}
	for _, t := range pg.Tables {
		for _, r := range t.Rows {
			for i := range r.Cells {
				r.Cells[i].Text = termSafe(r.Cells[i].Text)
			}
		}
	}
	for i := range pg.Findings {
		f := &pg.Findings[i]
		for _, s := range []*string{&f.Title, &f.Figures, &f.Fix, &f.Verify} {
			*s = termSafe(*s)
		}
		f.Code = mdSafe(f.Code)
		for j := range f.Evidence {
			e := &f.Evidence[j]
			e.Track, e.What = termSafe(e.Track), termSafe(e.What)
		}
	}
	for i := range pg.Notes {
		pg.Notes[i].Text = termSafe(pg.Notes[i].Text)
	}
}

var (
	svgStart  = regexp.MustCompile(`(?s)^.*?(<svg[\s>])`)
	svgActive = regexp.MustCompile(`(?i)<script|<foreignobject|\son[a-z]+\s*=|javascript:|<iframe|<object|<embed`)
)

// inlineSVG is an SVG file's <svg> element, for inlining: the XML prolog
// and comments before it dropped, and refused if it holds anything that
// could run.
func inlineSVG(b []byte) (template.HTML, error) {
	s := string(b)
	loc := svgStart.FindStringSubmatchIndex(s)
	if loc == nil {
		return "", fmt.Errorf("not an SVG")
	}
	s = s[loc[2]:]
	if svgActive.MatchString(s) {
		return "", fmt.Errorf("the SVG holds active content")
	}
	return template.HTML(s), nil
}

func hnum(s string) htmlHead { return htmlHead{Text: s, Num: true} }
func txt(s string) htmlHead  { return htmlHead{Text: s} }
func cn(s string) htmlCell   { return htmlCell{Text: s, Class: "n"} }
func ct(s string) htmlCell   { return htmlCell{Text: s} }
