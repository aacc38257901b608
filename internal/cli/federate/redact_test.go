package federate

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRedactedHidesSecretValues(t *testing.T) {
	fed := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedSecret",
		"metadata": map[string]any{"name": "db", "namespace": "team-a"},
		"spec": map[string]any{"template": map[string]any{
			// An annotation may quote a value: the shared rule redacts it
			// too (federate's own rule, before, printed it).
			"metadata":   map[string]any{"annotations": map[string]any{"note": "token is plain-secret-value"}},
			"data":       map[string]any{"password": "c2VjcmV0LXZhbHVl"},
			"stringData": map[string]any{"token": "plain-secret-value"},
			"type":       "Opaque",
		}},
	}}
	out, err := redacted(fed).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, leaked := range []string{"c2VjcmV0LXZhbHVl", "plain-secret-value"} {
		if strings.Contains(string(out), leaked) {
			t.Errorf("printed Secret shows %q: %s", leaked, out)
		}
	}
	if !strings.Contains(string(out), `"password":"\u003credacted: 12 bytes\u003e"`) || !strings.Contains(string(out), "Opaque") {
		t.Errorf("redaction dropped more than the values: %s", out)
	}
	if v, _, _ := unstructured.NestedString(fed.Object, "spec", "template", "data", "password"); v != "c2VjcmV0LXZhbHVl" {
		t.Error("redaction changed the object that is applied")
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"kind": "FederatedConfigMap", "spec": map[string]any{"template": map[string]any{"data": map[string]any{"a": "b"}}}}}
	if redacted(cm) != cm {
		t.Error("a ConfigMap's data was redacted")
	}
}
