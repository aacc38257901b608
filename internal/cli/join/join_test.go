package join

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/version"
	"github.com/fedwarden/fedwarden/internal/clitest"
)

// userToken is the kubeconfig user's token: it must never be printed.
const userToken = "kubeconfig-user-token-do-not-print"

// writeKubeconfig writes a kubeconfig with the contexts host, member (https,
// with a CA), plain (http), insecure and servername, and returns its path
// and the member's CA.
func writeKubeconfig(t *testing.T) (path string, ca []byte) {
	t.Helper()
	ca = selfSignedCA(t)
	kc := clientcmdapi.NewConfig()
	clusters := map[string]*clientcmdapi.Cluster{
		"host":       {Server: "https://127.0.0.1:6443", CertificateAuthorityData: ca},
		"member":     {Server: "https://10.0.0.2:6443", CertificateAuthorityData: ca},
		"plain":      {Server: "http://10.0.0.3:8080"},
		"insecure":   {Server: "https://10.0.0.4:6443", InsecureSkipTLSVerify: true},
		"servername": {Server: "https://10.0.0.5:6443", CertificateAuthorityData: ca, TLSServerName: "api.example.com"},
	}
	for name, c := range clusters {
		kc.Clusters[name] = c
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: userToken}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	kc.CurrentContext = "host"
	return clitest.WriteKubeconfig(t, kc), ca
}

func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc, _ := writeKubeconfig(t)
	base := []string{"--host-kubeconfig", kc, "--cluster-kubeconfig", kc, "--cluster-context", "member", "--dry-run"}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no name", args: base, wantErr: "one argument, the cluster name; got 0"},
		{name: "two names", args: append([]string{"a", "b"}, base...), wantErr: "got 2"},
		{name: "unknown flag", args: append([]string{"a", "--frobnicate"}, base...), wantErr: "unknown flag: --frobnicate"},
		{name: "bad label syntax", args: append([]string{"a", "--label", "novalue"}, base...), wantErr: "novalue"},
		{name: "bad timeout", args: append([]string{"a", "--timeout", "soon"}, base...), wantErr: "soon"},
		{name: "zero timeout", args: append([]string{"a", "--timeout", "0s"}, base...), wantErr: "--timeout 0s must be positive"},
		{name: "pull without agent kubeconfig", args: []string{"a", "--sync-mode", "Pull", "--host-kubeconfig", kc, "--cluster-kubeconfig", kc, "--cluster-context", "member"},
			wantErr: "--sync-mode Pull needs --agent-kubeconfig FILE"},
		{name: "pull with empty image", args: append([]string{"a", "--sync-mode", "Pull", "--agent-image", ""}, base...), wantErr: "--agent-image must not be empty"},
		{name: "pull with insecure host", args: []string{"a", "--sync-mode", "Pull", "--agent-kubeconfig", "x", "--host-kubeconfig", kc, "--host-context", "insecure",
			"--cluster-kubeconfig", kc, "--cluster-context", "member"}, wantErr: "the agent of a Pull cluster verifies the host's certificate"},
		{name: "agent kubeconfig with push", args: append([]string{"a", "--agent-kubeconfig", "x"}, base...), wantErr: "--agent-kubeconfig is only for --sync-mode Pull"},
		{name: "agent image with push", args: append([]string{"a", "--sync-mode", "Push", "--agent-image", "x"}, base...), wantErr: "--agent-image is only for --sync-mode Pull"},
		{name: "agent host server with push", args: append([]string{"a", "--agent-host-server", "https://h"}, base...), wantErr: "--agent-host-server is only for --sync-mode Pull"},
		{name: "http agent host server", args: append([]string{"a", "--sync-mode", "Pull", "--agent-host-server", "http://h:6443"}, base...),
			wantErr: `--agent-host-server "http://h:6443" is not an https:// URL`},
		{name: "print agent manifest with push", args: append([]string{"a", "--print-agent-manifest"}, base...), wantErr: "--print-agent-manifest is only for --sync-mode Pull"},
		{name: "unknown mode", args: append([]string{"a", "--sync-mode", "Both"}, base...), wantErr: `sync mode "Both" is not valid`},
		{name: "output without dry run", args: []string{"a", "--host-kubeconfig", kc, "--cluster-kubeconfig", kc, "-o", "json"}, wantErr: "needs --dry-run"},
		{name: "bad output", args: append([]string{"a", "-o", "xml"}, base...), wantErr: `--output "xml" is not supported`},
		{name: "bad resource", args: append([]string{"a", "--resources", "Deployments"}, base...), wantErr: `--resources: resource "Deployments" is not valid`},
		{name: "bad name", args: append([]string{"Member_1"}, base...), wantErr: `cluster name "Member_1" is not valid`},
		{name: "bad region", args: append([]string{"a", "--region", "us east"}, base...), wantErr: `region "us east"`},
		{name: "bad zone", args: append([]string{"a", "--zone", "a,a"}, base...), wantErr: `zone "a" is given twice`},
		{name: "reserved label", args: append([]string{"a", "--label", "fedwarden.io/cluster=b"}, base...), wantErr: `label "fedwarden.io/cluster" cannot be given`},
		{name: "missing kubeconfig", args: []string{"a", "--cluster-kubeconfig", filepath.Join(t.TempDir(), "none"), "--host-kubeconfig", kc},
			wantErr: "(--cluster-kubeconfig)"},
		{name: "missing context", args: []string{"a", "--cluster-kubeconfig", kc, "--cluster-context", "nope", "--host-kubeconfig", kc},
			wantErr: `context "nope" (--cluster-context) is not in kubeconfig`},
		{name: "missing host context", args: []string{"a", "--cluster-kubeconfig", kc, "--host-kubeconfig", kc, "--host-context", "nope"},
			wantErr: `context "nope" (--host-context)`},
		{name: "http member", args: []string{"a", "--cluster-kubeconfig", kc, "--cluster-context", "plain", "--host-kubeconfig", kc},
			wantErr: "needs an https:// server and a kubeconfig with certificate-authority-data"},
		{name: "insecure member", args: []string{"a", "--cluster-kubeconfig", kc, "--cluster-context", "insecure", "--host-kubeconfig", kc},
			wantErr: "sets insecure-skip-tls-verify: Fedwarden verifies the member's certificate"},
		{name: "member with tls-server-name", args: []string{"a", "--cluster-kubeconfig", kc, "--cluster-context", "servername", "--host-kubeconfig", kc},
			wantErr: "sets tls-server-name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, tt.args...)
		})
	}
}

// object is what the dry-run tests check of each printed object.
type object struct{ apiVersion, kind, namespace, name string }

var wantObjects = []object{
	{"v1", "Namespace", "", "kube-federation-system"},
	{"v1", "ServiceAccount", "kube-federation-system", "fedwarden-east"},
	{"v1", "Secret", "kube-federation-system", "fedwarden-east-token"},
	{"rbac.authorization.k8s.io/v1", "ClusterRole", "", "fedwarden:member:east"},
	{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "fedwarden:member:east"},
	{"v1", "Namespace", "", "kube-federation-system"},
	{"v1", "Secret", "kube-federation-system", "fedwarden-east-credentials"},
	{"core.kubefed.io/v1beta1", "FederatedCluster", "", "east"},
}

func TestDryRun(t *testing.T) {
	t.Parallel()
	kc, ca := writeKubeconfig(t)
	tests := []struct {
		name   string
		output []string
		decode func(t *testing.T, out string) []*unstructured.Unstructured
	}{
		{name: "yaml by default", decode: decodeYAML},
		{name: "yaml", output: []string{"-o", "yaml"}, decode: decodeYAML},
		{name: "json list", output: []string{"--output", "json"}, decode: decodeJSONList},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"east", "--dry-run", "--host-kubeconfig", kc, "--cluster-kubeconfig", kc, "--cluster-context", "member",
				"--region", "us-east-1", "--zone", "us-east-1a", "--label", "env=prod"}, tt.output...)
			stdout, stderr, code := clitest.Execute(NewCommand, args...)
			if code != 0 {
				t.Fatalf("exit code %d: %s", code, stderr)
			}
			if strings.Contains(stdout+stderr, userToken) {
				t.Fatal("the output holds the kubeconfig's token")
			}
			objs := tt.decode(t, stdout)
			var got []object
			for _, u := range objs {
				got = append(got, object{u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()})
			}
			if !slices.Equal(got, wantObjects) {
				t.Fatalf("printed objects\n%v\nwant\n%v", got, wantObjects)
			}
			checkHostObjects(t, objs[6], objs[7], ca)
		})
	}
}

// checkHostObjects checks the printed credentials Secret and FederatedCluster.
func checkHostObjects(t *testing.T, secret, cluster *unstructured.Unstructured, ca []byte) {
	t.Helper()
	if _, found := secret.Object["data"]; found {
		t.Error("the host Secret has data in a dry run")
	}
	token, _, _ := unstructured.NestedString(secret.Object, "stringData", "token")
	if !strings.Contains(token, "<token of ServiceAccount kube-federation-system/fedwarden-east") {
		t.Errorf("token placeholder = %q", token)
	}
	spec, _, _ := unstructured.NestedStringMap(cluster.Object, "spec", "secretRef")
	if spec["name"] != "fedwarden-east-credentials" {
		t.Errorf("secretRef = %v", spec)
	}
	endpoint, _, _ := unstructured.NestedString(cluster.Object, "spec", "apiEndpoint")
	bundle, _, _ := unstructured.NestedString(cluster.Object, "spec", "caBundle")
	mode, _, _ := unstructured.NestedString(cluster.Object, "spec", "syncMode")
	if endpoint != "https://10.0.0.2:6443" || mode != "Push" || bundle == "" {
		t.Errorf("spec = %v", cluster.Object["spec"])
	}
	if want := map[string]string{"fedwarden.io/cluster": "east", "app.kubernetes.io/managed-by": "fedwarden", "env": "prod",
		"topology.kubernetes.io/region": "us-east-1", "topology.kubernetes.io/zone": "us-east-1a"}; !maps.Equal(cluster.GetLabels(), want) {
		t.Errorf("labels = %v, want %v", cluster.GetLabels(), want)
	}
	if _, found := cluster.Object["status"]; found {
		t.Error("the FederatedCluster has a status")
	}
	if want := base64.StdEncoding.EncodeToString(ca); bundle != want {
		t.Errorf("caBundle = %q, want the kubeconfig's CA %q", bundle, want)
	}
}

func decodeYAML(t *testing.T, out string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for doc := range strings.SplitSeq(out, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("document %q: %v", doc, err)
		}
		objs = append(objs, u)
	}
	return objs
}

func decodeJSONList(t *testing.T, out string) []*unstructured.Unstructured {
	t.Helper()
	var list struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Items      []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if list.APIVersion != "v1" || list.Kind != "List" {
		t.Fatalf("output is a %s %s, want a v1 List", list.APIVersion, list.Kind)
	}
	var objs []*unstructured.Unstructured
	for _, item := range list.Items {
		objs = append(objs, &unstructured.Unstructured{Object: item})
	}
	return objs
}

func TestPropagateRBAC(t *testing.T) {
	t.Parallel()
	kc, _ := writeKubeconfig(t)
	tests := []struct {
		name string
		args []string
		want bool
	}{
		{name: "not granted by default"},
		{name: "granted with --propagate-rbac", args: []string{"--propagate-rbac"}, want: true},
		{name: "granted with a resource list", args: []string{"--propagate-rbac", "--resources", "clusterroles.rbac.authorization.k8s.io"}, want: true},
		{name: "not granted with --propagate-rbac=false", args: []string{"--propagate-rbac=false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"east", "--dry-run", "--host-kubeconfig", kc, "--cluster-kubeconfig", kc, "--cluster-context", "member"}, tt.args...)
			stdout, stderr, code := clitest.Execute(NewCommand, args...)
			if code != 0 {
				t.Fatalf("exit code %d: %s", code, stderr)
			}
			role := decodeYAML(t, stdout)[3]
			if role.GetKind() != "ClusterRole" {
				t.Fatalf("fourth object is a %s", role.GetKind())
			}
			rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
			granted := false
			for _, r := range rules {
				rule := r.(map[string]any)
				verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
				resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
				if slices.Equal(verbs, []string{"bind", "escalate"}) && slices.Equal(resources, []string{"roles", "clusterroles"}) {
					granted = true
				}
			}
			if granted != tt.want {
				t.Errorf("bind and escalate granted: %v, want %v; rules %v", granted, tt.want, rules)
			}
		})
	}
}

// wantPullObjects are the objects a dry run of a Pull join prints: the
// host's, then the member's.
var wantPullObjects = []object{
	{"v1", "Namespace", "", "kube-federation-system"},
	{"v1", "ServiceAccount", "kube-federation-system", "fedwarden-agent-east"},
	{"v1", "Secret", "kube-federation-system", "fedwarden-agent-east-token"},
	{"rbac.authorization.k8s.io/v1", "ClusterRole", "", "fedwarden:agent"},
	{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "fedwarden:agent:east"},
	{"rbac.authorization.k8s.io/v1", "ClusterRole", "", "fedwarden:agent:east:own-cluster"},
	{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "fedwarden:agent:east:own-cluster"},
	{"rbac.authorization.k8s.io/v1", "Role", "kube-federation-system", "fedwarden:agent:east"},
	{"rbac.authorization.k8s.io/v1", "RoleBinding", "kube-federation-system", "fedwarden:agent:east"},
	{"coordination.k8s.io/v1", "Lease", "kube-federation-system", "fedwarden-agent-east"},
	{"admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", "fedwarden-agent-isolation"},
	{"admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "", "fedwarden-agent-isolation"},
	{"core.kubefed.io/v1beta1", "FederatedCluster", "", "east"},
	{"v1", "Namespace", "", "kube-federation-system"},
	{"v1", "ServiceAccount", "kube-federation-system", "fedwarden-agent"},
	{"rbac.authorization.k8s.io/v1", "ClusterRole", "", "fedwarden-agent"},
	{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "fedwarden-agent"},
	{"v1", "Secret", "kube-federation-system", "fedwarden-agent-host"},
	{"apps/v1", "Deployment", "kube-federation-system", "fedwarden-agent"},
}

func TestDryRunPull(t *testing.T) {
	t.Parallel()
	kc, _ := writeKubeconfig(t)
	agentKubeconfig := filepath.Join(t.TempDir(), "agent.kubeconfig")
	tests := []struct {
		name      string
		args      []string
		wantImage string
	}{
		{name: "default image", wantImage: "ghcr.io/fedwarden/fedwarden:" + version.Version},
		{name: "given image", args: []string{"--agent-image", "registry.example/fedwarden:v9"}, wantImage: "registry.example/fedwarden:v9"},
		{name: "with a kubeconfig file", args: []string{"--agent-kubeconfig", agentKubeconfig},
			wantImage: "ghcr.io/fedwarden/fedwarden:" + version.Version},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"east", "--sync-mode", "Pull", "--dry-run", "--host-kubeconfig", kc, "--cluster-kubeconfig", kc,
				"--cluster-context", "member", "--resources", "configmaps"}, tt.args...)
			stdout, stderr, code := clitest.Execute(NewCommand, args...)
			if code != 0 {
				t.Fatalf("exit code %d: %s", code, stderr)
			}
			if strings.Contains(stdout+stderr, userToken) {
				t.Fatal("the output holds the kubeconfig's token")
			}
			objs := decodeYAML(t, stdout)
			var got []object
			for _, u := range objs {
				got = append(got, object{u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()})
			}
			if !slices.Equal(got, wantPullObjects) {
				t.Fatalf("printed objects\n%v\nwant\n%v", got, wantPullObjects)
			}
			cluster, secret, deployment := objs[12], objs[17], objs[18]
			if _, found, _ := unstructured.NestedFieldNoCopy(cluster.Object, "spec", "secretRef"); found {
				t.Error("the Pull FederatedCluster has a secretRef")
			}
			if mode, _, _ := unstructured.NestedString(cluster.Object, "spec", "syncMode"); mode != "Pull" {
				t.Errorf("syncMode = %q", mode)
			}
			if _, found := secret.Object["data"]; found {
				t.Error("the member Secret has data in a dry run")
			}
			containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
			if image := containers[0].(map[string]any)["image"]; image != tt.wantImage {
				t.Errorf("image %v, want %s", image, tt.wantImage)
			}
			if _, err := os.Stat(agentKubeconfig); !os.IsNotExist(err) {
				t.Error("a dry run wrote a file")
			}
		})
	}
}

func TestJoinedAs(t *testing.T) {
	withID := func(name, id string) v1beta1.FederatedCluster {
		c := v1beta1.FederatedCluster{}
		c.Name, c.Status.ClusterID = name, id
		return c
	}
	leaving := withID("leaving", "uid-2")
	leaving.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	clusters := []v1beta1.FederatedCluster{withID("first", "uid-1"), withID("unprobed", ""), leaving}
	tests := []struct{ name, id, want string }{
		{"second", "uid-1", "first"}, // a second name of a joined cluster
		{"first", "uid-1", ""},       // joining again under its own name
		{"second", "uid-9", ""},      // another cluster
		{"second", "", ""},           // the ID could not be read: nothing to compare
		{"second", "uid-2", ""},      // the other name is being unjoined
	}
	for _, tt := range tests {
		if got := joinedAs(clusters, tt.name, tt.id); got != tt.want {
			t.Errorf("joinedAs(%s, %q) = %q, want %q", tt.name, tt.id, got, tt.want)
		}
	}
}
