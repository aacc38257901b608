package geospread

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

// Name is the plugin's name in the registry.
const Name = "GeoSpread"

// maxNamesShown bounds the group names listed in a failure message.
const maxNamesShown = 5

// Plugin applies the placement's spread constraints, in order, to the
// ranked clusters.
type Plugin struct{}

var (
	_ framework.SelectPlugin = (*Plugin)(nil)
	_ framework.IntentPlugin = (*Plugin)(nil)
)

// New returns the GeoSpread plugin.
func New() framework.Plugin { return &Plugin{} }

// Name returns Name.
func (*Plugin) Name() string { return Name }

// IsIntent tells whether the user changed the spread constraints since
// the last decision: then a cluster left out loses its copy. Otherwise the
// spread is decided again from the clusters' state (after an outage, for
// example), and a cluster left out that holds a copy keeps it.
func (*Plugin) IsIntent(s *framework.State) bool { return s.Workload.SpreadChanged }

// Select keeps the clusters every spread constraint allows. Each
// constraint narrows the list the one before it left.
func (*Plugin) Select(s *framework.State, ranked []framework.ScoredCluster) (framework.Selection, framework.Result) {
	constraints := s.Workload.Placement.SpreadConstraints
	if len(constraints) == 0 {
		return framework.Selection{Chosen: ranked}, framework.OK()
	}
	sel := framework.Selection{Chosen: slices.Clone(ranked), LeftOut: map[string]string{}}
	for _, c := range constraints {
		if res := apply(c, &sel); !res.IsSuccess() {
			return framework.Selection{}, res
		}
	}
	return sel, framework.OK()
}

// apply narrows sel.Chosen to what one constraint allows and records why
// each dropped cluster was left out. sel.Chosen keeps its order.
func apply(sc typesv1beta1.SpreadConstraint, sel *framework.Selection) framework.Result {
	t, res := topologyOf(sc.SpreadBy)
	if !res.IsSuccess() {
		return res
	}
	lim, res := limitsOf(sc)
	if !res.IsSuccess() {
		return res
	}
	groups, noKey := t.group(sel.Chosen)
	for _, c := range noKey {
		sel.LeftOut[c.Name] = "no " + t.noun(1) + " set"
	}
	if len(groups) < lim.minGroups {
		return tooFewGroups(t, lim.minGroups, groups, len(noKey))
	}
	keep := t.choose(groups, lim, sel.LeftOut)
	sel.Chosen = slices.DeleteFunc(sel.Chosen, func(c framework.ScoredCluster) bool { return !keep[c.Name] })
	return framework.OK()
}

// limits are a constraint's bounds, with the defaults filled in.
type limits struct {
	minGroups, maxGroups, maxPerGroup int
}

// limitsOf reads the bounds of sc: MinGroups defaults to 1, and an unset
// maximum means no limit. Bounds the API would reject are an Error.
func limitsOf(sc typesv1beta1.SpreadConstraint) (limits, framework.Result) {
	lim := limits{minGroups: 1, maxGroups: -1, maxPerGroup: -1}
	if sc.MinGroups != nil {
		lim.minGroups = int(*sc.MinGroups)
	}
	if sc.MaxGroups != nil {
		lim.maxGroups = int(*sc.MaxGroups)
	}
	if sc.MaxClustersPerGroup != nil {
		lim.maxPerGroup = int(*sc.MaxClustersPerGroup)
	}
	switch {
	case lim.minGroups < 1:
		return lim, framework.Fail("spread by %s: minGroups must be at least 1, got %d", sc.SpreadBy, lim.minGroups)
	case sc.MaxGroups != nil && lim.maxGroups < lim.minGroups:
		return lim, framework.Fail("spread by %s: maxGroups %d is less than minGroups %d", sc.SpreadBy, lim.maxGroups, lim.minGroups)
	case sc.MaxClustersPerGroup != nil && lim.maxPerGroup < 1:
		return lim, framework.Fail("spread by %s: maxClustersPerGroup must be at least 1, got %d", sc.SpreadBy, lim.maxPerGroup)
	}
	return lim, framework.OK()
}

// topology is what clusters are grouped by: a region or a zone.
type topology struct {
	by  typesv1beta1.SpreadBy
	key func(c *framework.Cluster) string
}

// topologyOf returns the topology for by; an unknown one is an Error.
func topologyOf(by typesv1beta1.SpreadBy) (topology, framework.Result) {
	switch by {
	case typesv1beta1.SpreadByRegion:
		return topology{by: by, key: func(c *framework.Cluster) string { return c.Region }}, framework.OK()
	case typesv1beta1.SpreadByZone:
		return topology{by: by, key: firstZone}, framework.OK()
	}
	return topology{}, framework.Fail("unknown spreadBy %q", by)
}

// firstZone is the cluster's first zone, or "" when it lists none.
func firstZone(c *framework.Cluster) string {
	if len(c.Zones) == 0 {
		return ""
	}
	return c.Zones[0]
}

// noun is "region" or "zone", plural unless n is 1.
func (t topology) noun(n int) string {
	if n == 1 {
		return string(t.by)
	}
	return string(t.by) + "s"
}

// group is the clusters that share one region or zone, best first.
type group struct {
	key      string
	clusters []framework.ScoredCluster
}

// group sorts clusters into groups, best group first, and returns the
// clusters that have no key apart.
func (t topology) group(clusters []framework.ScoredCluster) ([]group, []framework.ScoredCluster) {
	var groups []group
	var noKey []framework.ScoredCluster
	for _, c := range clusters {
		k := t.key(c.Cluster)
		if k == "" {
			noKey = append(noKey, c)
			continue
		}
		i := slices.IndexFunc(groups, func(g group) bool { return g.key == k })
		if i < 0 {
			groups = append(groups, group{key: k})
			i = len(groups) - 1
		}
		groups[i].clusters = append(groups[i].clusters, c)
	}
	for _, g := range groups {
		slices.SortStableFunc(g.clusters, compareClusters)
	}
	slices.SortStableFunc(groups, compareGroups)
	return groups, noKey
}

// compareClusters orders the clusters of a group: serving first (Ready,
// or within a failover toleration, and not failed over), then those
// already scheduled other than as a surge (so a workload stays put unless
// its cluster fails, and returns to it after failback), then those
// scheduled, then higher score, then name.
func compareClusters(a, b framework.ScoredCluster) int {
	if c := compareTrueFirst(a.Serving(), b.Serving()); c != 0 {
		return c
	}
	if c := compareTrueFirst(a.Scheduled() && !a.Previous.Surge, b.Scheduled() && !b.Previous.Surge); c != 0 {
		return c
	}
	if c := compareTrueFirst(a.Scheduled(), b.Scheduled()); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// compareGroups orders groups: those where the workload already runs on a
// Ready cluster first, then by best cluster score, then by name.
func compareGroups(a, b group) int {
	if c := compareTrueFirst(a.keepsWorkload(), b.keepsWorkload()); c != 0 {
		return c
	}
	if c := cmp.Compare(b.bestScore(), a.bestScore()); c != 0 {
		return c
	}
	return cmp.Compare(a.key, b.key)
}

func compareTrueFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// keepsWorkload tells whether the workload already runs on a serving
// cluster of g.
func (g group) keepsWorkload() bool {
	return slices.ContainsFunc(g.clusters, func(c framework.ScoredCluster) bool { return c.Serving() && c.Scheduled() })
}

// bestScore is the highest score of g's clusters.
func (g group) bestScore() int64 {
	best := g.clusters[0].Score
	for _, c := range g.clusters[1:] {
		best = max(best, c.Score)
	}
	return best
}

// choose takes the first lim.maxGroups groups and the first
// lim.maxPerGroup clusters of each, records why the others are left out
// and returns the names it keeps.
func (t topology) choose(groups []group, lim limits, leftOut map[string]string) map[string]bool {
	keep := map[string]bool{}
	for i, g := range groups {
		for j, c := range g.clusters {
			switch {
			case lim.maxGroups >= 0 && i >= lim.maxGroups:
				leftOut[c.Name] = fmt.Sprintf("%s %s not chosen: at most %d %s (maxGroups)",
					t.noun(1), g.key, lim.maxGroups, t.noun(lim.maxGroups))
			case lim.maxPerGroup >= 0 && j >= lim.maxPerGroup:
				leftOut[c.Name] = fmt.Sprintf("%s %s already has its %d %s (maxClustersPerGroup)",
					t.noun(1), g.key, lim.maxPerGroup, clusterNoun(lim.maxPerGroup))
			default:
				keep[c.Name] = true
			}
		}
	}
	return keep
}

// tooFewGroups explains that fewer than minGroups groups have a cluster, for
// example "needs clusters in at least 2 regions, found 1 (eu-west)".
func tooFewGroups(t topology, minGroups int, groups []group, noKey int) framework.Result {
	keys := make([]string, 0, len(groups))
	for _, g := range groups {
		keys = append(keys, g.key)
	}
	slices.Sort(keys)
	msg := fmt.Sprintf("needs clusters in at least %d %s, found %d", minGroups, t.noun(minGroups), len(keys))
	if len(keys) > 0 {
		msg += " (" + listNames(keys) + ")"
	}
	if noKey > 0 {
		verb := "have"
		if noKey == 1 {
			verb = "has"
		}
		msg += fmt.Sprintf("; %d %s %s no %s set", noKey, clusterNoun(noKey), verb, t.noun(1))
	}
	return framework.RuleOut("%s", msg)
}

// listNames joins names, showing at most maxNamesShown of them.
func listNames(names []string) string {
	if len(names) <= maxNamesShown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamesShown], ", "), len(names)-maxNamesShown)
}

func clusterNoun(n int) string {
	if n == 1 {
		return "cluster"
	}
	return "clusters"
}
