package kindref

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
)

func TestParseRef(t *testing.T) {
	t.Parallel()
	got, err := ParseRef("FederatedDeployment/web")
	if err != nil || got != (Ref{Kind: "FederatedDeployment", Name: "web"}) {
		t.Errorf("ParseRef: %+v, %v", got, err)
	}
}

// testResolver resolves against a host that serves Deployments, ConfigMaps,
// Secrets and FederatedDeployments, and federates Deployments and
// ConfigMaps (whose FederatedConfigMap CRD is missing).
func testResolver(t *testing.T) *Resolver {
	t.Helper()
	verbs := metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}
	disco := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", Verbs: verbs, ShortNames: []string{"cm"}},
			{Name: "secrets", SingularName: "secret", Namespaced: true, Kind: "Secret", Verbs: verbs},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", Verbs: verbs, ShortNames: []string{"deploy"}},
		}},
		{GroupVersion: "types.kubefed.io/v1beta1", APIResources: []metav1.APIResource{
			{Name: "federateddeployments", SingularName: "federateddeployment", Namespaced: true, Kind: "FederatedDeployment", Verbs: verbs, ShortNames: []string{"fdeploy"}},
			{Name: "clusterpropagatedversions", SingularName: "clusterpropagatedversion", Namespaced: true, Kind: "ClusterPropagatedVersion", Verbs: verbs, ShortNames: []string{"cpv"}},
		}},
	}}}
	groups, err := restmapper.GetAPIGroupResources(disco)
	if err != nil {
		t.Fatal(err)
	}
	var configs []corev1beta1.FederatedTypeConfig
	for _, target := range []federatedtype.Target{
		{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Namespaced: true},
		{Version: "v1", Kind: "ConfigMap", Plural: "configmaps", Namespaced: true},
	} {
		configs = append(configs, *federatedtype.NewTypeConfig(federatedtype.Type{Target: target}))
	}
	return &Resolver{Mapper: restmapper.NewShortcutExpander(restmapper.NewDiscoveryRESTMapper(groups), disco, nil), Configs: configs}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	r := testResolver(t)
	fdeploy := schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedDeployment"}
	fcm := schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedConfigMap"}
	tests := []struct {
		arg     string
		want    schema.GroupVersionKind
		wantErr string
	}{
		{arg: "FederatedDeployment", want: fdeploy},
		{arg: "federateddeployment", want: fdeploy},
		{arg: "federateddeployments", want: fdeploy},
		{arg: "fdeploy", want: fdeploy},
		{arg: "federateddeployments.types.kubefed.io", want: fdeploy},
		{arg: "federateddeployments.v1beta1.types.kubefed.io", want: fdeploy},
		{arg: "deployment", want: fdeploy},
		{arg: "Deployment", want: fdeploy},
		{arg: "deploy", want: fdeploy},
		{arg: "deployments.apps", want: fdeploy},
		{arg: "cm", want: fcm},
		{arg: "secret", wantErr: `unknown federated kind "secret": Secret is not federated: no FederatedTypeConfig names it (federated kinds: federatedconfigmap, federateddeployment)`},
		{arg: "cpv", wantErr: "ClusterPropagatedVersion.types.kubefed.io is not federated"},
		{arg: "federatedconfigmap", wantErr: `unknown federated kind "federatedconfigmap": the host serves no such resource`},
		{arg: "deployments.batch", wantErr: "the host serves no such resource"},
		{arg: "nothing", wantErr: "the host serves no such resource (federated kinds: federatedconfigmap, federateddeployment)"},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			t.Parallel()
			got, err := r.Resolve(tt.arg)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrUnknownKind) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Resolve(%q): %v, want an ErrUnknownKind holding %q", tt.arg, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.arg, err)
			}
			if got.Type.Federated != tt.want {
				t.Errorf("Resolve(%q) = %v, want %v", tt.arg, got.Type.Federated, tt.want)
			}
		})
	}
}

func TestKindKeyAndDescribe(t *testing.T) {
	t.Parallel()
	r := testResolver(t)
	k, err := r.Resolve("fdeploy")
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Key("web", "shop"); got.Namespace != "shop" || got.Name != "web" {
		t.Errorf("Key: %v", got)
	}
	if got, want := k.Describe("web"), "federateddeployment.types.kubefed.io/web"; got != want {
		t.Errorf("Describe: %q, want %q", got, want)
	}
	k.Type.FederatedNamespaced = false
	if got := k.Key("web", "shop"); got.Namespace != "" {
		t.Errorf("Key of a cluster-scoped kind: %v", got)
	}
}

func TestByFederatedKind(t *testing.T) {
	t.Parallel()
	r := testResolver(t)
	fdeploy := schema.GroupKind{Group: "types.kubefed.io", Kind: "FederatedDeployment"}
	k, err := r.ByFederatedKind(fdeploy)
	if err != nil || k.Type.Federated.GroupKind() != fdeploy || k.Config == nil || k.Config.Spec.FederatedType.Kind != fdeploy.Kind {
		t.Errorf("ByFederatedKind(%v) = %+v, %v", fdeploy, k, err)
	}
	// A manifest's kind is exact: no target kind, no other case, no
	// other group.
	for _, gk := range []schema.GroupKind{
		{Group: "apps", Kind: "Deployment"},
		{Group: "types.kubefed.io", Kind: "federateddeployment"},
		{Group: "fed.example.com", Kind: "FederatedDeployment"},
	} {
		_, err := r.ByFederatedKind(gk)
		want := "unknown federated kind " + gk.Kind + "." + gk.Group + ": no FederatedTypeConfig federates it (federated kinds: FederatedConfigMap, FederatedDeployment)"
		if err == nil || !errors.Is(err, ErrUnknownKind) || err.Error() != want {
			t.Errorf("ByFederatedKind(%v): %v, want %q wrapping ErrUnknownKind", gk, err, want)
		}
	}
	none := &Resolver{}
	_, err = none.ByFederatedKind(fdeploy)
	if err == nil || !strings.HasSuffix(err.Error(), "(federated kinds: none; `fedwarden enable` federates one)") {
		t.Errorf("ByFederatedKind without FederatedTypeConfigs: %v", err)
	}
}
