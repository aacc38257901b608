// Package replicadivision is the ReplicaDivision scheduler plugin: it
// divides the TotalReplicas of a workload's ReplicaSchedulingPreference
// between the selected clusters, by weight, within each cluster's minimum,
// maximum and free capacity, and without moving running replicas unless the
// preference allows it.
package replicadivision
