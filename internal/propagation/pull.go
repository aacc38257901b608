package propagation

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/render"
)

// isPull tells whether fc is written by another process than this one,
// which reports its own CPV entry from what the CPV's spec tells it: a
// Pull cluster, written by its agent, or a Push cluster another
// controller-manager replica serves (servedElsewhere).
func isPull(fc *corev1beta1.FederatedCluster) bool {
	return fc != nil && (fc.Spec.SyncMode == corev1beta1.SyncModePull || fc.Annotations[servedElsewhere] != "")
}

// writer names who writes the cluster name (isPull) in messages.
func writer(name string, fc *corev1beta1.FederatedCluster) string {
	if fc != nil && fc.Annotations[servedElsewhere] != "" {
		return fmt.Sprintf("the controller-manager replica serving cluster %s", name)
	}
	return fmt.Sprintf("the agent of Pull cluster %s", name)
}

// placesPull tells whether any of the placed clusters is written by
// another process (isPull).
func placesPull(placed []string, set clusterSet) bool {
	return slices.ContainsFunc(placed, func(name string) bool { return isPull(set[name]) })
}

// reportedByAgent is the host's view of a Pull cluster in one sync: the CPV
// entry its agent wrote, kept as it is. The entry counts as propagated only
// when it carries the current versions and the agent is alive.
func reportedByAgent(name string, fc *corev1beta1.FederatedCluster, prev typesv1beta1.ClusterVersion, recorded bool, v render.Versions) clusterResult {
	res := clusterResult{name: name, reason: typesv1beta1.ClusterPropagated, state: prev.State, message: prev.Message, remediation: prev.Remediation, fromAgent: true}
	if recorded {
		res.entry = &prev
	}
	if prev.State != typesv1beta1.InSync && prev.State != "" {
		res.reason = string(prev.State)
	}
	waiting := func(msg string) clusterResult {
		res.reason, res.pending, res.message = typesv1beta1.ClusterWaitingForAgent, true, msg
		if res.state == "" {
			res.state = typesv1beta1.Unreachable
		}
		return res
	}
	if ready := meta.FindStatusCondition(fc.Status.Conditions, corev1beta1.ClusterReady); ready == nil || ready.Status != metav1.ConditionTrue {
		msg := fmt.Sprintf("%s is not reporting", writer(name, fc))
		if ready != nil {
			msg += fmt.Sprintf(" (%s: %s)", ready.Reason, ready.Message)
		}
		if recorded {
			msg += fmt.Sprintf("; its last report: %s", describeEntry(prev))
		}
		return waiting(msg)
	}
	switch {
	case !recorded:
		return waiting(fmt.Sprintf("waiting for %s to apply template version %s, override version %s", writer(name, fc), v.Template, v.Override))
	case prev.TemplateVersion != v.Template || prev.OverrideVersion != v.Override:
		if prev.State == typesv1beta1.InSync {
			return waiting(fmt.Sprintf("waiting for %s to apply template version %s, override version %s (it reports %s, %s)",
				writer(name, fc), v.Template, v.Override, orNone(prev.TemplateVersion), orNone(prev.OverrideVersion)))
		}
	}
	return res
}

func describeEntry(cv typesv1beta1.ClusterVersion) string {
	s := fmt.Sprintf("%s at template version %s, override version %s", cmp.Or(string(cv.State), "no state"), orNone(cv.TemplateVersion), orNone(cv.OverrideVersion))
	if cv.Message != "" {
		s += ": " + cv.Message
	}
	return s
}

func orNone(v typesv1beta1.Version) string { return cmp.Or(string(v), "none") }
