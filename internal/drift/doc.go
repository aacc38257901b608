// Package drift finds how a member cluster's copy of a federated resource
// differs from the desired object, and decides what to do about it.
//
// Detect compares only the fields another field manager owns in the
// member's copy (server-side apply's managedFields) and the fields the
// desired object sets: server defaulting, the member's own controllers'
// fields and status are never drift, so a copy that was merely defaulted
// is in sync. Writes through any subresource but status are compared: a
// scale (kubectl scale, an autoscaler) changes spec.replicas. It names the
// changed fields as JSON pointers and the field managers that changed
// them. Policy resolves a federated resource's drift policy for one
// cluster, and its Detect leaves out the paths and field managers the
// policy ignores. Owned and Project cut a copy down to what Detect reads,
// for the member informers to cache. The code is pure, so that the host's
// push mode and a member's agent classify drift the same way.
package drift
