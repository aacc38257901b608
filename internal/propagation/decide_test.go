package propagation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/render"
)

func TestDecideWrite(t *testing.T) {
	t.Parallel()
	desired := deploymentCopy(2)
	hash := render.ContentHash(desired.Object)
	current := stampedCopy(desired, hash)
	old := stampedCopy(deploymentCopy(3), "old-hash")
	edited := stampedCopy(desired, hash)
	_ = unstructured.SetNestedField(edited.Object, int64(5), "spec", "replicas")
	edited.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: "hand-edit", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`),
	}})
	another := stampedCopy(desired, hash)
	another.SetAnnotations(map[string]string{typesv1beta1.AnnotationTemplateVersion: "2", typesv1beta1.AnnotationOverrideVersion: "1",
		typesv1beta1.AnnotationDesiredHash: hash, typesv1beta1.AnnotationOwnerUID: "earlier-uid"})
	anotherEdited := edited.DeepCopy()
	anotherEdited.SetAnnotations(another.GetAnnotations())
	unmanaged := desired.DeepCopy()
	unmanaged.SetLabels(nil)
	written := typesv1beta1.ClusterVersion{ClusterName: "a", Version: "42", State: typesv1beta1.InSync}
	enforce := drift.PolicyFor(nil, "a", nil, typesv1beta1.RemediationEnforce)
	alert := drift.PolicyFor(nil, "a", nil, typesv1beta1.RemediationAlert)
	tests := []struct {
		name     string
		live     *unstructured.Unstructured
		recorded bool
		policy   drift.Policy
		force    bool
		adopt    bool
		want     Action
		reason   string
	}{
		{name: "no copy", policy: enforce, want: ActionCreate, reason: "the cluster has no copy"},
		{name: "deleted, Enforce", recorded: true, policy: enforce, want: ActionCreate, reason: "created again"},
		{name: "deleted, Alert", recorded: true, policy: alert, want: ActionUnchanged, reason: "not recreated (remediation Alert)"},
		{name: "deleted, Alert, resync", recorded: true, policy: alert, force: true, want: ActionCreate, reason: "created again"},
		{name: "not managed", live: unmanaged, policy: enforce, want: ActionConflict, reason: "which Fedwarden does not manage"},
		{name: "not managed, adopt", live: unmanaged, policy: enforce, adopt: true, want: ActionUpdate, reason: "takes the copy over"},
		{name: "new content", live: old, recorded: true, policy: alert, want: ActionUpdate, reason: "template version 1 → 2"},
		{name: "current", live: current, recorded: true, policy: enforce, want: ActionUnchanged, reason: "the copy is current"},
		{name: "current, resync", live: current, recorded: true, policy: enforce, force: true, want: ActionUpdate, reason: "kubefed.io/resync"},
		{name: "hand edit, Enforce", live: edited, recorded: true, policy: enforce, want: ActionUpdate, reason: "by hand-edit: /spec/replicas; written back"},
		{name: "hand edit, Alert", live: edited, recorded: true, policy: alert, want: ActionUnchanged, reason: "left as it is (remediation Alert)"},
		{name: "current, written by an earlier resource", live: another, recorded: true, policy: alert, want: ActionUpdate, reason: "this one takes it over"},
		{name: "written by an earlier resource, hand edit, Alert", live: anotherEdited, recorded: true, policy: alert, want: ActionUnchanged, reason: "left as it is"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := DecideWrite(Copy{Type: deploymentType, Fed: planned(tt.adopt), Versions: render.Versions{Template: "2", Override: "1"},
				Previous: written, Recorded: tt.recorded, Desired: desired, Live: tt.live, Policy: tt.policy, Force: tt.force})
			if err != nil || d.Action != tt.want || !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("DecideWrite: %+v, %v; want %s with %q", d, err, tt.want, tt.reason)
			}
		})
	}
}

// deploymentType is the type of FederatedDeployments.
var deploymentType = Type{
	Federated:        schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedDeployment"},
	Target:           schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
	TargetNamespaced: true, FederatedNamespaced: true,
}

// planned is the FederatedDeployment shop/web, adopting when adopt.
func planned(adopt bool) *unstructured.Unstructured {
	fed := &unstructured.Unstructured{Object: map[string]any{}}
	fed.SetName("web")
	fed.SetNamespace("shop")
	if adopt {
		fed.SetAnnotations(map[string]string{typesv1beta1.AnnotationConflictResolution: typesv1beta1.ConflictResolutionAdopt})
	}
	return fed
}

// deploymentCopy is a managed copy of replicas replicas.
func deploymentCopy(replicas int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"spec": map[string]any{"replicas": replicas},
	}}
	u.SetName("web")
	u.SetNamespace("shop")
	u.SetLabels(map[string]string{typesv1beta1.LabelManaged: "true"})
	return u
}

// stampedCopy is obj as written at template version 1, override 1, with
// the content hash hash.
func stampedCopy(obj *unstructured.Unstructured, hash string) *unstructured.Unstructured {
	out := obj.DeepCopy()
	out.SetAnnotations(map[string]string{
		typesv1beta1.AnnotationTemplateVersion: "1", typesv1beta1.AnnotationOverrideVersion: "1", typesv1beta1.AnnotationDesiredHash: hash,
	})
	return out
}
