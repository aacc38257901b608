// Package framework runs scheduling plugins: Filter plugins rule clusters
// out, Score plugins rank the rest, Select plugins choose among them (for
// example one per region) and Assign plugins divide replicas. Plugins are
// pure functions of a State, register by name in a Registry and explain
// every cluster they rule out.
//
// Plugins are optimisations: only an IntentPlugin's verdicts (the user's
// placement) drop a cluster that holds a copy; any other verdict keeps it
// (Decision.Kept), so that a change in the clusters' state never deletes a
// running copy. A Restriction of one decision (the clusters a namespace is
// federated to) runs as the first Filter, under the same rule.
package framework
