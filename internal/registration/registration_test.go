package registration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// testCA is a PEM bundle; validation looks only for a CERTIFICATE block.
var testCA = selfSignedCA()

// selfSignedCA returns the PEM of a throwaway CA certificate.
func selfSignedCA() []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func validSpec() Spec {
	return Spec{
		Name:        "member-1",
		Namespace:   v1beta1.DefaultFederationNamespace,
		APIEndpoint: "https://10.0.0.1:6443",
		CABundle:    testCA,
		SyncMode:    v1beta1.SyncModePush,
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  func(string) string
		want string
	}{
		{name: "ServiceAccount", got: ServiceAccountName, want: "fedwarden-east"},
		{name: "token Secret", got: TokenSecretName, want: "fedwarden-east-token"},
		{name: "ClusterRole", got: ClusterRoleName, want: "fedwarden:member:east"},
		{name: "credentials Secret", got: CredentialsSecretName, want: "fedwarden-east-credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.got("east"); got != tt.want {
				t.Errorf("name of east = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  func(*Spec)
		wantErr string // "" for valid
	}{
		{name: "valid", change: func(*Spec) {}},
		{name: "valid with everything", change: func(s *Spec) {
			s.Region, s.Zones = "us-east-1", []string{"us-east-1a", "us-east-1b"}
			s.Labels = map[string]string{"env": "prod", "example.com/team": "a"}
			s.Resources = []Resource{{Group: "apps", Resource: "deployments"}}
		}},
		{name: "pull is a valid mode", change: func(s *Spec) { s.SyncMode = v1beta1.SyncModePull }},
		{name: "no CA: system roots", change: func(s *Spec) { s.CABundle = nil }},
		{name: "upper-case name", change: func(s *Spec) { s.Name = "Member" }, wantErr: `cluster name "Member" is not valid`},
		{name: "empty name", change: func(s *Spec) { s.Name = "" }, wantErr: `cluster name "" is not valid`},
		{name: "name too long", change: func(s *Spec) { s.Name = strings.Repeat("a", 64) }, wantErr: "is not valid"},
		{name: "bad namespace", change: func(s *Spec) { s.Namespace = "kube_fed" }, wantErr: `namespace "kube_fed" is not valid`},
		{name: "http endpoint", change: func(s *Spec) { s.APIEndpoint = "http://10.0.0.1:8080" }, wantErr: "Fedwarden verifies the member's certificate"},
		{name: "endpoint without scheme", change: func(s *Spec) { s.APIEndpoint = "10.0.0.1:6443" }, wantErr: "member API endpoint"},
		{name: "endpoint without host", change: func(s *Spec) { s.APIEndpoint = "https://" }, wantErr: "has no host"},
		{name: "CA not PEM", change: func(s *Spec) { s.CABundle = []byte("not a certificate") }, wantErr: "holds no PEM certificate"},
		{name: "unknown sync mode", change: func(s *Spec) { s.SyncMode = "push" }, wantErr: `sync mode "push" is not valid`},
		{name: "bad region", change: func(s *Spec) { s.Region = "us east" }, wantErr: `region "us east" is not valid`},
		{name: "empty zone", change: func(s *Spec) { s.Zones = []string{""} }, wantErr: `zone "" is not valid`},
		{name: "bad zone", change: func(s *Spec) { s.Zones = []string{"a/b"} }, wantErr: `zone "a/b" is not valid`},
		{name: "zone twice", change: func(s *Spec) { s.Zones = []string{"a", "a"} }, wantErr: `zone "a" is given twice`},
		{name: "too many zones", change: func(s *Spec) { s.Zones = make([]string, 33) }, wantErr: "at most 32"},
		{name: "bad label key", change: func(s *Spec) { s.Labels = map[string]string{"a b": "c"} }, wantErr: `label key "a b" is not valid`},
		{name: "bad label value", change: func(s *Spec) { s.Labels = map[string]string{"a": "b c"} }, wantErr: `value "b c" of label "a" is not valid`},
		{name: "reserved cluster label", change: func(s *Spec) { s.Labels = map[string]string{v1beta1.LabelCluster: "x"} }, wantErr: "set to the cluster name"},
		{name: "reserved region label", change: func(s *Spec) { s.Labels = map[string]string{v1beta1.LabelRegion: "x"} }, wantErr: "set from the region"},
		{name: "bad resource", change: func(s *Spec) { s.Resources = []Resource{{Resource: "*"}} }, wantErr: `resource "*" is not valid`},
		{name: "every problem is reported", change: func(s *Spec) { s.Name, s.Region = "A", "a b" }, wantErr: `region "a b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := validSpec()
			tt.change(&s)
			err := s.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseResources(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      []string
		want    []Resource
		wantErr string
	}{
		{name: "none", in: nil, want: nil},
		{name: "core and groups", in: []string{"configmaps", "deployments.apps", "ingresses.networking.k8s.io"}, want: []Resource{
			{Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}, {Group: "networking.k8s.io", Resource: "ingresses"},
		}},
		{name: "repeats dropped", in: []string{"configmaps", " configmaps", "configmaps.apps"}, want: []Resource{
			{Resource: "configmaps"}, {Group: "apps", Resource: "configmaps"},
		}},
		{name: "upper case", in: []string{"Deployments.apps"}, wantErr: `resource "Deployments.apps" is not valid`},
		{name: "wildcard", in: []string{"*"}, wantErr: `resource "*" is not valid`},
		{name: "empty", in: []string{""}, wantErr: `resource "" is not valid`},
		{name: "bad group", in: []string{"deployments.Apps"}, wantErr: `group "Apps"`},
		{name: "subresource", in: []string{"deployments/scale.apps"}, wantErr: "is not valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseResources(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseResources error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseResources: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ParseResources = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRules(t *testing.T) {
	t.Parallel()
	writeVerbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	probe := rbacv1.PolicyRule{NonResourceURLs: []string{"/readyz", "/healthz", "/livez", "/version"}, Verbs: []string{"get"}}
	tests := []struct {
		name      string
		resources []Resource
		want      []rbacv1.PolicyRule
	}{
		{name: "only the resources given, one rule per group", resources: []Resource{
			{Group: "apps", Resource: "deployments"}, {Resource: "configmaps"}, {Group: "apps", Resource: "statefulsets"},
		}, want: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets"}, Verbs: writeVerbs},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: writeVerbs},
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create"}},
			{APIGroups: []string{""}, Resources: []string{"nodes", "pods", "resourcequotas"}, Verbs: []string{"get", "list", "watch"}},
			probe,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Rules(tt.resources)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("Rules =\n%v\nwant\n%v", got, tt.want)
			}
			for _, r := range got {
				for _, v := range r.Verbs {
					if slices.Contains([]string{"*", "escalate", "bind", "impersonate", "approve", "sign", "deletecollection"}, v) {
						t.Errorf("rule %v grants %q", r, v)
					}
				}
			}
		})
	}
}

func TestNewMember(t *testing.T) {
	t.Parallel()
	m := NewMember(validSpec())
	wantLabels := map[string]string{v1beta1.LabelCluster: "member-1", LabelManagedBy: ManagedBy}
	tests := []struct {
		name  string
		check func() string // a problem, or ""
	}{
		{name: "objects in apply order", check: func() string {
			var kinds []string
			for _, obj := range m.Objects() {
				kinds = append(kinds, obj.GetObjectKind().GroupVersionKind().Kind)
			}
			if want := []string{"Namespace", "ServiceAccount", "Secret", "ClusterRole", "ClusterRoleBinding"}; !slices.Equal(kinds, want) {
				return "kinds " + strings.Join(kinds, ",")
			}
			return ""
		}},
		{name: "labels", check: func() string {
			for _, obj := range m.Objects()[1:] {
				if !equality.Semantic.DeepEqual(obj.GetLabels(), wantLabels) {
					return obj.GetName() + " has labels " + strings.Join(keys(obj.GetLabels()), ",")
				}
			}
			if !equality.Semantic.DeepEqual(m.Namespace.Labels, map[string]string{LabelManagedBy: ManagedBy}) {
				return "the shared Namespace carries a cluster label"
			}
			return ""
		}},
		{name: "token Secret", check: func() string {
			s := m.TokenSecret
			if s.Namespace != v1beta1.DefaultFederationNamespace || s.Name != "fedwarden-member-1-token" ||
				s.Type != corev1.SecretTypeServiceAccountToken || s.Annotations[corev1.ServiceAccountNameKey] != "fedwarden-member-1" || s.Data != nil {
				return "unexpected token Secret"
			}
			return ""
		}},
		{name: "binding to the ServiceAccount", check: func() string {
			b := m.ClusterRoleBinding
			want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: v1beta1.DefaultFederationNamespace, Name: "fedwarden-member-1"}
			if b.RoleRef.Name != "fedwarden:member:member-1" || b.RoleRef.Kind != "ClusterRole" || len(b.Subjects) != 1 || b.Subjects[0] != want {
				return "unexpected binding"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if problem := tt.check(); problem != "" {
				t.Error(problem)
			}
		})
	}
}

func TestMemberClusterRole(t *testing.T) {
	t.Parallel()
	rbacRule := rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "clusterroles"}, Verbs: []string{"bind", "escalate"}}
	tests := []struct {
		name      string
		propagate bool
		resources []Resource
		wantRBAC  bool
	}{
		{name: "no bind nor escalate by default"},
		{name: "no bind nor escalate with a resource list", resources: []Resource{{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}}},
		{name: "PropagateRBAC grants bind and escalate on roles", propagate: true, wantRBAC: true},
		{name: "PropagateRBAC with a resource list", propagate: true, wantRBAC: true,
			resources: []Resource{{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := validSpec()
			spec.PropagateRBAC, spec.Resources = tt.propagate, tt.resources
			if err := spec.Validate(); err != nil {
				t.Fatal(err)
			}
			rules := NewMember(spec).ClusterRole.Rules
			want := Rules(tt.resources)
			if tt.wantRBAC {
				want = append(want, rbacRule)
			}
			if !equality.Semantic.DeepEqual(rules, want) {
				t.Errorf("rules\n%v\nwant\n%v", rules, want)
			}
			granted := slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
				return slices.Contains(r.Verbs, "escalate") || slices.Contains(r.Verbs, "bind")
			})
			if granted != tt.wantRBAC {
				t.Errorf("bind or escalate granted: %v, want %v", granted, tt.wantRBAC)
			}
		})
	}
}

func TestNewHost(t *testing.T) {
	t.Parallel()
	creds := Credentials{Token: []byte("tok"), CA: []byte("ca")}
	tests := []struct {
		name       string
		change     func(*Spec)
		creds      Credentials
		wantLabels map[string]string
		wantKeys   []string
	}{
		{name: "plain", creds: creds, wantKeys: []string{"ca.crt", "token"},
			wantLabels: map[string]string{v1beta1.LabelCluster: "member-1", LabelManagedBy: ManagedBy}},
		{name: "no CA in the token Secret", creds: Credentials{Token: []byte("tok")}, wantKeys: []string{"token"},
			wantLabels: map[string]string{v1beta1.LabelCluster: "member-1", LabelManagedBy: ManagedBy}},
		{name: "region, one zone and user labels", creds: creds, wantKeys: []string{"ca.crt", "token"},
			change: func(s *Spec) { s.Region, s.Zones, s.Labels = "eu", []string{"eu-a"}, map[string]string{"env": "prod"} },
			wantLabels: map[string]string{v1beta1.LabelCluster: "member-1", LabelManagedBy: ManagedBy,
				v1beta1.LabelRegion: "eu", v1beta1.LabelZone: "eu-a", "env": "prod"}},
		{name: "two zones: no zone label", creds: creds, wantKeys: []string{"ca.crt", "token"},
			change:     func(s *Spec) { s.Zones = []string{"eu-a", "eu-b"} },
			wantLabels: map[string]string{v1beta1.LabelCluster: "member-1", LabelManagedBy: ManagedBy}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := validSpec()
			if tt.change != nil {
				tt.change(&s)
			}
			h := NewHost(s, tt.creds)
			if got := keys(h.Credentials.Data); !slices.Equal(got, tt.wantKeys) {
				t.Errorf("Secret keys = %v, want %v", got, tt.wantKeys)
			}
			if h.Credentials.Name != "fedwarden-member-1-credentials" || h.Credentials.Type != corev1.SecretTypeOpaque {
				t.Errorf("Secret %s of type %s", h.Credentials.Name, h.Credentials.Type)
			}
			fc := h.Cluster
			if !equality.Semantic.DeepEqual(fc.Labels, tt.wantLabels) {
				t.Errorf("FederatedCluster labels = %v, want %v", fc.Labels, tt.wantLabels)
			}
			if fc.Spec.APIEndpoint != s.APIEndpoint || string(fc.Spec.CABundle) != string(s.CABundle) || fc.Spec.SyncMode != s.SyncMode ||
				fc.Spec.SecretRef == nil || fc.Spec.SecretRef.Name != h.Credentials.Name || fc.Spec.Region != s.Region || len(fc.Spec.Zones) != len(s.Zones) {
				t.Errorf("FederatedCluster spec = %+v", fc.Spec)
			}
			if fc.APIVersion != "core.kubefed.io/v1beta1" || fc.Kind != "FederatedCluster" {
				t.Errorf("FederatedCluster type = %s %s", fc.APIVersion, fc.Kind)
			}
		})
	}
}

func TestCredentialsOwner(t *testing.T) {
	t.Parallel()
	fc := NewHost(validSpec(), Credentials{}).Cluster
	fc.UID = types.UID("1234")
	got := CredentialsOwner(validSpec(), fc)
	if got.Name != "fedwarden-member-1-credentials" || got.Namespace != v1beta1.DefaultFederationNamespace || got.Data != nil || got.Labels != nil {
		t.Errorf("owner apply configuration sets more than the owner: %+v", got.ObjectMeta)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "1234" || got.OwnerReferences[0].Kind != "FederatedCluster" {
		t.Errorf("owner references = %+v", got.OwnerReferences)
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestServedResources(t *testing.T) {
	t.Parallel()
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}},
			{Name: "serviceaccounts", Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}},
			{Name: "serviceaccounts/token", Verbs: metav1.Verbs{"create"}},
			{Name: "pods/exec", Verbs: metav1.Verbs{"create", "get"}},
			{Name: "nodes/proxy", Verbs: metav1.Verbs{"create", "delete", "get", "patch", "update"}},
			{Name: "bindings", Verbs: metav1.Verbs{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}},
			{Name: "deployments/scale", Verbs: metav1.Verbs{"get", "patch", "update"}},
		}},
		{GroupVersion: "authentication.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "tokenreviews", Verbs: metav1.Verbs{"create"}},
		}},
	}
	got := ServedResources(lists)
	want := []Resource{{Resource: "configmaps"}, {Resource: "serviceaccounts"}, {Group: "apps", Resource: "deployments"}}
	if !slices.Equal(got, want) {
		t.Errorf("ServedResources = %v, want %v", got, want)
	}
}
