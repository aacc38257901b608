// Package propagation is the sync controller of one federated type: it
// places each Federated<Kind> on member clusters, renders the template with
// each cluster's overrides, writes the result to the members that need it,
// deletes copies that are no longer placed, and records in the resource's
// ClusterPropagatedVersion which versions each member really has.
//
// A sync is a pipeline with one owner per stage. The orchestrator,
// reconciler.go (Reconciler.reconcileNormal), calls the stages in this
// order, and no stage calls another:
//
//   - read: the resource's spec, the joined clusters and its CPV
//     (reconciler.go);
//   - place: the placer (place.go) asks the scheduler of internal/scheduler,
//     within the namespace restriction; Placer runs it for fedwarden plan;
//   - rollout: under spec.rollout Waves, the revision each placed cluster
//     is to have (rollout.go, on internal/rollout); DecideRollout is its
//     decision, which plan makes too;
//   - record for agents: when a Pull cluster is placed, the CPV's spec is
//     written before the apply stage (reconciler.go, recordForAgents);
//   - apply: the applier (applier.go, membersync.go, driftcheck.go,
//     refusals.go, lastwrites.go, namespaces.go) renders each cluster's
//     copy (package render), decides with DecideWrite (decide.go, the one
//     write-or-drift rule) and writes it as stamped makes it; it deletes the copies of clusters the resource left, by the
//     delete rule of removals.go (placedBy, ownCopy). Every member message
//     passes the scrubber (scrub.go). A Pull cluster's agent (agentsync.go,
//     pull.go) runs the same applier in its own cluster, and fedwarden
//     plan runs it with a writer that writes nothing (preview.go);
//   - record: the cpvStore (cpvstore.go, cpvstatus.go, ledger.go) writes
//     the ClusterPropagatedVersion, its spec and status, and an agent's
//     own entry;
//   - report: the reporter (report.go, status.go, driftevents.go, the drift
//     gauge of metrics.go) writes the resource's status and conditions and
//     its Events. It is deferred, so that it runs on every exit: a sync
//     that stops part way says why in the Propagated condition.
//
// A resource being deleted takes delete.go's path instead: every copy the
// delete rule says is its own is deleted, then the finalizer goes. Its
// report (reporter.deletion) is deferred too: an exit that leaves the
// resource in place says why in the Propagated condition, DeletionPending
// or DeletionFailed, and writes nothing else. An agent's sync defers its
// report the same way (agentReport): an error no retry fixes is recorded
// in the agent's own CPV entry.
//
// A member copy carries the label kubefed.io/managed=true and annotations
// with the template version, the override version and a hash of the
// rendered content; a copy whose hash matches is never written again, so a
// restart or a resync with nothing changed writes nothing.
//
// Objects are written with server-side apply (field manager "fedwarden"),
// so fields the member sets itself, such as a Service's clusterIP, are kept.
// A namespaced object's namespace is created in the member when it is
// missing, marked with the annotation fedwarden.io/created-for-propagation
// so that a FederatedNamespace may take it over later; a FederatedNamespace
// marks a namespace it creates the same way. Only a namespace so marked is
// deleted when its FederatedNamespace leaves a cluster; an adopted one is
// released (its marks removed), and a kube-* one is never touched. A
// FederatedNamespace named after another namespace than its own is never
// synced.
package propagation
