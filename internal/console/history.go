package console

import (
	"cmp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Episode is one drift episode of a copy: an ended one from the CPV's
// driftHistory, or the one going on (Open, from driftedSince until now).
type Episode struct {
	// Resource is KIND/NAMESPACE/NAME, Link its page.
	Resource string       `json:"resource"`
	Link     string       `json:"link"`
	Cluster  string       `json:"cluster"`
	Start    metav1.Time  `json:"start"`
	End      *metav1.Time `json:"end,omitempty"`
	// Open: the episode is going on.
	Open         bool                         `json:"open,omitempty"`
	State        string                       `json:"state"`
	ChangedPaths []string                     `json:"changedPaths,omitempty"`
	ChangedBy    []string                     `json:"changedBy,omitempty"`
	Before       typesv1beta1.EpisodeVersions `json:"before"`
	After        typesv1beta1.EpisodeVersions `json:"after"`
	ResolvedBy   typesv1beta1.Resolution      `json:"resolvedBy,omitempty"`
	Resync       string                       `json:"resync,omitempty"`
	// Waiver is the waiver that kept the episode's edit, if one did.
	Waiver *typesv1beta1.EpisodeWaiver `json:"waiver,omitempty"`
	// Replicas and Surge are, for a failover episode (State FailedOver),
	// the replicas that moved away from the cluster and the clusters that
	// stood in for it.
	Replicas *int32   `json:"replicas,omitempty"`
	Surge    []string `json:"surge,omitempty"`
}

// stateFailedOver is the State of a failover episode.
const stateFailedOver = "FailedOver"

// History is one page of the fleet's ended episodes, newest first.
type History struct {
	Filter   Filter    `json:"filter"`
	Episodes []Episode `json:"episodes"`
	Total    int       `json:"total"`
	Pages    int       `json:"pages"`
	Problems []string  `json:"problems,omitempty"`
}

// history answers a history page: the ended episodes of every resource the
// filter selects, by end, newest first. The state filter applies to the
// episode's state, cluster to its cluster.
func (ix *index) history(f Filter) History {
	ix.mu.RLock()
	var all []Episode
	for _, r := range ix.ordered() {
		if !f.matchesResource(r.kind, r.group, r.namespace, r.lower) {
			continue
		}
		for _, c := range r.cells {
			if c.entry == nil || len(f.Clusters) > 0 && !slices.Contains(f.Clusters, c.cluster) {
				continue
			}
			for _, e := range c.entry.DriftHistory {
				if !f.matchesState(string(e.State)) || len(f.ResolvedBy) > 0 && !slices.ContainsFunc(f.ResolvedBy, func(s string) bool { return strings.EqualFold(s, string(e.ResolvedBy)) }) {
					continue
				}
				all = append(all, episode(r, c.cluster, e))
			}
		}
		for _, e := range failoverEpisodes(r) {
			if e.Open || len(f.Clusters) > 0 && !slices.Contains(f.Clusters, e.Cluster) ||
				len(f.States) > 0 && !slices.ContainsFunc(f.States, func(s string) bool { return strings.EqualFold(s, stateFailedOver) }) ||
				len(f.ResolvedBy) > 0 && !slices.ContainsFunc(f.ResolvedBy, func(s string) bool { return strings.EqualFold(s, string(e.ResolvedBy)) }) {
				continue
			}
			all = append(all, e)
		}
	}
	ix.mu.RUnlock()
	sortEpisodes(all)
	out := History{Filter: f, Total: len(all), Pages: max(1, (len(all)+f.PageSize-1)/f.PageSize), Episodes: []Episode{}}
	if first := (f.Page - 1) * f.PageSize; first < len(all) {
		out.Episodes = all[first:min(len(all), first+f.PageSize)]
	}
	return out
}

// sortEpisodes sorts the newest first: open ones, then by end, then by
// start.
func sortEpisodes(eps []Episode) {
	end := func(e Episode) int64 {
		if e.End == nil {
			return 1<<63 - 1
		}
		return e.End.UnixNano()
	}
	slices.SortStableFunc(eps, func(a, b Episode) int {
		return cmp.Or(cmp.Compare(end(b), end(a)), cmp.Compare(b.Start.UnixNano(), a.Start.UnixNano()), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Cluster, b.Cluster))
	})
}

func episode(r *row, cluster string, e typesv1beta1.DriftEpisode) Episode {
	end := e.End
	return Episode{
		Resource: r.id, Link: resourceLink(r), Cluster: cluster, Start: e.Start, End: &end, State: string(e.State),
		ChangedPaths: e.ChangedPaths, ChangedBy: e.ChangedBy, Before: e.Before, After: e.After, ResolvedBy: e.ResolvedBy, Resync: e.Resync,
		Waiver: e.Waiver,
	}
}

// ledger returns the episodes of r: the ended ones, and the open one of
// each cluster that is out of InSync, newest first.
func ledger(r *row) []Episode {
	var out []Episode
	for _, c := range r.cells {
		if c.entry == nil {
			continue
		}
		for _, e := range c.entry.DriftHistory {
			out = append(out, episode(r, c.cluster, e))
		}
		if c.entry.State != "" && c.entry.State != typesv1beta1.InSync && c.entry.DriftedSince != nil {
			out = append(out, Episode{
				Resource: r.id, Link: resourceLink(r), Cluster: c.cluster, Start: *c.entry.DriftedSince, Open: true, State: string(c.entry.State),
				ChangedPaths: c.entry.ChangedPaths, ChangedBy: c.entry.ChangedBy, Waiver: c.entry.Waiver,
				Before: typesv1beta1.EpisodeVersions{TemplateVersion: c.entry.TemplateVersion, OverrideVersion: c.entry.OverrideVersion},
			})
		}
	}
	out = append(out, failoverEpisodes(r)...)
	sortEpisodes(out)
	return out
}

// failoverEpisodes are the episodes of r's failover ledger (the CPV's
// status.failoverHistory), those going on Open.
func failoverEpisodes(r *row) []Episode {
	if r.cpv == nil {
		return nil
	}
	var out []Episode
	for _, e := range r.cpv.Status.FailoverHistory {
		ep := Episode{Resource: r.id, Link: resourceLink(r), Cluster: string(e.Cluster), Start: e.Start, End: e.End, Open: e.End == nil,
			State: stateFailedOver, ResolvedBy: typesv1beta1.Resolution(e.EndedBy), Replicas: e.Replicas}
		for _, s := range e.Surge {
			ep.Surge = append(ep.Surge, string(s))
		}
		out = append(out, ep)
	}
	return out
}
