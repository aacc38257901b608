package propagation

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/render"
)

var secrets = Type{
	Name:             "secrets",
	Federated:        schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedSecret"},
	Target:           schema.GroupVersionKind{Version: "v1", Kind: "Secret"},
	TargetResource:   schema.GroupVersionResource{Version: "v1", Resource: "secrets"},
	TargetNamespaced: true, FederatedNamespaced: true,
}

// A member's refusal quoting a Secret's value, as the apply stage's
// results carry it (a write refused, a write forbidden, a Pull cluster's
// entry written by an agent that did not scrub it), reaches the CPV's
// entry (but a Pull cluster's, which is its agent's), the resource's
// status and its Propagated condition without the value; a Gizmo's is
// kept as it is.
func TestScrubbedResults(t *testing.T) {
	t.Parallel()
	const value = "0123456789abcdef-zq8Xy"
	fed := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{
		"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(value))},
	}}}}
	refusal := func(reason metav1.StatusReason, code int32) error {
		return fmt.Errorf("writing Secret db to cluster m2: %w", &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Reason: reason, Code: code,
			Message: "secrets \"db\" is forbidden: ValidatingAdmissionPolicy 'strong' with binding 'strong' denied request: the password " + value + " is weak",
		}})
	}
	a := &applier{typ: secrets}
	sc := a.scrubberOf(fed)
	fc := &corev1beta1.FederatedCluster{Status: corev1beta1.FederatedClusterStatus{Conditions: []metav1.Condition{{Type: corev1beta1.ClusterReady, Status: metav1.ConditionTrue}}}}
	v := render.Versions{Template: "1", Override: "1"}
	results := []clusterResult{
		scrubbed(applyFailed("m1", refusal(metav1.StatusReasonInvalid, 422), false), sc),
		scrubbed(refused("m2", secrets, refusal(metav1.StatusReasonForbidden, 403), served), sc),
		scrubbed(reportedByAgent("pull-1", fc, typesv1beta1.ClusterVersion{ClusterName: "pull-1", State: typesv1beta1.ApplyFailed,
			TemplateVersion: "1", OverrideVersion: "1", Message: refusal(metav1.StatusReasonInvalid, 422).Error()}, true, v), sc),
	}
	now := metav1.Now()
	st := federatedStatus(typesv1beta1.FederatedStatus{}, secrets, targets{names: []string{"m1", "m2", "pull-1"}}, results, 1, now)
	cpv := cpvStatus(typesv1beta1.ClusterPropagatedVersionStatus{}, v, 3, results, "", 1, now)
	var texts []string
	for _, cl := range st.Clusters {
		texts = append(texts, cl.Message)
	}
	for _, c := range st.Conditions {
		texts = append(texts, c.Message)
	}
	for _, cv := range cpv.ClusterVersions {
		// A Pull cluster's entry is its agent's, kept as it wrote it.
		if cv.ClusterName != "pull-1" {
			texts = append(texts, cv.Message)
		}
	}
	for _, text := range texts {
		if strings.Contains(text, value) {
			t.Errorf("a record holds the value: %q", text)
		}
	}
	for i, want := range []string{"ValidatingAdmissionPolicy 'strong' with binding 'strong' denied request: the password <redacted> is weak",
		"ValidatingAdmissionPolicy 'strong' with binding 'strong' denied request: the password <redacted> is weak",
		"denied request: the password <redacted> is weak"} {
		if !strings.Contains(results[i].message, want) {
			t.Errorf("%s: %q, want it to hold %q", results[i].name, results[i].message, want)
		}
	}

	gizmoApplier := &applier{typ: gizmos}
	res := scrubbed(applyFailed("m1", refusal(metav1.StatusReasonInvalid, 422), false), gizmoApplier.scrubberOf(fed))
	if !strings.Contains(res.message, value) {
		t.Errorf("another kind's message was changed: %q", res.message)
	}
}
