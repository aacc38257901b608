// Package capacitysource measures the free room of member clusters for the
// scheduler's Capacity plugin: allocatable minus requested over the Ready,
// schedulable Nodes, and what the namespace's ResourceQuotas leave.
//
// # Usage
//
//	src := capacitysource.New(clusters, capacitysource.Options{
//		OnChange: func(cluster string) { /* enqueue the workloads to schedule again */ },
//		Debounce: 5 * time.Second,
//	})
//	c := src.Capacity("member-1", "shop") // nil: not measured (yet)
//
// The first Capacity call for a cluster starts, in the background, informers
// on its Nodes, bound Pods and ResourceQuotas from the [clustercache.Member]
// the cache holds, under the member's context: when the member's clients
// are rebuilt the next call starts new ones. Until they have synced,
// Capacity returns nil, and OnChange is called once they have. [Source.Forget]
// stops a cluster's informers.
//
// # Trade-offs
//
//   - Every pod bound to a node is watched (trimmed to its node, phase and
//     requests): memory grows with the members' pods. The host's
//     credentials on the member need list and watch on nodes, pods and
//     resourcequotas; without them Capacity stays nil and the Capacity
//     plugin lets the cluster through.
//   - The free room is computed again, over every pod, on the first call
//     after any Node or Pod event; OnChange follows Node and ResourceQuota
//     changes only, as pods come and go all the time.
//   - Nodes are counted whatever their taints, and quotas scoped to some
//     pods (priority classes, terminating or best-effort pods) are left
//     out: the measure errs towards room, so a cluster is ruled out only
//     when it surely lacks it.
package capacitysource
