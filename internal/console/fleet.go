package console

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultPageSize is how many rows a page of the fleet or the history
// shows unless the query says otherwise (size), and MaxPageSize the most
// it may ask for.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// Filter is what the query string of the fleet and history pages selects:
// ns, kind, cluster and state (each repeatable or comma-separated, values
// are alternatives), q (text in KIND/NAMESPACE/NAME, any case), page (from
// 1) and size. The state Drifted stands for every state but InSync.
type Filter struct {
	Namespaces []string `json:"ns,omitempty"`
	Kinds      []string `json:"kind,omitempty"`
	Clusters   []string `json:"cluster,omitempty"`
	States     []string `json:"state,omitempty"`
	// ResolvedBy filters the history's episodes by what ended them.
	ResolvedBy []string `json:"resolvedBy,omitempty"`
	Text       string   `json:"q,omitempty"`
	Page       int      `json:"page"`
	PageSize   int      `json:"size"`
}

// ParseFilter reads a Filter from a query string; bad numbers fall back to
// the defaults.
func ParseFilter(q url.Values) Filter {
	f := Filter{
		Namespaces: values(q, "ns"), Kinds: values(q, "kind"), Clusters: values(q, "cluster"), States: values(q, "state"),
		ResolvedBy: values(q, "resolvedBy"), Text: strings.TrimSpace(q.Get("q")), Page: 1, PageSize: DefaultPageSize,
	}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 0 {
		f.Page = n
	}
	if n, err := strconv.Atoi(q.Get("size")); err == nil && n > 0 {
		f.PageSize = min(n, MaxPageSize)
	}
	return f
}

// values returns the non-empty values of key, split at commas.
func values(q url.Values, key string) []string {
	var out []string
	for _, v := range q[key] {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// matchesResource tells whether a resource passes the namespace, kind and
// text filters. Kinds match any case, with or without the group.
func (f Filter) matchesResource(kind, group, namespace, lowerID string) bool {
	if len(f.Namespaces) > 0 && !slices.Contains(f.Namespaces, namespace) {
		return false
	}
	if len(f.Kinds) > 0 && !slices.ContainsFunc(f.Kinds, func(k string) bool {
		name, g, hasGroup := strings.Cut(k, ".")
		return strings.EqualFold(name, kind) && (!hasGroup || strings.EqualFold(g, group))
	}) {
		return false
	}
	return f.Text == "" || strings.Contains(lowerID, strings.ToLower(f.Text))
}

// matchesState tells whether state passes the state filter.
func (f Filter) matchesState(state string) bool {
	if len(f.States) == 0 {
		return true
	}
	return slices.ContainsFunc(f.States, func(s string) bool {
		return strings.EqualFold(s, state) || (strings.EqualFold(s, stateDrifted) && state != "InSync")
	})
}

// Fleet is one page of the fleet: the matrix of resources by clusters.
type Fleet struct {
	Filter Filter `json:"filter"`
	// Clusters are the columns.
	Clusters []string `json:"clusters"`
	// Rows are the resources of this page.
	Rows []FleetRow `json:"rows"`
	// Counts are the copies in each state over every resource the filter
	// selects (not only this page), in the columns shown; every state is
	// present.
	Counts map[string]int `json:"counts"`
	// Total is the number of resources the filter selects, Pages the
	// number of pages.
	Total int `json:"total"`
	Pages int `json:"pages"`
	// Problems say what the identity may not see.
	Problems []string `json:"problems,omitempty"`
}

// FleetRow is one federated resource.
type FleetRow struct {
	// ID is KIND/NAMESPACE/NAME (the CPV's namespace).
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Group     string `json:"group"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// CPV is the ClusterPropagatedVersion's name.
	CPV string `json:"cpv"`
	// Link is the resource page.
	Link string `json:"link"`
	// TemplateVersion and OverrideVersion are the host's.
	TemplateVersion string `json:"templateVersion"`
	OverrideVersion string `json:"overrideVersion"`
	// Cells are the copies, by cluster; a cluster the resource is not
	// placed on has none.
	Cells map[string]Cell `json:"cells"`
}

// Cell is one copy.
type Cell struct {
	State           string       `json:"state"`
	TemplateVersion string       `json:"templateVersion,omitempty"`
	OverrideVersion string       `json:"overrideVersion,omitempty"`
	DriftedSince    *metav1.Time `json:"driftedSince,omitempty"`
}

// fleet answers a fleet page. Every row the filter selects is looked at,
// whatever the page, to count its copies: the cost is one pass over the
// rows, with the states of their cells looked up by index.
func (ix *index) fleet(f Filter) Fleet {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	rows := ix.ordered()
	out := Fleet{Filter: f, Clusters: ix.columns(f), Counts: map[string]int{}, Rows: []FleetRow{}}
	if out.Clusters == nil {
		out.Clusters = []string{}
	}
	wanted := f.stateMask()
	counts := make([]int, len(States))
	first := (f.Page - 1) * f.PageSize
	var shown []cellRef
	for _, r := range rows {
		if !f.matchesResource(r.kind, r.group, r.namespace, r.lower) {
			continue
		}
		shown = ix.shownCells(r, f, out.Clusters, shown[:0])
		if len(f.Clusters) > 0 && len(shown) == 0 || len(f.States) > 0 && !ix.anyState(shown, wanted, f) {
			continue
		}
		for _, c := range shown {
			if i := ix.stateOf(c); i >= 0 {
				counts[i]++
			} else {
				out.Counts[string(c.entry.State)]++
			}
		}
		if out.Total >= first && out.Total < first+f.PageSize {
			out.Rows = append(out.Rows, ix.fleetRow(r, out.Clusters))
		}
		out.Total++
	}
	for i, s := range States {
		out.Counts[s] = counts[i]
	}
	out.Pages = max(1, (out.Total+f.PageSize-1)/f.PageSize)
	return out
}

// shownCells appends to buf the cells of r in the columns shown: all of
// them unless the filter names clusters.
func (ix *index) shownCells(r *row, f Filter, columns []string, buf []cellRef) []cellRef {
	if len(f.Clusters) == 0 {
		return append(buf, r.cells...)
	}
	for _, name := range columns {
		if c, ok := r.cell(name); ok {
			buf = append(buf, c)
		}
	}
	return buf
}

// anyState tells whether one of cells is in a state the filter wants
// (wanted, by index in States).
func (ix *index) anyState(cells []cellRef, wanted []bool, f Filter) bool {
	for _, c := range cells {
		if i := ix.stateOf(c); i >= 0 && wanted[i] || i < 0 && f.matchesState(string(c.entry.State)) {
			return true
		}
	}
	return false
}

// stateMask says, by index in States, which states the filter wants.
func (f Filter) stateMask() []bool {
	mask := make([]bool, len(States))
	for i, s := range States {
		mask[i] = f.matchesState(s)
	}
	return mask
}

// fleetRow renders r's cells in columns.
func (ix *index) fleetRow(r *row, columns []string) FleetRow {
	fr := FleetRow{
		ID: r.id, Kind: r.kind, Group: r.group, Namespace: r.namespace, Name: r.name, CPV: r.cpv.Name, Link: resourceLink(r),
		TemplateVersion: string(r.cpv.Status.TemplateVersion), OverrideVersion: string(r.cpv.Status.OverrideVersion),
		Cells: map[string]Cell{},
	}
	for _, name := range columns {
		if c, ok := r.cell(name); ok {
			fr.Cells[name] = ix.cellOf(c)
		}
	}
	return fr
}

func (ix *index) cellOf(c cellRef) Cell {
	cell := Cell{State: ix.state(c)}
	if c.entry != nil {
		cell.TemplateVersion, cell.OverrideVersion, cell.DriftedSince = string(c.entry.TemplateVersion), string(c.entry.OverrideVersion), c.entry.DriftedSince
	}
	return cell
}

// resourceLink is the page of r's resource: /resource?kind=KIND.GROUP&
// namespace=NS&name=NAME, the link `controller-manager --console-url`
// puts in notifications.
func resourceLink(r *row) string {
	q := url.Values{}
	kind := r.kind
	if r.group != "" {
		kind += "." + r.group
	}
	q.Set("kind", kind)
	q.Set("namespace", r.namespace)
	q.Set("name", r.name)
	return "resource?" + q.Encode()
}
