package framework

// Plugin is anything the framework runs; it implements one or more of the
// extension points below.
type Plugin interface {
	Name() string
}

// IntentPlugin is a plugin whose verdicts may express the user's intent:
// the placement's names, selector and exclusions matched against the
// clusters' labels, or spread constraints the user has just changed. A
// cluster it rules out or leaves out while IsIntent is true loses its copy.
//
// Every other verdict is an optimisation over the clusters' state
// (readiness, capacity, a spread re-decision after an outage): it steers
// new placements and the division of replicas, but a cluster it would drop
// that holds a copy keeps it, and the Decision says why (Kept). The
// framework, not each plugin, enforces this.
type IntentPlugin interface {
	Plugin
	IsIntent(s *State) bool
}

// FilterPlugin rules out clusters the workload must not go to.
type FilterPlugin interface {
	Plugin
	Filter(s *State, c *Cluster) Result
}

// MaxScore is the highest score a ScorePlugin gives.
const MaxScore = 100

// ScorePlugin ranks a feasible cluster from 0 to MaxScore; the framework
// adds the scores of every ScorePlugin.
type ScorePlugin interface {
	Plugin
	Score(s *State, c *Cluster) (int64, Result)
}

// SelectPlugin chooses clusters among the feasible ones, which come ranked
// best first. Unschedulable means no choice satisfies it.
type SelectPlugin interface {
	Plugin
	Select(s *State, ranked []ScoredCluster) (Selection, Result)
}

// Selection is a SelectPlugin's choice.
type Selection struct {
	// Chosen clusters, in the order they were ranked.
	Chosen []ScoredCluster
	// LeftOut says, by cluster name, why a cluster was not chosen.
	LeftOut map[string]string
}

// AssignPlugin gives each selected cluster its replicas. A nil map means
// the plugin does not apply (every cluster runs the template's replicas);
// reasons of a successful Result are notes for the user.
type AssignPlugin interface {
	Plugin
	Assign(s *State, selected []ScoredCluster) (map[string]int32, Result)
}
