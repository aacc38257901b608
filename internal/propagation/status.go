package propagation

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"encoding/json"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// maxListedClusters bounds how many clusters a condition message names.
const maxListedClusters = 5

// propagatedReason is the reason and message of the Propagated condition.
func propagatedReason(placed int, results []clusterResult) (string, string) {
	if placed == 0 {
		return typesv1beta1.ReasonNoClusters, "the placement selects no cluster"
	}
	// A copy changed out of band (waived or not) still has the current
	// versions: that is drift (the Drifted condition), not a failed
	// propagation.
	notPropagated := slices.DeleteFunc(slices.Clone(results), func(res clusterResult) bool {
		return res.state == typesv1beta1.ModifiedOutOfBand || res.state == typesv1beta1.Waived
	})
	if failed := listNotInSync(notPropagated); failed != "" {
		return typesv1beta1.ReasonPropagationFailed, failed
	}
	return typesv1beta1.ReasonPropagated, fmt.Sprintf("%d of %d clusters have the current version", placed, placed)
}

// listNotInSync names the clusters that are not InSync and why, bounded.
func listNotInSync(results []clusterResult) string {
	var parts []string
	n := 0
	for _, res := range results {
		if res.state == typesv1beta1.InSync && !res.pending {
			continue
		}
		n++
		if len(parts) < maxListedClusters {
			parts = append(parts, fmt.Sprintf("%s: %s: %s", res.name, res.reason, res.message))
		}
	}
	if n > maxListedClusters {
		parts = append(parts, fmt.Sprintf("and %d more", n-maxListedClusters))
	}
	return bounded(strings.Join(parts, "; "), 4096)
}

func setCondition(conds *[]metav1.Condition, typ string, status bool, reason, message string, generation int64, now metav1.Time) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: message, ObservedGeneration: generation, LastTransitionTime: now})
}

// bounded cuts s to at most n bytes, marking the cut with "…". It cuts
// between runes: a rune cut in two would be valid UTF-8 no more, and the
// API server would store it otherwise than written (so every sync would
// see a change to write).
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// federatedStatus returns the federated resource's status after a sync.
func federatedStatus(old typesv1beta1.FederatedStatus, typ Type, t targets, results []clusterResult, generation int64, now metav1.Time) typesv1beta1.FederatedStatus {
	placed := len(t.names)
	st := typesv1beta1.FederatedStatus{
		ObservedGeneration: generation,
		Conditions:         slices.Clone(old.Conditions),
		ClusterCount:       new(int32(placed)),
	}
	drifted, healthy := int32(0), 0
	for _, res := range results {
		if res.state != typesv1beta1.InSync {
			drifted++
		}
		ps := typesv1beta1.PropagationStatus{Name: typesv1beta1.ClusterName(res.name), Reason: res.reason, Health: healthOf(res)}
		if ps.Health == corev1beta1.HealthHealthy {
			healthy++
		}
		if res.state != typesv1beta1.InSync {
			ps.Message = bounded(res.message, 1024)
		}
		if typ.CollectStatus && res.object != nil {
			ps.RemoteStatus = remoteStatus(typ, res.object)
		}
		st.Clusters = append(st.Clusters, ps)
	}
	slices.SortFunc(st.Clusters, func(a, b typesv1beta1.PropagationStatus) int { return strings.Compare(string(a.Name), string(b.Name)) })
	st.DriftedClusters = new(drifted)
	st.Healthy = fmt.Sprintf("%d/%d", healthy, placed)
	scheduled, schedReason, schedMessage := scheduledCondition(t)
	setCondition(&st.Conditions, typesv1beta1.FederatedScheduled, scheduled, schedReason, schedMessage, generation, now)
	reason, message := propagatedReason(placed, results)
	if t.namespaceReason != "" && placed == 0 {
		reason, message = t.namespaceReason, t.namespaceMessage
	}
	setCondition(&st.Conditions, typesv1beta1.FederatedPropagated, reason == typesv1beta1.ReasonPropagated || reason == typesv1beta1.ReasonNoClusters, reason, message, generation, now)
	if ok, reason, message, set := t.failover.condition(meta.FindStatusCondition(old.Conditions, typesv1beta1.FederatedFailedOver)); set {
		setCondition(&st.Conditions, typesv1beta1.FederatedFailedOver, ok, reason, message, generation, now)
	}
	return st
}

// healthOf is the health of a cluster's copy: as this sync judged it, or
// as a Pull cluster's agent reported it.
func healthOf(res clusterResult) corev1beta1.HealthState {
	switch {
	case res.health != nil:
		return res.health.Health
	case res.fromAgent && res.entry != nil:
		return res.entry.Health
	}
	return ""
}

// deploymentStatusFields are the fields collected from a member Deployment.
var deploymentStatusFields = []string{"replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "observedGeneration"}

// remoteStatus returns the collected status of a member copy: for a
// Deployment the replica counts, for other kinds the whole status.
func remoteStatus(typ Type, obj *unstructured.Unstructured) *apiextensionsv1.JSON {
	status, found, _ := unstructured.NestedMap(obj.Object, "status")
	if !found {
		return nil
	}
	if typ.Target.Group == "apps" && typ.Target.Kind == "Deployment" {
		picked := map[string]any{}
		for _, f := range deploymentStatusFields {
			if v, ok := status[f]; ok {
				picked[f] = v
			}
		}
		status = picked
	}
	raw, err := json.Marshal(status)
	if err != nil {
		return nil
	}
	return &apiextensionsv1.JSON{Raw: raw}
}
