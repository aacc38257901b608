package migrate

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
)

func TestHTTPSEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "https://10.0.0.1:6443", want: "https://10.0.0.1:6443"},
		{in: "10.0.0.1:6443", want: "https://10.0.0.1:6443"},
		{in: "api.example.com", want: "https://api.example.com"},
		{in: "http://10.0.0.1:8080", wantErr: "https only"},
		{in: "", wantErr: "empty"},
		{in: "https://", wantErr: "no host"},
	}
	for _, tt := range tests {
		got, err := httpsEndpoint(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("httpsEndpoint(%q) error %v, want one with %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("httpsEndpoint(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestMapCluster(t *testing.T) {
	t.Parallel()
	good := Cluster{Name: "east", APIEndpoint: "10.0.0.1:6443", SecretName: "east-token", SecretKeys: []string{"ca.crt", "token"},
		Labels: map[string]string{"region": "us-east"}}
	tests := []struct {
		name    string
		edit    func(*Cluster)
		blocked []string // substrings of the blockers' reasons
	}{
		{name: "carried over", edit: func(*Cluster) {}},
		{name: "name not a label", edit: func(c *Cluster) { c.Name = "east.example.com" }, blocked: []string{"DNS-1123 label"}},
		{name: "TLS validation disabled", edit: func(c *Cluster) { c.DisabledTLSValidations = []string{"*"} }, blocked: []string{"never skips TLS verification"}},
		{name: "proxy", edit: func(c *Cluster) { c.ProxyURL = "http://proxy:3128" }, blocked: []string{"no per-cluster proxy"}},
		{name: "secret missing", edit: func(c *Cluster) { c.SecretMissing = true }, blocked: []string{"does not exist"}},
		{name: "no token key", edit: func(c *Cluster) { c.SecretKeys = []string{"ca.crt"} }, blocked: []string{`no "token" key`}},
		{name: "plain http", edit: func(c *Cluster) { c.APIEndpoint = "http://10.0.0.1" }, blocked: []string{"https only"}},
		{name: "bad CA bundle", edit: func(c *Cluster) { c.CABundle = []byte("not a certificate") }, blocked: []string{"spec.caBundle"}},
		{name: "several at once", edit: func(c *Cluster) { c.ProxyURL, c.SecretMissing = "http://p", true }, blocked: []string{"proxy", "does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := good
			tt.edit(&c)
			m, blockers := mapCluster(c)
			if len(blockers) != len(tt.blocked) {
				t.Fatalf("blockers %v, want %d", blockers, len(tt.blocked))
			}
			for i, want := range tt.blocked {
				if !strings.Contains(blockers[i].Reason, want) {
					t.Errorf("blocker %d: %q, want it to say %q", i, blockers[i].Reason, want)
				}
			}
			if len(tt.blocked) > 0 {
				return
			}
			fc := m.cluster
			if fc.Name != "east" || fc.Spec.APIEndpoint != "https://10.0.0.1:6443" || fc.Spec.SecretRef.Name != "east-token" || fc.Spec.SyncMode != corev1beta1.SyncModePush {
				t.Errorf("FederatedCluster %+v", fc)
			}
			if fc.Labels["region"] != "us-east" || fc.Labels[LabelMigratedFrom] != "kubefed" {
				t.Errorf("labels %v: want KubeFedCluster's and %s", fc.Labels, LabelMigratedFrom)
			}
			want := map[string]string{
				corev1beta1.AnnotationCredentialsCluster:  "east",
				corev1beta1.AnnotationCredentialsEndpoint: "https://10.0.0.1:6443",
				corev1beta1.AnnotationCredentialsCA:       corev1beta1.CredentialsCASystemRoots,
			}
			for k, v := range want {
				if m.binding[k] != v {
					t.Errorf("binding %s = %q, want %q", k, m.binding[k], v)
				}
			}
		})
	}
}

const testConfig = `apiVersion: core.kubefed.io/v1beta1
kind: KubeFedConfig
metadata:
  name: kubefed
  namespace: kube-federation-system
spec:
  scope: Namespaced
  controllerDuration:
    availableDelay: 20s
  leaderElect:
    resourceLock: configmaps
  clusterHealthCheck:
    period: 10s
    failureThreshold: 3
    timeout: 3s
  syncController:
    maxConcurrentReconciles: 4
  featureGates:
  - name: PushReconciler
    configuration: Enabled
  - name: SchedulerPreferences
    configuration: Enabled
  - name: CrossClusterServiceDiscovery
    configuration: Enabled
  - name: FederatedIngress
    configuration: Disabled
`

func TestConfigPlan(t *testing.T) {
	t.Parallel()
	cfg := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(testConfig), &cfg.Object); err != nil {
		t.Fatal(err)
	}
	args, lost := configPlan(cfg)
	wantArgs := []string{"--cluster-health-period=10s", "--cluster-health-timeout=3s", "--cluster-health-failure-threshold=3", "--propagation-workers=4"}
	if !slices.Equal(args, wantArgs) {
		t.Errorf("args %v, want %v", args, wantArgs)
	}
	var settings []string
	for _, f := range lost {
		settings = append(settings, f.Setting)
	}
	wantLost := []string{"spec.scope Namespaced", "spec.controllerDuration.availableDelay 20s", "spec.leaderElect.resourceLock configmaps", "feature gate CrossClusterServiceDiscovery Enabled"}
	if !slices.Equal(settings, wantLost) {
		t.Errorf("not carried over %q, want %q", settings, wantLost)
	}
	if args, lost := configPlan(nil); args != nil || lost != nil {
		t.Errorf("no KubeFedConfig: %v %v", args, lost)
	}
}

func TestCRDDiffers(t *testing.T) {
	t.Parallel()
	typ := federatedtype.Type{Target: federatedtype.Target{Version: "v1", Kind: "ConfigMap", Plural: "configmaps", Namespaced: true}}
	crd := func(scope apiextensionsv1.ResourceScope, stored ...string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Scope: scope}}
		c.Status.StoredVersions = stored
		return c
	}
	tests := []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want string
	}{
		{name: "same", crd: crd(apiextensionsv1.NamespaceScoped, "v1beta1")},
		{name: "scope", crd: crd(apiextensionsv1.ClusterScoped, "v1beta1"), want: "scope cannot change"},
		{name: "stored versions", crd: crd(apiextensionsv1.NamespaceScoped, "v1alpha1", "v1beta1"), want: "stored as v1alpha1"},
	}
	for _, tt := range tests {
		got := crdDiffers(tt.crd, typ)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestNewPlan(t *testing.T) {
	t.Parallel()
	inv := &Inventory{
		Namespace:     "kube-federation-system",
		LeaseDuration: "15s",
		Controller:    &Controller{Name: ControllerDeployment, Replicas: 1},
		Clusters:      []Cluster{{Name: "east", APIEndpoint: "https://10.0.0.1", SecretName: "east", SecretKeys: []string{"token"}}},
		Types: []Type{{Name: "configmaps", FederatedCRD: "federatedconfigmaps.types.kubefed.io", Propagation: "Enabled", StatusType: "FederatedConfigMapStatus",
			spec: typeSpec{targetVersion: "v1", targetKind: "ConfigMap", targetPlural: "configmaps", targetScope: "Namespaced",
				fedGroup: "types.kubefed.io", fedVersion: "v1beta1", fedKind: "FederatedConfigMap", fedPlural: "federatedconfigmaps", fedScope: "Namespaced"}}},
		PropagatedVersions: 3,
		crds: map[string]*apiextensionsv1.CustomResourceDefinition{
			"federatedconfigmaps.types.kubefed.io": {Spec: apiextensionsv1.CustomResourceDefinitionSpec{Scope: apiextensionsv1.NamespaceScoped}},
		},
	}
	p := NewPlan(inv, Options{DefaultRemediation: typesv1beta1.RemediationAlert})
	if len(p.Blockers) > 0 {
		t.Fatalf("blockers %v", p.Blockers)
	}
	var steps []string
	for _, s := range p.Steps {
		steps = append(steps, s.Action+" "+s.Object)
	}
	for _, want := range []string{"scale Deployment kube-federation-system/kubefed-controller-manager", "replace CustomResourceDefinition federatedconfigmaps.types.kubefed.io",
		"create FederatedTypeConfig configmaps", "create FederatedCluster east"} {
		if !slices.Contains(steps, want) {
			t.Errorf("steps %q lack %q", steps, want)
		}
	}
	if len(p.NotCarriedOver) != 2 {
		t.Errorf("not carried over: %v, want the statusType and the PropagatedVersions", p.NotCarriedOver)
	}
	if !slices.Contains(p.ControllerManagerArgs, "--default-remediation=Alert") {
		t.Errorf("controller-manager args %v", p.ControllerManagerArgs)
	}

	inv.Clusters = nil
	if p := NewPlan(inv, Options{}); len(p.Blockers) != 1 {
		t.Errorf("a KubeFed without clusters: blockers %v, want one", p.Blockers)
	}
}
