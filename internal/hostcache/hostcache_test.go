package hostcache

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
)

func TestTrim(t *testing.T) {
	t.Parallel()
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "member-1", ManagedFields: managed,
		Annotations: map[string]string{LastApplied: `{"data":{"token":"c2VjcmV0"}}`}}, Data: map[string][]byte{"token": []byte("secret")}}
	fed := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": "web", "annotations": map[string]any{LastApplied: "{}", "kubefed.io/resync": "1"}},
		"spec":     map[string]any{"template": map[string]any{}},
	}}
	fed.SetManagedFields(managed)
	plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Annotations: map[string]string{"team": "pay"}}}
	tombstone := toolscache.DeletedFinalStateUnknown{Key: "ns/gone"}

	tests := []struct {
		name string
		obj  any
		want func(t *testing.T, got any)
	}{
		{name: "a Secret applied with kubectl", obj: secret, want: func(t *testing.T, got any) {
			s := got.(*corev1.Secret)
			if s.ManagedFields != nil || s.Annotations != nil || string(s.Data["token"]) != "secret" {
				t.Errorf("got managed fields %v, annotations %v, data %v; want none, none and the token", s.ManagedFields, s.Annotations, s.Data)
			}
		}},
		{name: "a federated resource keeps its other annotations", obj: fed, want: func(t *testing.T, got any) {
			u := got.(*unstructured.Unstructured)
			if u.GetManagedFields() != nil || !reflect.DeepEqual(u.GetAnnotations(), map[string]string{"kubefed.io/resync": "1"}) || u.Object["spec"] == nil {
				t.Errorf("got %v", u.Object)
			}
		}},
		{name: "an object without the annotation", obj: plain, want: func(t *testing.T, got any) {
			if a := got.(*corev1.ConfigMap).Annotations; !reflect.DeepEqual(a, map[string]string{"team": "pay"}) {
				t.Errorf("annotations %v, want them as they were", a)
			}
		}},
		{name: "a tombstone", obj: tombstone, want: func(t *testing.T, got any) {
			if got != tombstone {
				t.Errorf("got %v", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Trim(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			tt.want(t, got)
			again, err := Trim(got)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("a second pass gave %v, %v; want the same object", again, err)
			}
		})
	}
}
