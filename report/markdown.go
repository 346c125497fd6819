package report

// mdPlots embeds plots with their captions, each under a heading when
// headings is set.
func mdPlots(p *printer, plots []Plot, headings bool) {
	for _, pl := range plots {
		p.line("")
		if headings {
			p.line("### %s", mdEscape(pl.Title))
			p.line("")
		}
		p.line("![%s](%s)", mdEscape(pl.Title), pl.File)
		p.line("")
		p.line("*%s*", mdEscape(pl.Caption))
	}
}

// mdCommand quotes the command line that produced a report.
func mdCommand(p *printer, command string) {
	if command != "" {
		p.line("")
		p.line("<sub>Produced by %s</sub>", styled(mdCode(command, false)))
	}
}
