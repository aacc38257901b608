package propagation

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// The removal protocol of Pull clusters. The host never writes to a Pull
// cluster: when a resource leaves one, the host records in the CPV's
// spec.removals that the cluster's agent must delete its copy, and keeps
// the CPV labelled for that cluster so that the agent still sees it. The
// agent deletes its copy, then its entry of status.clusterVersions; the
// host then drops the removal and the label. An agent deletes only on such
// an instruction, or when the federated resource itself is deleted and its
// own CPV placed it on the agent's cluster: a CPV missing from its cache
// (deleted, not created yet, or unlabelled by hand) tells it nothing, and
// it keeps its copy.

// pullRemovals returns the removals the CPV of a resource placed on placed
// must record: one per joined Pull cluster that is not placed and whose
// agent still reports an entry in cpv's status, sorted by name; nil when
// there is none. An entry is the agent's report that it holds, or may hold,
// a copy; once the agent has removed it, the removal is done.
func pullRemovals(cpv *typesv1beta1.ClusterPropagatedVersion, placed []string, set clusterSet) []typesv1beta1.Removal {
	var out []typesv1beta1.Removal
	for _, cv := range cpv.Status.ClusterVersions {
		name := string(cv.ClusterName)
		if isPull(set[name]) && !slices.Contains(placed, name) {
			out = append(out, typesv1beta1.Removal{Name: cv.ClusterName})
		}
	}
	slices.SortFunc(out, func(a, b typesv1beta1.Removal) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return slices.CompactFunc(out, func(a, b typesv1beta1.Removal) bool { return a.Name == b.Name })
}

// labelled returns the clusters whose label the CPV carries: those it is
// placed on, and those whose agents must still remove their copies.
func labelled(placed []string, removals []typesv1beta1.Removal) []string {
	out := slices.Clone(placed)
	for _, rm := range removals {
		if !slices.Contains(out, string(rm.Name)) {
			out = append(out, string(rm.Name))
		}
	}
	return out
}

// The one rule for deleting copies, in the host and in the agent: a copy
// is deleted only where the resource itself placed it (placedBy), and
// only if it is its own (ownCopy). Another resource of the same name, an
// earlier one whose copies were orphaned, or one whose CPV records other
// clusters, never deletes a copy it did not write or take over.

// copyRecord is what a resource's own CPV says of one cluster it placed.
type copyRecord struct {
	// reported: the CPV has the cluster's entry (for a Pull cluster, its
	// agent's report that it holds, or may hold, a copy).
	reported bool
	// written: that entry records a copy written there.
	written bool
}

// placedBy returns, sorted, the clusters where fed itself may have placed
// a copy, which its deletion deletes: those its own CPV records in its
// status or schedules in spec.clusters, and those named (the clusters its
// placement selects, where the caller knows them). A CPV that is missing
// (one without a resourceVersion), or that an earlier resource of fed's
// name owns (see EarlierOwner), records nothing of fed's. The record
// tells, for each cluster, what the CPV's entry says.
func placedBy(fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, named []string) ([]string, map[string]copyRecord) {
	records := map[string]copyRecord{}
	if cpv.ResourceVersion != "" && EarlierOwner(cpv, fed) == nil {
		for _, cv := range cpv.Status.ClusterVersions {
			records[string(cv.ClusterName)] = copyRecord{reported: true, written: cv.Version != ""}
		}
		for _, pc := range cpv.Spec.Clusters {
			if _, ok := records[string(pc.Name)]; !ok {
				records[string(pc.Name)] = copyRecord{}
			}
		}
	}
	for _, name := range named {
		if _, ok := records[name]; !ok {
			records[name] = copyRecord{}
		}
	}
	return slices.Sorted(maps.Keys(records)), records
}

// ownCopy tells whether obj, a managed copy of fed's name in cluster, is
// fed's own: stamped with fed's UID (AnnotationOwnerUID) by the write that
// made it, or, written before copies were stamped, unstamped and recorded
// as written (a version) by an entry of fed's own CPV: an entry that only
// reports a failure (ApplyFailed, Unreachable before any write) may sit
// beside a copy an earlier resource of fed's name left unstamped, which is
// not fed's to delete. A copy stamped by another resource (an
// earlier one of the same name, whose copies were orphaned) is not fed's,
// whatever the CPV says: fed takes it over by writing it, which stamps it.
func ownCopy(fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, cluster string, obj *unstructured.Unstructured) bool {
	switch stamp := obj.GetAnnotations()[typesv1beta1.AnnotationOwnerUID]; stamp {
	case string(fed.GetUID()):
		return true
	case "":
		_, records := placedBy(fed, cpv, nil)
		return records[cluster].written
	}
	return false
}

// StampedByAnother tells whether obj, a member copy, was written by
// another resource than fed (fedwarden.io/owner-uid): fed's sync writes it
// even when its content is current, to take it over (ownCopy). fedwarden
// plan reads the same rule.
func StampedByAnother(fed, obj *unstructured.Unstructured) bool {
	stamp := obj.GetAnnotations()[typesv1beta1.AnnotationOwnerUID]
	return stamp != "" && stamp != string(fed.GetUID())
}

// agentAction is what a Pull cluster's agent does with one federated
// resource.
type agentAction int

const (
	// agentKeep: no instruction; the copy, if any, stays as it is.
	agentKeep agentAction = iota
	// agentSync: the CPV places the resource on the cluster; write it.
	agentSync
	// agentDelete: delete the copy, then the agent's CPV entry.
	agentDelete
	// agentRelease: the resource is deleted with its copies orphaned;
	// keep the copy, remove the agent's CPV entry.
	agentRelease
)

// agentActionFor decides what the agent of cluster does with fed, given
// the CPV in its cache (one without a resourceVersion when there is none).
// It acts only on the host's instruction, which is fed's own CPV: it syncs
// when spec.clusters names the cluster; it deletes the copy when the
// CPV's spec.removals names the cluster, or when fed is deleted without
// orphaning its copies and placed a copy there (placedBy, as the host's
// deletion reads it). A deleted fed that placed nothing there (its CPV
// missing, an earlier resource's, or naming other clusters) releases: the
// copy, which is not fed's, stays, and only the agent's entry goes.
// Otherwise, and when the CPV is an earlier resource's of its name (see
// EarlierOwner), it keeps the copy.
func agentActionFor(fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, cluster string) agentAction {
	if !fed.GetDeletionTimestamp().IsZero() {
		_, records := placedBy(fed, cpv, nil) // an agent is told by the CPV only
		if _, placed := records[cluster]; !placed || fed.GetAnnotations()[typesv1beta1.AnnotationOrphan] == "true" {
			return agentRelease
		}
		return agentDelete
	}
	if cpv.ResourceVersion == "" || EarlierOwner(cpv, fed) != nil {
		return agentKeep // missing, or an earlier resource's: no instruction
	}
	if slices.ContainsFunc(cpv.Spec.Clusters, func(pc typesv1beta1.PlacedCluster) bool { return string(pc.Name) == cluster }) {
		return agentSync
	}
	if slices.ContainsFunc(cpv.Spec.Removals, func(rm typesv1beta1.Removal) bool { return string(rm.Name) == cluster }) {
		return agentDelete
	}
	return agentKeep
}
