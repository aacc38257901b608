package docref

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"
)

// page is a Markdown file cut into sections at its headings.
type page struct {
	path     string
	sections []*section
}

// section is what follows one heading, up to the next one; the first
// section, before any heading, has none.
type section struct {
	heading string
	level   int
	line    int
	text    strings.Builder
	tables  []*table
}

// table is a Markdown table: its header cells and its rows.
type table struct {
	line   int
	header []string
	rows   []row
}

type row struct {
	line  int
	cells []string
}

var headingRE = regexp.MustCompile(`^(#{1,6}) +(.*?) *$`)

// readPage reads and cuts the Markdown file at path.
func readPage(t *testing.T, path string) *page {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("reading the reference: %v", err)
	}
	defer f.Close()
	p := &page{path: path}
	cur := &section{line: 1}
	p.sections = append(p.sections, cur)
	var tab *table
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := headingRE.FindStringSubmatch(line); m != nil {
			cur = &section{heading: m[2], level: len(m[1]), line: n}
			p.sections = append(p.sections, cur)
			tab = nil
			continue
		}
		cur.text.WriteString(line + "\n")
		tab = addTableLine(cur, tab, line, n)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return p
}

// addTableLine adds line n to the table under way, or starts one, and
// returns the table under way after it (nil when line is no table's).
func addTableLine(s *section, tab *table, line string, n int) *table {
	if !strings.HasPrefix(strings.TrimSpace(line), "|") {
		return nil
	}
	cells := splitRow(line)
	switch {
	case tab == nil:
		tab = &table{line: n, header: cells}
		s.tables = append(s.tables, tab)
	case len(tab.rows) == 0 && isDelimiterRow(cells):
	default:
		tab.rows = append(tab.rows, row{line: n, cells: cells})
	}
	return tab
}

func isDelimiterRow(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":-") != "" {
			return false
		}
	}
	return true
}

// splitRow returns the cells of a table row, trimmed, with their backslash
// escapes kept (an escaped | does not end a cell).
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			cell.WriteByte(line[i])
			cell.WriteByte(line[i+1])
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// unescape undoes Markdown's backslash escapes of ASCII punctuation.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// escape makes plain text s safe in a table cell: | would end the cell and
// <word> would be taken for HTML.
func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", `\<`, ">", `\>`).Replace(s)
}

// sameHeader tells whether the table's header is want, ignoring case.
func (tab *table) sameHeader(want ...string) bool {
	if len(tab.header) != len(want) {
		return false
	}
	for i := range want {
		if !strings.EqualFold(tab.header[i], want[i]) {
			return false
		}
	}
	return true
}

// code returns the text of a cell that is one code span, `like this`, and
// whether it is one.
func code(cell string) (string, bool) {
	if len(cell) < 2 || cell[0] != '`' || cell[len(cell)-1] != '`' || strings.Count(cell, "`") != 2 {
		return "", false
	}
	return cell[1 : len(cell)-1], true
}
