package analyzetest

import (
	"fmt"
	"strings"
)

// section is one file of a txtar archive: its name, the line of the
// archive where its content starts (1-based), and its content.
type section struct {
	name  string
	line  int
	lines []string
}

func (s *section) text() string {
	if len(s.lines) == 0 {
		return ""
	}
	return strings.Join(s.lines, "\n") + "\n"
}

// parseTxtar splits a txtar archive (golang.org/x/tools/txtar's format: a
// comment, then files each introduced by a "-- NAME --" line) into the
// comment and the named sections.
func parseTxtar(data string) (comment section, files []section, err error) {
	lines := strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	cur := &comment
	cur.line = 1
	seen := map[string]bool{}
	for i, l := range lines {
		if name, ok := marker(l); ok {
			if seen[name] {
				return comment, nil, fmt.Errorf("line %d: a second %q section", i+1, name)
			}
			seen[name] = true
			files = append(files, section{name: name, line: i + 2})
			cur = &files[len(files)-1]
			continue
		}
		cur.lines = append(cur.lines, l)
	}
	return comment, files, nil
}

// marker reads a "-- NAME --" line.
func marker(l string) (string, bool) {
	if !strings.HasPrefix(l, "-- ") || !strings.HasSuffix(l, " --") || len(l) < len("-- x --") {
		return "", false
	}
	name := strings.TrimSpace(l[3 : len(l)-3])
	return name, name != ""
}
