package drift

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedwarden/fedwarden/internal/drift"
)

// The suggestion rule of `drift suggest`: from the ended episodes of one
// federated resource's drift ledgers, the driftPolicy entries that would
// have kept quiet a field manager that changes the same fields again and
// again. A controller (an autoscaler, a webhook's controller, an
// injector) that only ever changes the fields it keeps changing gets an
// ignoreManagers entry; anything else that keeps changing a field, a
// person's tool among them, gets ignorePaths entries for those fields, so
// that a person's other edits, and the controller's other writes, are
// still drift.

// Policy fields a suggestion adds to.
const (
	fieldIgnoreManagers = "ignoreManagers"
	fieldIgnorePaths    = "ignorePaths"
)

// Bounds of the driftPolicy's entries (api/types/v1beta1): a manager of
// longer name cannot be ignored, a longer path cannot be an ignorePaths
// entry.
const (
	maxManagerName = 128
	maxIgnoredPath = 256
)

// Suggestion is one entry to add to a resource's spec.driftPolicy, and why.
type Suggestion struct {
	// Field is ignoreManagers or ignorePaths.
	Field string `json:"field"`
	// Value is the manager or the path to ignore.
	Value string `json:"value"`
	// Evidence is what the ledgers show: for ignoreManagers, the manager's
	// changes of each path it keeps changing; for ignorePaths, each
	// manager's changes of the path.
	Evidence []Evidence `json:"evidence"`
}

// Evidence is how often one field manager changed one path (or fields
// under it) in the ledgers of a resource.
type Evidence struct {
	// Manager is the field manager.
	Manager string `json:"manager"`
	// Operations it wrote with (Apply, Update); empty for episodes
	// recorded before the ledger kept them.
	Operations []string `json:"operations"`
	// Person says the manager is a person's tool (kubectl): it is never
	// proposed for ignoreManagers.
	Person bool `json:"person"`
	// Path is the path changed, or the parent of the paths changed.
	Path string `json:"path"`
	// Episodes counts the drift episodes in which it changed the path.
	Episodes int `json:"episodes"`
	// Clusters are those episodes' clusters, sorted.
	Clusters []string `json:"clusters"`
	// FirstSeen is when the first of those episodes started, LastSeen when
	// the last one ended.
	FirstSeen metav1.Time `json:"firstSeen"`
	LastSeen  metav1.Time `json:"lastSeen"`
}

// isPerson tells whether a field manager is a person's tool rather than a
// controller: kubectl, which names its writes kubectl-edit, kubectl-scale,
// kubectl-client-side-apply and so on by command, and kubectl (or
// kubectl.exe) where a command names none (kubectl scale) or for
// server-side apply. Ignoring such a manager would hide every hand edit of
// the resource, which is the drift a user most wants to see.
func isPerson(manager string) bool {
	return manager == "kubectl" || manager == "kubectl.exe" || strings.HasPrefix(manager, "kubectl-")
}

// write is one field a manager changed in one episode.
type write struct {
	episode   int
	manager   string
	operation string
	path      string
}

// writes returns what episodes record of who changed which field, leaving
// out what policy ignores in the episode's cluster. An episode recorded
// before the ledger kept changedByOperations tells which manager changed
// which path only when it names one manager; it is left out otherwise.
func writes(episodes []Episode, policy func(cluster string) drift.Policy) []write {
	var out []write
	for i, ep := range episodes {
		p := policy(ep.Cluster)
		add := func(manager, operation, path string) {
			if !p.Ignored(path) && !p.IgnoresManager(manager) {
				out = append(out, write{episode: i, manager: manager, operation: operation, path: path})
			}
		}
		switch {
		case len(ep.ChangedByOperations) > 0:
			for _, o := range ep.ChangedByOperations {
				for _, path := range o.Paths {
					add(o.Manager, string(o.Operation), path)
				}
			}
		case len(ep.ChangedBy) == 1:
			for _, path := range ep.ChangedPaths {
				add(ep.ChangedBy[0], "", path)
			}
		}
	}
	return out
}

// suggest returns the entries to add to the drift policy of the resource
// whose ended episodes are episodes; policy is its policy in a cluster.
// A path is repeated when a manager changed it in at least minEpisodes
// episodes, and so is the parent of several paths a manager changed, none
// repeated, when they add up to minEpisodes (see repeated). Suggestions
// come ignoreManagers first, then ignorePaths, each sorted by value.
func suggest(episodes []Episode, policy func(cluster string) drift.Policy, minEpisodes int) []Suggestion {
	byManager := map[string][]write{}
	for _, w := range writes(episodes, policy) {
		byManager[w.manager] = append(byManager[w.manager], w)
	}
	var managers, paths []Suggestion
	for _, manager := range slices.Sorted(maps.Keys(byManager)) {
		ws := byManager[manager]
		kept := repeated(ws, minEpisodes)
		if len(kept) == 0 {
			continue
		}
		var evidence []Evidence
		for _, path := range kept {
			evidence = append(evidence, evidenceOf(episodes, manager, path, ws))
		}
		if canIgnoreManager(manager) && covers(kept, ws) {
			managers = append(managers, Suggestion{Field: fieldIgnoreManagers, Value: manager, Evidence: evidence})
			continue
		}
		for _, e := range evidence {
			if len(e.Path) <= maxIgnoredPath {
				paths = append(paths, Suggestion{Field: fieldIgnorePaths, Value: e.Path, Evidence: []Evidence{e}})
			}
		}
	}
	return append(managers, mergePaths(paths)...)
}

// canIgnoreManager tells whether manager may be proposed for
// ignoreManagers: not a person's tool, and a name the policy can hold.
func canIgnoreManager(manager string) bool {
	return !isPerson(manager) && len(manager) <= maxManagerName
}

// repeated returns the paths of ws, one manager's writes, changed in at
// least minEpisodes episodes, sorted. Of the paths changed less often,
// those under one parent (at least two levels deep, never /spec or
// /metadata as a whole) are taken together: when there are two or more
// and they add up to minEpisodes episodes, the parent is returned for
// them, as a webhook that sets a different annotation each time calls
// for. A path under another one returned is left out.
func repeated(ws []write, minEpisodes int) []string {
	episodes := map[string]map[int]bool{}
	for _, w := range ws {
		if episodes[w.path] == nil {
			episodes[w.path] = map[int]bool{}
		}
		episodes[w.path][w.episode] = true
	}
	var out []string
	children := map[string][]string{}
	for _, path := range slices.Sorted(maps.Keys(episodes)) {
		if len(episodes[path]) >= minEpisodes {
			out = append(out, path)
			continue
		}
		if parent := parentOf(path); strings.Count(parent, "/") >= 2 {
			children[parent] = append(children[parent], path)
		}
	}
	for parent, paths := range children {
		union := map[int]bool{}
		for _, path := range paths {
			maps.Copy(union, episodes[path])
		}
		if len(paths) >= 2 && len(union) >= minEpisodes {
			out = append(out, parent)
		}
	}
	slices.Sort(out)
	return outermost(out)
}

// outermost returns the paths of sorted that are under no other of them
// (a path sorts after every path it is under).
func outermost(sorted []string) []string {
	var out []string
	for _, path := range sorted {
		if !slices.ContainsFunc(out, func(o string) bool { return under(path, o) }) {
			out = append(out, path)
		}
	}
	return out
}

// parentOf is the JSON pointer of what holds path: /a/b for /a/b/c.
func parentOf(path string) string {
	return path[:strings.LastIndex(path, "/")]
}

// under tells whether path is at or under the path at.
func under(path, at string) bool {
	return path == at || strings.HasPrefix(path, at+"/")
}

// covers tells whether every path of ws is at or under one of kept: the
// manager changes nothing but what it keeps changing.
func covers(kept []string, ws []write) bool {
	return !slices.ContainsFunc(ws, func(w write) bool {
		return !slices.ContainsFunc(kept, func(k string) bool { return under(w.path, k) })
	})
}

// evidenceOf gathers what ws, the writes of manager, show of path and
// what is under it.
func evidenceOf(episodes []Episode, manager, path string, ws []write) Evidence {
	e := Evidence{Manager: manager, Person: isPerson(manager), Path: path, Operations: []string{}, Clusters: []string{}}
	seen := map[int]bool{}
	for _, w := range ws {
		if !under(w.path, path) {
			continue
		}
		if w.operation != "" && !slices.Contains(e.Operations, w.operation) {
			e.Operations = append(e.Operations, w.operation)
		}
		if seen[w.episode] {
			continue
		}
		seen[w.episode] = true
		ep := episodes[w.episode]
		e.Episodes++
		if !slices.Contains(e.Clusters, ep.Cluster) {
			e.Clusters = append(e.Clusters, ep.Cluster)
		}
		if e.FirstSeen.IsZero() || ep.Start.Before(&e.FirstSeen) {
			e.FirstSeen = ep.Start
		}
		if e.LastSeen.Before(&ep.End) {
			e.LastSeen = ep.End
		}
	}
	slices.Sort(e.Operations)
	slices.Sort(e.Clusters)
	return e
}

// mergePaths makes one suggestion of each path, with every manager's
// evidence, and drops a path under another suggested path, its evidence
// going to that one; sorted by path.
func mergePaths(paths []Suggestion) []Suggestion {
	slices.SortStableFunc(paths, func(a, b Suggestion) int { return cmp.Compare(a.Value, b.Value) })
	var out []Suggestion
	for _, s := range paths {
		if i := slices.IndexFunc(out, func(o Suggestion) bool { return under(s.Value, o.Value) }); i >= 0 {
			out[i].Evidence = append(out[i].Evidence, s.Evidence...)
			continue
		}
		out = append(out, s)
	}
	return out
}
