package drift

import (
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"
)

// cached is live as a member informer keeps it: its apiVersion, kind and
// metadata, and the leaves some manager owns. live is left as it is.
func cached(t *testing.T, live *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	owned, err := Owned(live.GetManagedFields())
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: Project(live.DeepCopy().Object, owned.Union(fieldpath.NewSet(
		fieldpath.MakePathOrDie("apiVersion"), fieldpath.MakePathOrDie("kind"), fieldpath.MakePathOrDie("metadata"))))}
}

func TestProject(t *testing.T) {
	t.Parallel()
	ports := `
spec:
  containers:
  - name: web
    ports:
    - {containerPort: 80, protocol: TCP, name: http}
    - {containerPort: 443, protocol: TCP}
    args: [a, b]
  volumes:
  - {name: one, emptyDir: {}}
  - {name: two, emptyDir: {}}
  finalizers: [a, b]
`
	tests := []struct {
		name     string
		obj      string
		managers []metav1.ManagedFieldsEntry
		want     string
	}{
		{
			name: "owned leaves are kept, defaults and status dropped",
			obj:  liveYAML,
			managers: []metav1.ManagedFieldsEntry{entry("fedwarden", "", ownedByFedwarden), entry("kube-controller-manager", "", revisionByKCM),
				entry("kube-controller-manager", "status", `{"f:status":{"f:replicas":{}}}`)},
			want: `
metadata:
  labels: {kubefed.io/managed: "true", app: web}
  annotations: {deployment.kubernetes.io/revision: "1"}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27, resources: {requests: {cpu: "1"}}}]}
`,
		},
		{
			name:     "an item selected by key keeps its key fields",
			obj:      ports,
			managers: []metav1.ManagedFieldsEntry{entry("kubectl", "", `{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:ports":{"k:{\"containerPort\":443,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}`)},
			want:     `spec: {containers: [{name: web, ports: [{containerPort: 443, protocol: TCP}]}]}`,
		},
		{
			name:     "an atomic list is a leaf, kept whole",
			obj:      ports,
			managers: []metav1.ManagedFieldsEntry{entry("kubectl", "", `{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:args":{}}}}}`)},
			want:     `spec: {containers: [{name: web, args: [a, b]}]}`,
		},
		{
			name:     "a list entered by position is kept whole",
			obj:      ports,
			managers: []metav1.ManagedFieldsEntry{entry("kubectl", "", `{"f:spec":{"f:volumes":{"i:1":{"f:name":{}}}}}`)},
			want:     `spec: {volumes: [{name: one, emptyDir: {}}, {name: two, emptyDir: {}}]}`,
		},
		{
			name:     "an item selected by value",
			obj:      ports,
			managers: []metav1.ManagedFieldsEntry{entry("kubectl", "", `{"f:spec":{"f:finalizers":{"v:\"b\"":{}}}}`)},
			want:     `spec: {finalizers: [b]}`,
		},
		{
			name:     "a field owned but gone is not made up",
			obj:      ports,
			managers: []metav1.ManagedFieldsEntry{entry("kubectl", "", `{"f:spec":{"f:replicas":{},"f:containers":{"k:{\"name\":\"api\"}":{"f:image":{}}}}}`)},
			want:     `spec: {containers: []}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obj := object(t, tt.obj)
			owned, err := Owned(tt.managers)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]any{}
			if err := yaml.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
			original := obj.DeepCopy().Object
			got := Project(obj.Object, owned)
			if !Equal(got, want, "") {
				t.Errorf("Project =\n%v\nwant\n%v", got, want)
			}
			// Every path of the fields finds in the projection what it finds in
			// the object: Detect reads the one as the other.
			owned.Iterate(func(p fieldpath.Path) {
				v, pointer, found := resolve(original, p)
				pv, ppointer, pfound := resolve(got, p)
				if found != pfound || (found && !reflect.DeepEqual(v, pv)) {
					t.Errorf("%s: %v at %s in the object (found %t), %v at %s in the projection (found %t)", p, v, pointer, found, pv, ppointer, pfound)
				}
			})
		})
	}
}

func TestOwnedSkipsTheStatusSubresourceAndReportsBadFields(t *testing.T) {
	t.Parallel()
	owned, err := Owned([]metav1.ManagedFieldsEntry{
		entry("fedwarden", "", `{"f:spec":{".":{},"f:replicas":{}}}`),
		entry("kube-controller-manager", "status", `{"f:status":{"f:replicas":{}}}`),
		entry("kubectl-scale", "scale", `{"f:spec":{"f:replicas":{}}}`),
		{Manager: "empty"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	owned.Iterate(func(p fieldpath.Path) { got = append(got, p.String()) })
	if want := []string{".spec.replicas"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Owned = %v, want %v (leaves only, no status)", got, want)
	}
	if _, err := Owned([]metav1.ManagedFieldsEntry{entry("broken", "", `[1]`)}); err == nil {
		t.Error("Owned of unreadable fields: no error")
	}
}

// FuzzProject: Project never panics, and every leaf Owned returns finds in
// the projection what it finds in the object.
func FuzzProject(f *testing.F) {
	for _, obj := range []string{liveYAML, sampleDeploymentYAML} {
		for _, managers := range [][]metav1.ManagedFieldsEntry{
			{entry(self, "", ownedByFedwarden), entry("kube-controller-manager", "", revisionByKCM)},
			{entry("kubectl", "", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{"f:image":{},"f:volumeMounts":{"k:{\"mountPath\":\"/usr/share/nginx/html/\"}":{"f:name":{}}}}}}}}}`)},
			{entry("kubectl", "", `{"f:spec":{"f:template":{"f:spec":{"f:volumes":{"i:0":{"f:name":{}}}}}},"f:metadata":{"f:finalizers":{"v:\"a\"":{}}}}`)},
		} {
			f.Add(yamlToJSON(f, obj), mustMarshal(f, managers))
		}
	}
	f.Fuzz(func(t *testing.T, objJSON, managersJSON []byte) {
		obj := map[string]any{}
		if utiljson.Unmarshal(objJSON, &obj) != nil || obj == nil {
			return
		}
		var managers []metav1.ManagedFieldsEntry
		if json.Unmarshal(managersJSON, &managers) != nil {
			return
		}
		owned, err := Owned(managers)
		if err != nil {
			return
		}
		original := runtime.DeepCopyJSON(obj)
		projected := Project(obj, owned)
		owned.Iterate(func(p fieldpath.Path) {
			v, _, found := resolve(original, p)
			pv, _, pfound := resolve(projected, p)
			if found != pfound || (found && !reflect.DeepEqual(v, pv)) {
				t.Errorf("%s: %v in the object (found %t), %v in the projection (found %t)", p, v, found, pv, pfound)
			}
		})
	})
}
