package fedtest

import "testing"

func TestLabel(t *testing.T) {
	labels := `component="apiserver",group="types.kubefed.io",resource="federateddeployments",scope="resource",subresource="status",verb="PATCH",version="v1beta1"} 12`
	for name, want := range map[string]string{"resource": "federateddeployments", "subresource": "status", "verb": "PATCH", "component": "apiserver", "code": ""} {
		if got := label(labels, name); got != want {
			t.Errorf("label(%q) = %q, want %q", name, got, want)
		}
	}
}
