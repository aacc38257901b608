package propagation

import (
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
// an instruction, or when the federated resource itself is deleted: a CPV
// missing from its cache (deleted, not created yet, or unlabelled by hand)
// tells it nothing, and it keeps its copy.

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
// the CPV in its cache (one without a resourceVersion when there is none):
// it deletes the copy only when fed is deleted without orphaning its
// copies, or when the CPV's spec.removals names the cluster; it syncs when
// spec.clusters names it; otherwise, and when the CPV is an earlier
// resource's of its name (see EarlierOwner), it keeps the copy.
func agentActionFor(fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, cluster string) agentAction {
	if !fed.GetDeletionTimestamp().IsZero() {
		if fed.GetAnnotations()[typesv1beta1.AnnotationOrphan] == "true" {
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
