package drift

import (
	"encoding/json"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// self is Fedwarden's field manager in FuzzDetect.
const self = "fedwarden"

// FuzzDetect: Detect never panics; its changes are sorted by path, unique
// and bounded; it reads no status-subresource entry and none of its own
// manager's (dropping them changes nothing); a change names a manager only
// when that manager has an entry it reads; and a copy equal to desired has
// no drift, whoever owns its fields.
func FuzzDetect(f *testing.F) {
	desired, live := yamlToJSON(f, desiredYAML), yamlToJSON(f, liveYAML)
	sample := yamlToJSON(f, sampleDeploymentYAML)
	apply := func(manager, subresource, fields string) metav1.ManagedFieldsEntry {
		e := entry(manager, subresource, fields)
		e.Operation = metav1.ManagedFieldsOperationApply
		return e
	}
	for _, managers := range [][]metav1.ManagedFieldsEntry{
		nil,
		{apply(self, "", ownedByFedwarden), entry("kube-controller-manager", "", revisionByKCM), entry("kube-controller-manager", "status", `{"f:status":{"f:replicas":{}}}`)},
		{apply(self, "", ownedByFedwarden), entry("kubectl-edit", "", imageByKubectlEdit)},
		{apply(self, "", ownedByFedwarden), entry("kube-controller-manager", "scale", replicasByHPA)},
		{entry("kubectl-edit", "status", imageByKubectlEdit), entry(self, "", replicasByHPA)},
		{entry("kubectl", "", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{"f:image":{},"f:volumeMounts":{"k:{\"mountPath\":\"/usr/share/nginx/html/\"}":{"f:name":{}}}}}}}}}`)},
		{entry("kubectl", "", `{"f:spec":{"f:template":{"f:spec":{"f:volumes":{"i:0":{"f:name":{}}}}}},"f:metadata":{"f:finalizers":{"v:\"a\"":{}}}}`)},
		{entry("broken", "", `{"f:spec":{"x:bad":{}}}`), entry("broken-status", "status", `[1]`)},
	} {
		mf := mustMarshal(f, managers)
		f.Add(desired, live, mf)
		f.Add(sample, sample, mf)
		f.Add(desired, sample, mf)
	}
	f.Fuzz(func(t *testing.T, desiredJSON, liveJSON, managersJSON []byte) {
		d, l := map[string]any{}, map[string]any{}
		if utiljson.Unmarshal(desiredJSON, &d) != nil || d == nil || utiljson.Unmarshal(liveJSON, &l) != nil || l == nil {
			return
		}
		var managers []metav1.ManagedFieldsEntry
		if json.Unmarshal(managersJSON, &managers) != nil {
			return
		}
		desired := &unstructured.Unstructured{Object: d}
		withManagers := func(obj map[string]any, keep func(metav1.ManagedFieldsEntry) bool) *unstructured.Unstructured {
			u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
			if _, ok := u.Object["metadata"].(map[string]any); !ok {
				u.Object["metadata"] = map[string]any{}
			}
			u.SetManagedFields(slices.DeleteFunc(slices.Clone(managers), func(e metav1.ManagedFieldsEntry) bool { return !keep(e) }))
			return u
		}
		all := func(metav1.ManagedFieldsEntry) bool { return true }
		live := withManagers(l, all)

		changes, err := Detect(desired, live, self)
		if len(changes) > MaxPaths {
			t.Fatalf("%d changes, more than %d", len(changes), MaxPaths)
		}
		for i := 1; i < len(changes); i++ {
			if changes[i-1].Path >= changes[i].Path {
				t.Fatalf("changes not sorted and unique by path: %+v", changes)
			}
		}
		read := map[string]bool{"": true}
		for _, e := range live.GetManagedFields() {
			if e.Manager != self && e.Subresource != "status" && e.FieldsV1 != nil {
				read[e.Manager] = true
			}
		}
		for _, c := range changes {
			if !read[c.Manager] {
				t.Fatalf("change %+v names a manager whose fields are not compared", c)
			}
		}
		for what, keep := range map[string]func(metav1.ManagedFieldsEntry) bool{
			"the status-subresource entries": func(e metav1.ManagedFieldsEntry) bool { return e.Subresource != "status" },
			"Fedwarden's own entries":        func(e metav1.ManagedFieldsEntry) bool { return e.Manager != self },
			"both":                           func(e metav1.ManagedFieldsEntry) bool { return e.Subresource != "status" && e.Manager != self },
		} {
			got, gotErr := Detect(desired, withManagers(l, keep), self)
			if (err == nil) != (gotErr == nil) || !slices.Equal(got, changes) {
				t.Fatalf("without %s: %+v, %v; with them: %+v, %v", what, got, gotErr, changes, err)
			}
		}
		if err != nil {
			return
		}
		// Equal down to the managed fields, which live in metadata too.
		equal := withManagers(d, all)
		if same, err := Detect(equal, equal.DeepCopy(), self); err != nil || len(same) > 0 {
			t.Fatalf("a copy equal to desired drifted: %+v, %v", same, err)
		}
	})
}

// sampleDeploymentYAML is KubeFed's sample1 Deployment, with a volume and
// a mount, matched by name and by key.
const sampleDeploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  labels: {app: nginx}
  finalizers: [a, b]
spec:
  replicas: 1
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      containers:
      - image: nginx
        name: nginx
        volumeMounts:
        - {name: web-file, mountPath: /usr/share/nginx/html/}
      volumes:
      - name: web-file
        configMap: {name: web-file}
`

func yamlToJSON(f *testing.F, s string) []byte {
	f.Helper()
	raw, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		f.Fatal(err)
	}
	return raw
}

func mustMarshal(f *testing.F, v any) []byte {
	f.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		f.Fatal(err)
	}
	return raw
}
