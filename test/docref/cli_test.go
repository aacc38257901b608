package docref

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fedwarden/fedwarden/internal/cli/root"
	"github.com/fedwarden/fedwarden/internal/streams"
)

const cliDoc = "docs/reference/cli.md"

// The shape of docs/reference/cli.md that TestCLIReference reads:
//
//   - a table | command | what it does | more | with a row per top-level
//     command, `fedwarden NAME`, whose "what it does" is the command's
//     short description;
//   - a section per subcommand, and per command with flags or exit codes,
//     headed "fedwarden NAME [SUBNAME]" at any level; deeper headings that
//     do not name a command group its flags and belong to it;
//   - in each, the command's synopsis, `fedwarden NAME ARGS` as its Use
//     says, and its exit codes, "Exit codes: …" as --help words them
//     (compared word by word, ignoring punctuation and Markdown);
//   - in each, tables | flag | default | what it does | with a row per flag:
//     `--name` (or `-s`, `--name`), its default as a code span (and
//     anything after it, e.g. where it differs), and its usage text as
//     --help prints it;
//   - a default that holds the binary's version, which release builds set,
//     writes it VERSION, e.g. `ghcr.io/fedwarden/fedwarden:VERSION`;
//   - `--prefix-*` in a section's text stands for every flag starting with
//     --prefix-, e.g. controller-runtime's --zap-* logging flags.
var (
	commandHeadingRE = regexp.MustCompile(`^fedwarden( [a-z][a-z0-9-]*)*$`)
	flagWildcardRE   = regexp.MustCompile("`--([a-z0-9-]+-)\\*`")
)

var (
	summaryHeader = []string{"command", "what it does", "more"}
	flagHeader    = []string{"flag", "default", "what it does"}
)

// commandDoc is what the reference says about one command.
type commandDoc struct {
	heading  string
	line     int
	text     strings.Builder
	rows     []row
	prefixes []string
}

// TestCLIReference checks docs/reference/cli.md against the command tree
// of the fedwarden binary: every command and flag is there, with the
// usage text --help prints, and nothing else is.
func TestCLIReference(t *testing.T) {
	// Some defaults differ in a pod (metricsendpoint.DefaultAddress): the
	// reference gives those outside one, and the test runs as there.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	p := readPage(t, filepath.Join("..", "..", cliDoc))
	version = binaryVersion(t)
	tree := root.NewCommand(streams.IO{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	checkSummary(t, p, tree)
	docs := commandDocs(t, p)
	for _, c := range append([]*cobra.Command{tree}, commands(tree)...) {
		checkCommand(t, c, docs[c.CommandPath()])
		delete(docs, c.CommandPath())
	}
	for _, d := range byLine(docs, func(d *commandDoc) int { return d.line }) {
		t.Errorf("%s:%d: remove the section %q: fedwarden has no such command", cliDoc, d.line, d.heading)
	}
}

// version is the binary's version, which documented defaults write VERSION.
var version string

// binaryVersion returns the version `fedwarden version` prints.
func binaryVersion(t *testing.T) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := root.ExecuteContext(t.Context(), []string{"version", "-o", "json"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("fedwarden version: exit code %d: %s", code, errOut.String())
	}
	var info struct{ Version string }
	if err := json.Unmarshal(out.Bytes(), &info); err != nil || info.Version == "" {
		t.Fatalf("fedwarden version -o json printed %q: %v", out.String(), err)
	}
	return info.Version
}

// documented returns a default as the reference writes it.
func documented(def string) string {
	return strings.ReplaceAll(def, version, "VERSION")
}

// byLine returns the values of m in the order of their lines in the page.
func byLine[V any](m map[string]V, line func(V) int) []V {
	all := make([]V, 0, len(m))
	for _, v := range m {
		all = append(all, v)
	}
	slices.SortFunc(all, func(a, b V) int { return line(a) - line(b) })
	return all
}

func rowLine(r row) int { return r.line }

// commands returns every command of the tree but its root, depth first.
func commands(c *cobra.Command) []*cobra.Command {
	var all []*cobra.Command
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		all = append(all, sub)
		all = append(all, commands(sub)...)
	}
	return all
}

// checkSummary checks the table of top-level commands.
func checkSummary(t *testing.T, p *page, tree *cobra.Command) {
	t.Helper()
	var tab *table
	for _, s := range p.sections {
		for _, candidate := range s.tables {
			if candidate.sameHeader(summaryHeader...) {
				tab = candidate
			}
		}
	}
	if tab == nil {
		t.Errorf("%s: add the table | command | what it does | more | of the top-level commands", cliDoc)
		return
	}
	listed := map[string]row{}
	for _, r := range tab.rows {
		path, ok := code(r.cells[0])
		if !ok {
			t.Errorf("%s:%d: the command cell %q should be one code span, `fedwarden NAME`", cliDoc, r.line, r.cells[0])
			continue
		}
		listed[path] = r
	}
	for _, c := range tree.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		r, ok := listed[c.CommandPath()]
		delete(listed, c.CommandPath())
		switch {
		case !ok:
			t.Errorf("%s:%d: add to the table of commands the row\n| `%s` | %s |  |", cliDoc, tab.line, c.CommandPath(), escape(c.Short))
		case len(r.cells) < 2 || unescape(r.cells[1]) != c.Short:
			t.Errorf("%s:%d: the row of `%s` should say what it does as --help does:\n| `%s` | %s | …", cliDoc, r.line, c.CommandPath(), c.CommandPath(), escape(c.Short))
		}
	}
	for _, r := range byLine(listed, rowLine) {
		t.Errorf("%s:%d: remove the row %s from the table of commands: fedwarden has no such top-level command", cliDoc, r.line, r.cells[0])
	}
}

// commandDocs gathers, by command path, the sections about commands.
func commandDocs(t *testing.T, p *page) map[string]*commandDoc {
	t.Helper()
	docs := map[string]*commandDoc{}
	var cur *commandDoc
	level := 0
	for _, s := range p.sections {
		switch {
		case commandHeadingRE.MatchString(s.heading):
			if docs[s.heading] != nil {
				t.Errorf("%s:%d: merge the section %q into the one at line %d", cliDoc, s.line, s.heading, docs[s.heading].line)
			} else {
				docs[s.heading] = &commandDoc{heading: s.heading, line: s.line}
			}
			cur, level = docs[s.heading], s.level
		case s.level <= level:
			cur, level = nil, 0
		}
		addSection(t, cur, s)
	}
	return docs
}

// addSection adds the flag tables and wildcards of s to d, the command
// doc it belongs to (nil: none).
func addSection(t *testing.T, d *commandDoc, s *section) {
	t.Helper()
	for _, tab := range s.tables {
		if !tab.sameHeader(flagHeader...) {
			continue
		}
		if d == nil {
			t.Errorf("%s:%d: this flag table is in no command's section: put it under a heading \"fedwarden NAME\"", cliDoc, tab.line)
			continue
		}
		d.rows = append(d.rows, tab.rows...)
	}
	if d == nil {
		return
	}
	d.text.WriteString(s.text.String())
	for _, m := range flagWildcardRE.FindAllStringSubmatch(s.text.String(), -1) {
		d.prefixes = append(d.prefixes, m[1])
	}
}

// checkCommand checks the section of c, which d is (nil: none).
func checkCommand(t *testing.T, c *cobra.Command, d *commandDoc) {
	t.Helper()
	var flags []*pflag.Flag
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != "help" {
			flags = append(flags, f)
		}
	})
	if d == nil {
		if len(flags) > 0 || exitCodes(c) != "" || (c.HasParent() && c.Parent().HasParent()) {
			t.Errorf("%s: add a section for `%s`:\n\n%s", cliDoc, c.CommandPath(), sectionText(c, flags))
		}
		return
	}
	if !strings.Contains(d.text.String(), "`"+synopsis(c)+"`") {
		t.Errorf("%s:%d: add to the section %q its synopsis, as its Use says:\nUsage: `%s`", cliDoc, d.line, d.heading, synopsis(c))
	}
	if codes := exitCodes(c); codes != "" && !strings.Contains(words(unescape(d.text.String())), words(codes)) {
		t.Errorf("%s:%d: the section %q should give the exit codes as --help does:\n%s", cliDoc, d.line, d.heading, codes)
	}
	rows := map[string]row{}
	for _, r := range d.rows {
		name := flagName(r.cells[0])
		if _, dup := rows[name]; dup {
			t.Errorf("%s:%d: remove this second row of %s from the section %q", cliDoc, r.line, r.cells[0], d.heading)
		}
		rows[name] = r
	}
	for _, f := range flags {
		r, ok := rows[f.Name]
		delete(rows, f.Name)
		if !ok {
			if !d.covers(f.Name) {
				t.Errorf("%s:%d: add to the section %q the row\n%s", cliDoc, d.line, d.heading, flagRow(f))
			}
			continue
		}
		if problem := rowProblem(r, f); problem != "" {
			t.Errorf("%s:%d: in the section %q, %s; the row should be\n%s", cliDoc, r.line, d.heading, problem, flagRow(f))
		}
	}
	for _, r := range byLine(rows, rowLine) {
		t.Errorf("%s:%d: remove the row %s from the section %q: `%s` has no such flag", cliDoc, r.line, r.cells[0], d.heading, c.CommandPath())
	}
}

// synopsis returns how c is called: its path and the arguments its Use
// names.
func synopsis(c *cobra.Command) string {
	if !c.HasParent() {
		return c.Use
	}
	return c.Parent().CommandPath() + " " + c.Use
}

// exitCodes returns the paragraph of c's help that gives its exit codes,
// on one line, or "".
func exitCodes(c *cobra.Command) string {
	i := strings.Index(c.Long, "Exit codes:")
	if i < 0 {
		return ""
	}
	paragraph, _, _ := strings.Cut(c.Long[i:], "\n\n")
	return strings.Join(strings.Fields(paragraph), " ")
}

var nonWordRE = regexp.MustCompile(`[^\pL\pN]+`)

// words returns the words of s, lower-cased, one space apart.
func words(s string) string {
	return " " + strings.TrimSpace(nonWordRE.ReplaceAllString(strings.ToLower(s), " ")) + " "
}

// covers tells whether a wildcard of the section stands for the flag.
func (d *commandDoc) covers(name string) bool {
	for _, p := range d.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// flagName returns the long name in a flag cell, `--name` or `-s`, `--name`.
func flagName(cell string) string {
	i := strings.Index(cell, "`--")
	if i < 0 {
		return cell
	}
	name, _, _ := strings.Cut(cell[i+3:], "`")
	return name
}

// rowProblem says what is wrong with the row r of flag f, or "".
func rowProblem(r row, f *pflag.Flag) string {
	if len(r.cells) != len(flagHeader) {
		return fmt.Sprintf("the row has %d cells, not %d", len(r.cells), len(flagHeader))
	}
	if r.cells[0] != flagCell(f) {
		return fmt.Sprintf("the flag is %s, not %s", flagCell(f), r.cells[0])
	}
	if p := defaultProblem(r.cells[1], f); p != "" {
		return p
	}
	if got := unescape(r.cells[2]); got != f.Usage {
		return fmt.Sprintf("--%s's usage is not what --help prints", f.Name)
	}
	return ""
}

// defaultProblem says what is wrong with the default cell of f, or "": it
// is empty when the default is a zero value, and else starts with the
// default as a code span; what follows, such as where it differs, is free.
func defaultProblem(cell string, f *pflag.Flag) string {
	want := "`" + documented(f.DefValue) + "`"
	switch {
	case cell == "" && !zeroDefault(f.DefValue):
		return fmt.Sprintf("--%s's default %s is missing", f.Name, want)
	case cell != "" && zeroDefault(f.DefValue) && !strings.HasPrefix(cell, want):
		return fmt.Sprintf("--%s has no default but the zero value %q: leave its default empty", f.Name, f.DefValue)
	case cell != "" && !strings.HasPrefix(cell, want):
		return fmt.Sprintf("--%s's default is %s, not %s", f.Name, want, cell)
	}
	return ""
}

// zeroDefault tells whether a default, as pflag prints it, is a zero value
// (which --help does not print).
func zeroDefault(v string) bool {
	switch v {
	case "", "false", "0", "0s", "[]", "map[]", "<nil>":
		return true
	}
	return false
}

func flagCell(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return fmt.Sprintf("`-%s`, `--%s`", f.Shorthand, f.Name)
	}
	return "`--" + f.Name + "`"
}

func flagRow(f *pflag.Flag) string {
	def := ""
	if !zeroDefault(f.DefValue) {
		def = "`" + documented(f.DefValue) + "`"
	}
	return fmt.Sprintf("| %s | %s | %s |", flagCell(f), def, escape(f.Usage))
}

// sectionText is a section of the reference for c, to paste.
func sectionText(c *cobra.Command, flags []*pflag.Flag) string {
	var b strings.Builder
	level := strings.Repeat("#", min(strings.Count(c.CommandPath(), " ")+1, 3))
	fmt.Fprintf(&b, "%s %s\n\n%s.\n\nUsage: `%s`\n", level, c.CommandPath(), escape(c.Short), synopsis(c))
	if codes := exitCodes(c); codes != "" {
		b.WriteString("\n" + escape(codes) + "\n")
	}
	if len(flags) > 0 {
		b.WriteString("\n| flag | default | what it does |\n|---|---|---|\n")
		for _, f := range flags {
			b.WriteString(flagRow(f) + "\n")
		}
	}
	return b.String()
}
