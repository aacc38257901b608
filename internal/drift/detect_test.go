package drift

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const desiredYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {kubefed.io/managed: "true", app: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      hostNetwork: false
      containers:
      - name: web
        image: nginx:1.27
        resources: {requests: {cpu: 1000m}}
        env: []
`

// live is desired as the member's API server stores it: defaulted, the
// quantity normalized, empty fields dropped, plus status and managers.
const liveYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {kubefed.io/managed: "true", app: web}
  annotations: {deployment.kubernetes.io/revision: "1"}
spec:
  replicas: 3
  revisionHistoryLimit: 10
  progressDeadlineSeconds: 600
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}
  template:
    metadata: {labels: {app: web}}
    spec:
      restartPolicy: Always
      containers:
      - name: web
        image: nginx:1.27
        imagePullPolicy: IfNotPresent
        resources: {requests: {cpu: "1"}}
status: {replicas: 3}
`

const (
	ownedByFedwarden   = `{"f:metadata":{"f:labels":{"f:app":{},"f:kubefed.io/managed":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`
	revisionByKCM      = `{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`
	imageByKubectlEdit = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:image":{}}}}}}}`
	replicasByHPA      = `{"f:spec":{"f:replicas":{}}}`
)

func object(t *testing.T, s string, managers ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetManagedFields(managers)
	return u
}

func entry(manager, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource, FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	fedwarden := entry("fedwarden", "", ownedByFedwarden)
	tests := []struct {
		name     string
		edit     func(u *unstructured.Unstructured)
		managers []metav1.ManagedFieldsEntry
		want     []Change
	}{
		{
			name:     "defaulted, normalized, other controllers' fields and status: in sync",
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("kube-controller-manager", "", revisionByKCM), entry("kube-controller-manager", "status", `{"f:status":{"f:replicas":{}}}`)},
		},
		{
			name: "image edited by hand",
			edit: func(u *unstructured.Unstructured) {
				c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
				c[0].(map[string]any)["image"] = "nginx:1.28"
				_ = unstructured.SetNestedSlice(u.Object, c, "spec", "template", "spec", "containers")
			},
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("kubectl-edit", "", imageByKubectlEdit)},
			want:     []Change{{Path: "/spec/template/spec/containers/0/image", Manager: "kubectl-edit"}},
		},
		{
			name:     "another manager owns a field with the same value: in sync",
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("kubectl-edit", "", imageByKubectlEdit)},
		},
		{
			name: "scaled by another manager",
			edit: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "replicas")
			},
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("hpa", "", replicasByHPA)},
			want:     []Change{{Path: "/spec/replicas", Manager: "hpa"}},
		},
		{
			name: "a label removed",
			edit: func(u *unstructured.Unstructured) {
				unstructured.RemoveNestedField(u.Object, "metadata", "labels", "app")
			},
			managers: []metav1.ManagedFieldsEntry{fedwarden},
			want:     []Change{{Path: "/metadata/labels/app"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			live := object(t, liveYAML, tt.managers...)
			if tt.edit != nil {
				tt.edit(live)
			}
			got, err := Detect(object(t, desiredYAML), live, "fedwarden")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Detect = %+v, want %+v", got, tt.want)
			}
		})
	}
}
