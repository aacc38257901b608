package migrate

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/internal/scheme"
)

// rejoinInventory has two clusters and a federated RBAC kind.
func rejoinInventory() *Inventory {
	return &Inventory{
		Namespace:     "kube-federation-system",
		LeaseDuration: "15s",
		Clusters: []Cluster{
			{Name: "east", APIEndpoint: "https://10.0.0.1", SecretName: "east-token", SecretKeys: []string{"token"}},
			{Name: "west", APIEndpoint: "10.0.0.2:6443", SecretName: "west-token", SecretKeys: []string{"token"}},
		},
		Types: []Type{{Name: "clusterroles.rbac.authorization.k8s.io", FederatedCRD: "federatedclusterroles.types.kubefed.io", Propagation: "Enabled",
			spec: typeSpec{targetGroup: "rbac.authorization.k8s.io", targetVersion: "v1", targetKind: "ClusterRole", targetPlural: "clusterroles", targetScope: "Cluster",
				fedGroup: "types.kubefed.io", fedVersion: "v1beta1", fedKind: "FederatedClusterRole", fedPlural: "federatedclusterroles", fedScope: "Cluster"}}},
		crds: map[string]*apiextensionsv1.CustomResourceDefinition{
			"federatedclusterroles.types.kubefed.io": {Spec: apiextensionsv1.CustomResourceDefinitionSpec{Scope: apiextensionsv1.ClusterScoped}},
		},
	}
}

func steps(p *Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.Action+" "+s.Object)
	}
	return out
}

func notes(p *Plan) string {
	var out []string
	for _, n := range p.Notes {
		out = append(out, n.String())
	}
	return strings.Join(out, "\n")
}

func TestPlanKeepsKubeFedIdentityAndSaysWhy(t *testing.T) {
	t.Parallel()
	p := NewPlan(rejoinInventory(), Options{DefaultRemediation: typesv1beta1.RemediationAlert})
	got := steps(p)
	for _, want := range []string{"annotate Secret kube-federation-system/east-token", "create FederatedCluster east"} {
		if !slices.Contains(got, want) {
			t.Errorf("steps %q lack %q", got, want)
		}
	}
	for _, s := range got {
		if strings.Contains(s, "in member") || strings.Contains(s, "credentials") {
			t.Errorf("a plan without --rejoin has step %q", s)
		}
	}
	n := notes(p)
	for _, want := range []string{"KubeFed's is kept", "as much as cluster-admin", "--rejoin"} {
		if !strings.Contains(n, want) {
			t.Errorf("notes %q do not say %q", n, want)
		}
	}
	if p.Rejoin {
		t.Error("plan.Rejoin is set")
	}
}

func TestPlanRejoin(t *testing.T) {
	t.Parallel()
	p := NewPlan(rejoinInventory(), Options{DefaultRemediation: typesv1beta1.RemediationAlert, Rejoin: true,
		MemberKubeconfig: "members.kubeconfig", MemberContexts: []string{"west", "other"}})
	if len(p.Blockers) > 0 {
		t.Fatalf("blockers %v", p.Blockers)
	}
	if !p.Rejoin {
		t.Error("plan.Rejoin is not set")
	}
	got := steps(p)
	// The members' identities come first: a member that refuses stops the
	// migration before anything changes on the host.
	if len(got) < 3 || got[0] != "create Fedwarden's identity in member east" || got[1] != "create Fedwarden's identity in member west" || !strings.HasPrefix(got[2], "save ") {
		t.Fatalf("steps %q: want the identities of east and west first, then the save", got)
	}
	names := "Namespace kube-federation-system, ServiceAccount kube-federation-system/fedwarden-east, " +
		"Secret kube-federation-system/fedwarden-east-token, ClusterRole fedwarden:member:east, ClusterRoleBinding fedwarden:member:east, as `fedwarden join` creates them"
	if !strings.HasPrefix(p.Steps[0].Detail, names) {
		t.Errorf("east's identity: %q, want it to start with %q", p.Steps[0].Detail, names)
	}
	if !strings.Contains(p.Steps[0].Detail, "KubeFed's identity (the token of Secret kube-federation-system/east-token)") {
		t.Errorf("east's identity is not created through KubeFed's token: %s", p.Steps[0].Detail)
	}
	if !strings.Contains(p.Steps[1].Detail, "context west of members.kubeconfig") || !strings.Contains(p.Steps[1].Detail, "https://10.0.0.2:6443") {
		t.Errorf("west's identity is not created through its context, at its endpoint: %s", p.Steps[1].Detail)
	}
	for _, want := range []string{"create Secret kube-federation-system/fedwarden-east-credentials", "create FederatedCluster east",
		"create Secret kube-federation-system/fedwarden-west-credentials", "create FederatedCluster west"} {
		if !slices.Contains(got, want) {
			t.Errorf("steps %q lack %q", got, want)
		}
	}
	for _, s := range got {
		if strings.HasPrefix(s, "annotate ") {
			t.Errorf("a re-join changes KubeFed's Secret: %q", s)
		}
	}
	n := notes(p)
	for _, want := range []string{"left as they are, so that --rollback gives KubeFed back a working identity", "not with `kubefedctl unjoin`",
		"--rollback leaves Fedwarden's identity in the members", "FederatedTypeConfig clusterroles.rbac.authorization.k8s.io", "--propagate-rbac"} {
		if !strings.Contains(n, want) {
			t.Errorf("notes %q do not say %q", n, want)
		}
	}
	for _, m := range p.clusters {
		if m.rejoin.spec.Validate() != nil || m.rejoin.spec.Namespace != "kube-federation-system" {
			t.Errorf("cluster %s: spec %+v", m.cluster.Name, m.rejoin.spec)
		}
	}

	p = NewPlan(rejoinInventory(), Options{Rejoin: true, Resources: []registration.Resource{{Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}}})
	if !strings.Contains(p.Steps[0].Detail, "delete on configmaps, deployments.apps (--resources), no subresources") || len(p.clusters[0].rejoin.spec.Resources) != 2 {
		t.Errorf("with --resources, east's identity: %s", p.Steps[0].Detail)
	}

	p = NewPlan(rejoinInventory(), Options{Rejoin: true, PropagateRBAC: true})
	if strings.Contains(notes(p), "FederatedTypeConfig clusterroles") {
		t.Errorf("with --propagate-rbac, the notes still warn about RBAC: %s", notes(p))
	}
	if !strings.Contains(p.Steps[0].Detail, "--propagate-rbac") || !p.clusters[0].rejoin.spec.PropagateRBAC {
		t.Errorf("with --propagate-rbac, east's identity: %s", p.Steps[0].Detail)
	}
}

func TestPlanRejoinBlocksAnInvalidSpec(t *testing.T) {
	t.Parallel()
	inv := rejoinInventory()
	inv.Namespace = "Not_A_Namespace"
	p := NewPlan(inv, Options{Rejoin: true})
	if len(p.Blockers) != 2 || !strings.Contains(p.Blockers[0].Reason, "--rejoin: namespace") {
		t.Errorf("blockers %v, want one per cluster about the namespace", p.Blockers)
	}
}

func TestMemberConfig(t *testing.T) {
	t.Parallel()
	creds := &rest.Config{
		Host:            "https://elsewhere:6443",
		APIPath:         "/api",
		BearerToken:     "t",
		TLSClientConfig: rest.TLSClientConfig{Insecure: true, ServerName: "other", CAFile: "/ca.pem", CertData: []byte("cert"), KeyData: []byte("key")},
	}
	got := memberConfig(creds, "https://10.0.0.1:6443", []byte("ca"))
	if got.Host != "https://10.0.0.1:6443" || got.APIPath != "" || string(got.CAData) != "ca" || got.CAFile != "" || got.Insecure || got.ServerName != "" {
		t.Errorf("memberConfig does not reach the member at its endpoint, verified with its CA: %+v", got.TLSClientConfig)
	}
	if got.BearerToken != "t" || string(got.CertData) != "cert" || string(got.KeyData) != "key" {
		t.Error("memberConfig drops the credentials")
	}
	if creds.Host != "https://elsewhere:6443" || !creds.Insecure {
		t.Error("memberConfig changed its argument")
	}
}

// Fedwarden's identity is created in each member through KubeFed's token,
// or a context of the member kubeconfig, reaching the member at its
// endpoint verified with its CA; the tokens are not printed.
func TestCreateIdentities(t *testing.T) {
	t.Parallel()
	const ns = "kube-federation-system"
	kubefedToken, fedwardenToken := "kubefed-secret-token", "fedwarden-secret-token"
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "east-token"}, Data: map[string][]byte{"token": []byte(kubefedToken)}},
	).Build()
	inv := rejoinInventory()
	testCA := string(selfSignedCA(t))
	inv.Clusters[0].CABundle = []byte(testCA)
	p := NewPlan(inv, Options{Rejoin: true, MemberKubeconfig: "members", MemberContexts: []string{"west"}})
	if len(p.Blockers) > 0 {
		t.Fatalf("blockers %v", p.Blockers)
	}
	var out bytes.Buffer
	reached := map[string]*rest.Config{}
	h := &Host{
		NewClient: func() (client.Client, error) { return c, nil },
		Out:       &out,
		Rejoin: &Rejoiner{
			MemberConfig: func(context string) (*rest.Config, error) {
				return &rest.Config{Host: "https://wrong", Username: "admin-of-" + context, Password: "p"}, nil
			},
			CreateIdentity: func(_ context.Context, cfg *rest.Config, spec registration.Spec) ([]byte, error) {
				reached[spec.Name] = cfg
				return []byte(fedwardenToken + "-" + spec.Name), nil
			},
		},
	}
	tokens, err := h.createIdentities(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if string(tokens["east"]) != fedwardenToken+"-east" || string(tokens["west"]) != fedwardenToken+"-west" {
		t.Errorf("tokens of %d clusters", len(tokens))
	}
	east, west := reached["east"], reached["west"]
	if east == nil || east.Host != "https://10.0.0.1" || east.BearerToken != kubefedToken || string(east.CAData) != testCA {
		t.Errorf("east was not reached with KubeFed's token at its endpoint, verified with its CA: %+v", east)
	}
	if west == nil || west.Host != "https://10.0.0.2:6443" || west.Username != "admin-of-west" || west.BearerToken != "" {
		t.Errorf("west was not reached with its context's credentials at its endpoint: %+v", west)
	}
	for _, secret := range []string{kubefedToken, fedwardenToken} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("the progress shows a token:\n%s", out.String())
		}
	}

	h.Rejoin.CreateIdentity = func(context.Context, *rest.Config, registration.Spec) ([]byte, error) {
		return nil, context.DeadlineExceeded
	}
	if _, err := h.createIdentities(t.Context(), p); err == nil || !strings.Contains(err.Error(), "nothing was changed on the host") {
		t.Errorf("a member that fails: %v", err)
	}
}

// selfSignedCA returns the PEM of a self-signed CA certificate.
func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// A re-joined cluster's FederatedCluster uses a credentials Secret holding
// Fedwarden's token, bound and owned as `fedwarden join` makes it;
// KubeFed's Secret is not touched.
func TestCreateRejoinedClusters(t *testing.T) {
	t.Parallel()
	const ns = "kube-federation-system"
	s := scheme.New()
	kubefedSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "east-token"}, Data: map[string][]byte{"token": []byte("k")}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(kubefedSecret.DeepCopy()).Build()
	inv := rejoinInventory()
	ca := selfSignedCA(t)
	inv.Clusters[0].CABundle = ca
	p := NewPlan(inv, Options{Rejoin: true})
	var out bytes.Buffer
	h := &Host{NewClient: func() (client.Client, error) { return c, nil }, Out: &out}
	tokens := map[string][]byte{"east": []byte("tok-3f9a-east"), "west": []byte("tok-3f9a-west")}
	before := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "east-token"}, before); err != nil {
		t.Fatal(err)
	}
	if err := h.createClusters(t.Context(), p, tokens); err != nil {
		t.Fatal(err)
	}
	fc := &corev1beta1.FederatedCluster{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "east"}, fc); err != nil {
		t.Fatal(err)
	}
	if fc.Spec.SecretRef == nil || fc.Spec.SecretRef.Name != "fedwarden-east-credentials" || fc.Labels[LabelMigratedFrom] != "kubefed" {
		t.Errorf("FederatedCluster east: %+v %v", fc.Spec.SecretRef, fc.Labels)
	}
	secret := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "fedwarden-east-credentials"}, secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["token"]) != "tok-3f9a-east" || !bytes.Equal(secret.Data["ca.crt"], ca) {
		t.Errorf("Secret fedwarden-east-credentials holds keys %v", slices.Sorted(maps.Keys(secret.Data)))
	}
	if !maps.Equal(secret.Annotations, registration.CredentialsBinding("east", "https://10.0.0.1", ca)) {
		t.Errorf("Secret fedwarden-east-credentials is not bound as join binds it: %v", secret.Annotations)
	}
	if refs := secret.OwnerReferences; len(refs) != 1 || refs[0].Kind != "FederatedCluster" || refs[0].Name != "east" {
		t.Errorf("Secret fedwarden-east-credentials owners %v", refs)
	}
	kept := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "east-token"}, kept); err != nil {
		t.Fatal(err)
	}
	if len(kept.Annotations) > 0 || kept.ResourceVersion != before.ResourceVersion {
		t.Errorf("KubeFed's Secret was changed: resourceVersion %s, annotations %v", kept.ResourceVersion, kept.Annotations)
	}
	if strings.Contains(out.String(), "tok-3f9a") {
		t.Errorf("the progress shows a token:\n%s", out.String())
	}
}
