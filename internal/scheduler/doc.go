// Package scheduler decides which member clusters each federated resource
// goes to, and how many replicas each gets, by running the plugins of
// package framework over the joined clusters. The decision is recorded in
// the resource's ClusterPropagatedVersion (spec.clusters), where the next
// decision starts from (so nothing moves without a reason) and where
// appliers read their targets.
package scheduler
