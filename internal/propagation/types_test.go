package propagation

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var ingresses = Type{
	Name:             "ingresses.networking.k8s.io",
	Federated:        schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedIngress"},
	Target:           schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
	TargetResource:   schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
	TargetNamespaced: true, FederatedNamespaced: true,
}

func TestNamespaceKeys(t *testing.T) {
	ns := Type{Target: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, FederatedNamespaced: true}
	if got := ns.federatedKey("", "team-a"); got.Namespace != "team-a" || got.Name != "team-a" {
		t.Errorf("federatedKey of Namespace team-a = %v", got)
	}
	if got := ns.CPVName("team-a"); got != "namespace-team-a" {
		t.Errorf("CPVName = %s", got)
	}
	if got := ns.renderTarget(); got.Kind != ns.Target || got.Namespaced {
		t.Errorf("renderTarget = %+v", got)
	}
}
