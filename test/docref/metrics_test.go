package docref

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	// The binary's packages, whose init functions register its metrics.
	_ "github.com/fedwarden/fedwarden/internal/cli/root"
)

const (
	metricsDoc = "docs/reference/metrics.md"
	promPath   = "github.com/prometheus/client_golang/prometheus"
)

// Where the binary's code is, relative to the repository's root.
var codeDirs = []string{"cmd", "internal"}

var metricHeader = []string{"metric", "type", "labels", "what it counts", "defined in"}

// metric is a metric a prometheus.New* call of Fedwarden's code defines.
type metric struct {
	name, kind, help string
	labels           []string
	file             string // relative to the repository's root
	line             int
}

func (m metric) String() string { return fmt.Sprintf("%s (%s:%d)", m.name, m.file, m.line) }

// TestMetricsReference checks docs/reference/metrics.md against the
// metrics the fedwarden binary registers: each one defined by a
// prometheus.New* call in cmd/ or internal/ and registered into
// controller-runtime's metrics.Registry, which the binary serves, has a row
// with its type, labels and file, and no row names any other.
func TestMetricsReference(t *testing.T) {
	t.Parallel()
	defined := definedMetrics(t)
	served := map[string]metric{}
	for _, m := range defined {
		if err := checkRegistered(m); err != nil {
			t.Error(err)
			continue
		}
		served[m.name] = m
	}
	rows := metricRows(t)
	for _, name := range gatheredNames(t) {
		if _, ok := served[name]; !ok {
			t.Errorf("metrics.Registry serves %s, whose prometheus.New* call this test found nowhere in %v: document it in %s, and teach the test to find it", name, codeDirs, metricsDoc)
		}
	}
	for _, m := range sortedMetrics(served) {
		r, ok := rows[m.name]
		delete(rows, m.name)
		if !ok {
			t.Errorf("%s: add the row\n%s", metricsDoc, metricRow(m, "WHAT IT COUNTS"))
			continue
		}
		if p := metricRowProblem(r, m); p != "" {
			t.Errorf("%s:%d: %s; the row should be\n%s", metricsDoc, r.line, p, metricRow(m, r.cells[3]))
		}
	}
	for _, r := range byLine(rows, rowLine) {
		name, _ := code(r.cells[0])
		t.Errorf("%s:%d: remove the row of %s: %s", metricsDoc, r.line, name, absentReason(name))
	}
}

// definedMetrics returns the metrics that the prometheus.New* calls in
// codeDirs define, leaving out tests.
func definedMetrics(t *testing.T) []metric {
	t.Helper()
	var all []metric
	for _, dir := range codeDirs {
		err := filepath.WalkDir(filepath.Join("..", "..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			ms, err := packageMetrics(path)
			all = append(all, ms...)
			return err
		})
		if err != nil {
			t.Fatalf("reading the code: %v", err)
		}
	}
	return all
}

// packageMetrics returns the metrics the Go files of the directory dir
// define.
func packageMetrics(dir string) ([]metric, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	names = slices.DeleteFunc(names, func(name string) bool { return strings.HasSuffix(name, "_test.go") })
	if uses, err := importsAny(names, promPath); err != nil || !uses {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", name, err)
		}
		files = append(files, f)
	}
	consts := packageValues(files)
	var all []metric
	for _, f := range files {
		ms, err := fileMetrics(fset, f, consts)
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	return all, nil
}

// importsAny tells whether any of the Go files imports the package of path.
func importsAny(names []string, path string) (bool, error) {
	fset := token.NewFileSet()
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			return false, fmt.Errorf("parsing %s: %w", name, err)
		}
		if importName(f, path) != "" {
			return true, nil
		}
	}
	return false, nil
}

// packageValues returns the package-level names bound to one expression,
// var x = ... or const x = ..., so that a metric's name, help or labels
// may be such a name.
func packageValues(files []*ast.File) map[string]ast.Expr {
	values := map[string]ast.Expr{}
	for _, f := range files {
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || (gen.Tok != token.VAR && gen.Tok != token.CONST) {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						values[id.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	return values
}

var newMetricRE = regexp.MustCompile(`^New(Counter|Gauge|Histogram|Summary|Untyped)(Vec)?$`)

// fileMetrics returns the metrics the prometheus.New* calls of f define.
func fileMetrics(fset *token.FileSet, f *ast.File, values map[string]ast.Expr) ([]metric, error) {
	prom := importName(f, promPath)
	if prom == "" {
		return nil, nil
	}
	var all []metric
	var err error
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || err != nil {
			return err == nil
		}
		fn := calledIn(call, prom)
		m := newMetricRE.FindStringSubmatch(fn)
		if m == nil || len(call.Args) == 0 {
			return true
		}
		pos := fset.Position(call.Pos())
		rel, _ := filepath.Rel(filepath.Join("..", ".."), pos.Filename)
		def := metric{kind: strings.ToLower(m[1]), file: filepath.ToSlash(rel), line: pos.Line}
		err = readOpts(&def, call, values)
		all = append(all, def)
		return true
	})
	return all, err
}

// calledIn returns the name of the function of package pkg that call
// calls, or "" when it calls none.
func calledIn(call *ast.CallExpr, pkg string) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if id, ok := sel.X.(*ast.Ident); !ok || id.Name != pkg {
		return ""
	}
	return sel.Sel.Name
}

// readOpts reads the name, help and labels of def from the arguments of
// its call: the options' Namespace, Subsystem, Name and Help, and the
// label names of a Vec.
func readOpts(def *metric, call *ast.CallExpr, values map[string]ast.Expr) error {
	lit, ok := call.Args[0].(*ast.CompositeLit)
	if !ok {
		return fmt.Errorf("%s:%d: the test reads a metric's options only from a composite literal, prometheus.XxxOpts{...}: make it one or teach the test", def.file, def.line)
	}
	var parts [3]string
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key := kv.Key.(*ast.Ident).Name
		i := slices.Index([]string{"Namespace", "Subsystem", "Name", "Help"}, key)
		if i < 0 {
			continue
		}
		s, ok := stringValue(kv.Value, values)
		if !ok {
			return fmt.Errorf("%s:%d: the test cannot read the %s of this metric: make it a string constant or teach the test", def.file, def.line, key)
		}
		if key == "Help" {
			def.help = s
		} else {
			parts[i] = s
		}
	}
	def.name = prometheus.BuildFQName(parts[0], parts[1], parts[2])
	if len(call.Args) > 1 {
		labels, ok := stringsValue(call.Args[1], values)
		if !ok {
			return fmt.Errorf("%s:%d: the test cannot read the labels of %s: make them a []string literal or teach the test", def.file, def.line, def.name)
		}
		def.labels = labels
	}
	return nil
}

// stringValue returns the string that e, a literal, a sum of them or a
// package-level name bound to one, is.
func stringValue(e ast.Expr, values map[string]ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		x, okx := stringValue(e.X, values)
		y, oky := stringValue(e.Y, values)
		return x + y, okx && oky && e.Op == token.ADD
	case *ast.ParenExpr:
		return stringValue(e.X, values)
	case *ast.Ident:
		if v, ok := values[e.Name]; ok {
			return stringValue(v, values)
		}
	}
	return "", false
}

// stringsValue returns the strings that e, a []string literal or a
// package-level name bound to one, holds.
func stringsValue(e ast.Expr, values map[string]ast.Expr) ([]string, bool) {
	if id, ok := e.(*ast.Ident); ok {
		if id.Name == "nil" {
			return nil, true
		}
		if v, ok := values[id.Name]; ok {
			return stringsValue(v, values)
		}
		return nil, false
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	var all []string
	for _, elt := range lit.Elts {
		s, ok := stringValue(elt, values)
		if !ok {
			return nil, false
		}
		all = append(all, s)
	}
	return all, true
}

// importName returns the name f uses for the package of path, or "".
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p != path {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return filepath.Base(path)
	}
	return ""
}

// checkRegistered tells whether the registry the binary serves holds m:
// registering a collector of m's description there again must fail as
// already registered; any other outcome means it is not registered, or
// is with other labels or help.
func checkRegistered(m metric) error {
	err := ctrlmetrics.Registry.Register(probe{prometheus.NewDesc(m.name, m.help, m.labels, nil)})
	var already prometheus.AlreadyRegisteredError
	switch {
	case errors.As(err, &already):
		return nil
	case err == nil:
		ctrlmetrics.Registry.Unregister(probe{prometheus.NewDesc(m.name, m.help, m.labels, nil)})
		return fmt.Errorf("%s is defined but not registered into controller-runtime's metrics.Registry, so fedwarden never serves it: register it, or drop it", m)
	default:
		return fmt.Errorf("%s: metrics.Registry holds a metric of that name, but not with the labels %q and help the test read from the code: %v", m, m.labels, err)
	}
}

// isRegistered tells whether metrics.Registry holds a metric named name,
// whatever its labels and help: registering another of that name fails.
func isRegistered(name string) bool {
	p := probe{prometheus.NewDesc(name, "probe of the reference test", nil, nil)}
	if err := ctrlmetrics.Registry.Register(p); err != nil {
		return true
	}
	ctrlmetrics.Registry.Unregister(p)
	return false
}

// probe is a collector of one description, and of no metric.
type probe struct{ desc *prometheus.Desc }

func (p probe) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }
func (probe) Collect(chan<- prometheus.Metric)      {}

// gatheredNames returns the names of Fedwarden's metrics, fedwarden_*,
// that metrics.Registry serves now: those without labels (a Vec shows
// only once it has a series).
func gatheredNames(t *testing.T) []string {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering metrics.Registry: %v", err)
	}
	var names []string
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "fedwarden_") {
			names = append(names, f.GetName())
		}
	}
	return names
}

// metricRows returns the rows of the reference's metric table, by name.
func metricRows(t *testing.T) map[string]row {
	t.Helper()
	p := readPage(t, filepath.Join("..", "..", metricsDoc))
	rows := map[string]row{}
	for _, s := range p.sections {
		for _, tab := range s.tables {
			if !tab.sameHeader(metricHeader...) {
				continue
			}
			for _, r := range tab.rows {
				name, ok := code(r.cells[0])
				if !ok {
					t.Errorf("%s:%d: the metric cell %q should be one code span, `name`", metricsDoc, r.line, r.cells[0])
					continue
				}
				if _, dup := rows[name]; dup {
					t.Errorf("%s:%d: remove this second row of %s", metricsDoc, r.line, name)
				}
				rows[name] = r
			}
		}
	}
	if len(rows) == 0 {
		t.Errorf("%s: add the table | metric | type | labels | what it counts | defined in |", metricsDoc)
	}
	return rows
}

// metricRowProblem says what is wrong with the row r of m, or "".
func metricRowProblem(r row, m metric) string {
	switch {
	case len(r.cells) != len(metricHeader):
		return fmt.Sprintf("the row has %d cells, not %d", len(r.cells), len(metricHeader))
	case r.cells[1] != m.kind:
		return fmt.Sprintf("%s is a %s, not a %s", m.name, m.kind, r.cells[1])
	case r.cells[2] != labelsCell(m.labels):
		return fmt.Sprintf("the labels of %s are %s, not %s", m.name, orNone(labelsCell(m.labels)), orNone(r.cells[2]))
	case r.cells[4] != m.file:
		return fmt.Sprintf("%s is defined in %s, not %s", m.name, m.file, r.cells[4])
	}
	return ""
}

// absentReason says why the reference must not name the metric name.
func absentReason(name string) string {
	if isRegistered(name) {
		return "metrics.Registry holds it, but no prometheus.New* call in " + strings.Join(codeDirs, " or ") + " defines it: it is not Fedwarden's"
	}
	return "fedwarden registers no metric of that name"
}

func labelsCell(labels []string) string {
	cells := make([]string, len(labels))
	for i, l := range labels {
		cells[i] = "`" + l + "`"
	}
	return strings.Join(cells, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func metricRow(m metric, counts string) string {
	return fmt.Sprintf("| `%s` | %s | %s | %s | %s |", m.name, m.kind, labelsCell(m.labels), counts, m.file)
}

func sortedMetrics(byName map[string]metric) []metric {
	all := make([]metric, 0, len(byName))
	for _, m := range byName {
		all = append(all, m)
	}
	slices.SortFunc(all, func(a, b metric) int { return strings.Compare(a.name, b.name) })
	return all
}
