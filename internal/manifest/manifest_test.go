package manifest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Data:       map[string]string{"k": "v"},
	}
}

func TestFrom(t *testing.T) {
	t.Parallel()
	u, err := From(configMap("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u.Object["status"]; ok {
		t.Error("manifest has a status")
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "creationTimestamp"); ok {
		t.Error("manifest has a creationTimestamp")
	}
	if got := Describe(u); got != "ConfigMap ns/a" {
		t.Errorf("Describe = %q", got)
	}
}

func TestFromDropsEmptySpec(t *testing.T) {
	t.Parallel()
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	u, err := From(ns)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u.Object["spec"]; ok {
		t.Errorf("manifest has an empty spec: %v", u.Object)
	}
	ns.Spec.Finalizers = []corev1.FinalizerName{"kubernetes"}
	if u, err = From(ns); err != nil {
		t.Fatal(err)
	}
	if _, ok := u.Object["spec"]; !ok {
		t.Errorf("manifest lost a spec that is not empty: %v", u.Object)
	}
}

func TestPrint(t *testing.T) {
	t.Parallel()
	a, _ := From(configMap("a"))
	b, _ := From(configMap("b"))
	tests := []struct {
		format string
		names  func(t *testing.T, out string) []string
	}{
		{format: "", names: yamlNames},
		{format: YAML, names: yamlNames},
		{format: JSON, names: func(t *testing.T, out string) []string {
			var list struct {
				Kind  string
				Items []map[string]any
			}
			if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "List" {
				t.Fatalf("not a List: %v\n%s", err, out)
			}
			var names []string
			for _, item := range list.Items {
				names = append(names, item["metadata"].(map[string]any)["name"].(string))
			}
			return names
		}},
	}
	for _, tt := range tests {
		t.Run("format "+tt.format, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			if err := Print(&out, tt.format, []*unstructured.Unstructured{a, b}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(tt.names(t, out.String()), ","); got != "a,b" {
				t.Errorf("printed %s, want a,b", got)
			}
		})
	}
}

func yamlNames(t *testing.T, out string) []string {
	var names []string
	for _, doc := range strings.Split(out, "---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		names = append(names, obj["metadata"].(map[string]any)["name"].(string))
	}
	return names
}

func TestValidateFormat(t *testing.T) {
	t.Parallel()
	for format, ok := range map[string]bool{"": true, "yaml": true, "json": true, "xml": false, "YAML": false} {
		if err := ValidateFormat(format); (err == nil) != ok {
			t.Errorf("ValidateFormat(%q) = %v", format, err)
		}
	}
}
