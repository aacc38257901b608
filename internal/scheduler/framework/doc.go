// Package framework runs scheduling plugins: Filter plugins rule clusters
// out, Score plugins rank the rest, Select plugins choose among them (for
// example one per region) and Assign plugins divide replicas. Plugins are
// pure functions of a State, register by name in a Registry and explain
// every cluster they rule out.
package framework
