package framework

import "slices"

// Restriction keeps a workload to some clusters for a reason that no
// plugin owns: in Fedwarden, the clusters its namespace is federated to.
// The framework runs it as the first Filter of its kind (intent or state),
// so that it obeys the same rule as a plugin: only an intent restriction
// drops a cluster that holds a copy.
type Restriction struct {
	// Plugin names the restriction in verdicts, as a plugin's name would
	// (for example FederatedNamespace).
	Plugin string
	// Clusters are those the workload may go to.
	Clusters []string
	// Reason is the verdict on every other cluster.
	Reason string
	// Intent tells whether the restriction is the user's intent (a
	// FederatedNamespace's placement): a cluster it leaves out loses its
	// copy. Otherwise it is about state (no FederatedNamespace, or one
	// whose placement cannot be read): it steers new placements only, and
	// a cluster it leaves out that holds a copy keeps it.
	Intent bool
}

// restrictionFilter runs a Restriction as a Filter plugin.
type restrictionFilter struct{ r *Restriction }

var (
	_ FilterPlugin = restrictionFilter{}
	_ IntentPlugin = restrictionFilter{}
)

func (f restrictionFilter) Name() string { return f.r.Plugin }

// IsIntent is the restriction's Intent.
func (f restrictionFilter) IsIntent(*State) bool { return f.r.Intent }

// Filter rules out a cluster the restriction does not list.
func (f restrictionFilter) Filter(_ *State, c *Cluster) Result {
	if slices.Contains(f.r.Clusters, c.Name) {
		return OK()
	}
	return RuleOut("%s", f.r.Reason)
}

// filtersFor returns the Filter plugins of one decision: s's restriction,
// if any, then the enabled plugins.
func (f *Framework) filtersFor(s *State) []FilterPlugin {
	if s.Restriction == nil {
		return f.filters
	}
	return append([]FilterPlugin{restrictionFilter{s.Restriction}}, f.filters...)
}
