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
	// ownedByFedwarden is what the API server records for Fedwarden's
	// apply of desiredYAML.
	ownedByFedwarden   = `{"f:metadata":{"f:labels":{"f:app":{},"f:kubefed.io/managed":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:hostNetwork":{},"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{},"f:resources":{"f:requests":{"f:cpu":{}}}}}}}}}`
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
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource, FieldsV1: metav1.NewFieldsV1(fields)}
}

// update is the operation of the managedFields entries that entry makes.
const update = metav1.ManagedFieldsOperationUpdate

// scaleTo sets the member copy's replicas, as a write through the scale
// subresource or by any other manager would.
func scaleTo(n int64) func(u *unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, n, "spec", "replicas") }
}

func TestDetect(t *testing.T) {
	t.Parallel()
	fedwarden := entry("fedwarden", "", ownedByFedwarden)
	editImage := func(u *unstructured.Unstructured) {
		c, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		c[0].(map[string]any)["image"] = "nginx:1.28"
		_ = unstructured.SetNestedSlice(u.Object, c, "spec", "template", "spec", "containers")
	}
	hpa := Policy{IgnoreManagers: []string{"kube-controller-manager"}}
	tests := []struct {
		name     string
		edit     func(u *unstructured.Unstructured)
		managers []metav1.ManagedFieldsEntry
		// policy is the drift policy Detect runs under; none: every change.
		policy Policy
		want   []Change
	}{
		{
			name:     "defaulted, normalized, other controllers' fields and status: in sync",
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("kube-controller-manager", "", revisionByKCM), entry("kube-controller-manager", "status", `{"f:status":{"f:replicas":{}}}`)},
		},
		{
			name:     "image edited by hand",
			edit:     editImage,
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("kubectl-edit", "", imageByKubectlEdit)},
			want:     []Change{{Path: "/spec/template/spec/containers/0/image", Manager: "kubectl-edit", Operation: update}},
		},
		{
			name: "image applied by another manager: its operation is told",
			edit: editImage,
			managers: []metav1.ManagedFieldsEntry{fedwarden, {Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply,
				FieldsV1: metav1.NewFieldsV1(imageByKubectlEdit)}},
			want: []Change{{Path: "/spec/template/spec/containers/0/image", Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply}},
		},
		{
			name:     "another manager owns a field with the same value: in sync",
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("kubectl-edit", "", imageByKubectlEdit)},
		},
		{
			name:     "scaled by another manager",
			edit:     scaleTo(5),
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("hpa", "", replicasByHPA)},
			want:     []Change{{Path: "/spec/replicas", Manager: "hpa", Operation: update}},
		},
		{
			name:     "scaled through the scale subresource: drift",
			edit:     scaleTo(1),
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("kubectl-scale", "scale", replicasByHPA)},
			want:     []Change{{Path: "/spec/replicas", Manager: "kubectl-scale", Operation: update}},
		},
		{
			name:     "written through another subresource than status: drift",
			edit:     editImage,
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("resizer", "resize", imageByKubectlEdit)},
			want:     []Change{{Path: "/spec/template/spec/containers/0/image", Manager: "resizer", Operation: update}},
		},
		{
			name:     "written through the status subresource: never drift",
			edit:     scaleTo(1),
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("kube-controller-manager", "status", replicasByHPA)},
		},
		{
			name:     "scaled by an ignored manager through the scale subresource: not drift",
			edit:     scaleTo(7),
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("kube-controller-manager", "scale", replicasByHPA)},
			policy:   hpa,
		},
		{
			name:     "an ignored manager's changes are dropped, another's are kept",
			edit:     func(u *unstructured.Unstructured) { scaleTo(7)(u); editImage(u) },
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("kube-controller-manager", "scale", replicasByHPA), entry("kubectl-edit", "", imageByKubectlEdit)},
			policy:   hpa,
			want:     []Change{{Path: "/spec/template/spec/containers/0/image", Manager: "kubectl-edit", Operation: update}},
		},
		{
			name:     "a field an ignored manager shares with another is compared for that one",
			edit:     scaleTo(7),
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("kube-controller-manager", "", replicasByHPA), entry("kubectl", "", replicasByHPA)},
			policy:   hpa,
			want:     []Change{{Path: "/spec/replicas", Manager: "kubectl", Operation: update}},
		},
		{
			name: "a removed field is not an ignored manager's",
			edit: func(u *unstructured.Unstructured) {
				unstructured.RemoveNestedField(u.Object, "metadata", "labels", "app")
			},
			managers: []metav1.ManagedFieldsEntry{fedwarden},
			policy:   Policy{IgnoreManagers: []string{"kube-controller-manager", ""}},
			want:     []Change{{Path: "/metadata/labels/app"}},
		},
		{
			name:     "ignored paths are dropped",
			edit:     scaleTo(1),
			managers: []metav1.ManagedFieldsEntry{fedwarden, entry("kubectl-scale", "scale", replicasByHPA)},
			policy:   Policy{IgnorePaths: []string{"/spec/replicas"}},
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
			got, err := tt.policy.Detect(object(t, desiredYAML), live, "fedwarden")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Detect = %+v, want %+v", got, tt.want)
			}
			// A member informer caches the copy's owned fields only: Detect
			// finds the same in them.
			if fromCache, err := tt.policy.Detect(object(t, desiredYAML), cached(t, live), "fedwarden"); err != nil || !slices.Equal(fromCache, got) {
				t.Errorf("Detect on the cached projection = %+v, %v; want %+v", fromCache, err, got)
			}
			if tt.policy.IgnorePaths == nil && tt.policy.IgnoreManagers == nil {
				if plain, err := Detect(object(t, desiredYAML), live, "fedwarden"); err != nil || !slices.Equal(plain, got) {
					t.Errorf("Detect without a policy = %+v, %v; want %+v", plain, err, got)
				}
			}
		})
	}
}
