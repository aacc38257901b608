package propagation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/render"
)

// kubefedCopy is a ConfigMap as KubeFed places it: its label, no stamps of
// Fedwarden's, its fields owned by KubeFed's controller-manager, and data
// key A owned by editor when editor is set.
func kubefedCopy(value, editor string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "ns", "resourceVersion": "7", "labels": map[string]any{typesv1beta1.LabelManaged: "true"}},
		"data":     map[string]any{"A": value},
	}}
	kubefed := `{"f:data":{".":{},"f:A":{}},"f:metadata":{"f:labels":{".":{},"f:kubefed.io/managed":{}}}}`
	fields := []metav1.ManagedFieldsEntry{{Manager: "kubefed-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{}}}
	fields[0].FieldsV1.SetRawBytes([]byte(kubefed))
	if editor != "" {
		fields[0].FieldsV1.SetRawBytes([]byte(`{"f:data":{},"f:metadata":{"f:labels":{".":{},"f:kubefed.io/managed":{}}}}`))
		edit := metav1.ManagedFieldsEntry{Manager: editor, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{}}
		edit.FieldsV1.SetRawBytes([]byte(`{"f:data":{"f:A":{}}}`))
		fields = append(fields, edit)
	}
	u.SetManagedFields(fields)
	return u
}

// A copy KubeFed placed is adopted without a write when it holds what
// Fedwarden renders; an edit is drift; once adopted, a change of the
// resource is written.
func TestClassifyUnstamped(t *testing.T) {
	t.Parallel()
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "ns", "labels": map[string]any{typesv1beta1.LabelManaged: "true"}},
		"data":     map[string]any{"A": "x"},
	}}
	v2 := render.Versions{Template: "2", Override: "1"}
	inSyncAt1 := typesv1beta1.ClusterVersion{ClusterName: "c1", State: typesv1beta1.InSync, TemplateVersion: "1", OverrideVersion: "1", Version: "7"}
	tests := []struct {
		name        string
		existing    *unstructured.Unstructured
		previous    map[string]typesv1beta1.ClusterVersion
		v           render.Versions
		wantAdopted bool
		wantState   typesv1beta1.DriftState
	}{
		{name: "identical: adopted", existing: kubefedCopy("x", ""), v: v2, wantAdopted: true},
		{name: "edited by hand: drift", existing: kubefedCopy("y", "kubectl-patch"), v: v2, wantState: typesv1beta1.ModifiedOutOfBand},
		{name: "differs in KubeFed's own field before adoption: drift", existing: kubefedCopy("y", ""), v: v2, wantState: typesv1beta1.ModifiedOutOfBand},
		{name: "adopted, then the template changed: written", existing: kubefedCopy("old", ""), v: v2,
			previous: map[string]typesv1beta1.ClusterVersion{"c1": inSyncAt1}},
		{name: "adopted at the current versions, then edited: drift", existing: kubefedCopy("y", "kubectl-edit"), v: render.Versions{Template: "1", Override: "1"},
			previous: map[string]typesv1beta1.ClusterVersion{"c1": inSyncAt1}, wantState: typesv1beta1.ModifiedOutOfBand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			prev, recorded := tt.previous["c1"]
			d, err := DecideWrite(Copy{Fed: &unstructured.Unstructured{}, Versions: tt.v, Previous: prev, Recorded: recorded,
				Desired: desired, Live: tt.existing, Policy: drift.Policy{Remediation: typesv1beta1.RemediationAlert}})
			if err != nil {
				t.Fatal(err)
			}
			if d.Adopted != tt.wantAdopted || d.State != tt.wantState {
				t.Errorf("adopted %v, state %q (changes %v); want %v, %q", d.Adopted, d.State, d.Changes, tt.wantAdopted, tt.wantState)
			}
			if d.State != "" && (len(d.Changes) != 1 || d.Changes[0].Path != "/data/A") {
				t.Errorf("changes %v, want /data/A only", d.Changes)
			}
			if wantWrite := !tt.wantAdopted && tt.wantState == ""; d.Action.Writes() != wantWrite {
				t.Errorf("action %s; want a write: %v", d.Action, wantWrite)
			}
		})
	}
	stamped := kubefedCopy("x", "")
	stamped.SetAnnotations(map[string]string{typesv1beta1.AnnotationDesiredHash: "h"})
	d, err := DecideWrite(Copy{Fed: &unstructured.Unstructured{}, Versions: v2, Desired: desired, Live: stamped, Policy: drift.Policy{Remediation: typesv1beta1.RemediationAlert}})
	if err != nil || d.Adopted || d.Action != ActionUpdate {
		t.Errorf("a copy Fedwarden wrote at another hash: %+v, %v; want an Update, not adopted", d, err)
	}
}
