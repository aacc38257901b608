package memberdiff

import (
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
)

func TestFederatedSpec(t *testing.T) {
	t.Parallel()
	fed := object(t, `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: web, namespace: shop}
spec:
  retainReplicas: true
  driftPolicy:
    remediation: Alert
    ignorePaths: [/spec/replicas]
    ignoreManagers: [kube-controller-manager]
    clusters: [{name: cluster-a, ignorePaths: [/metadata/labels], ignoreManagers: [keda]}]
`)
	policy, retain, err := FederatedSpec(fed)
	if err != nil || !retain || policy == nil {
		t.Fatalf("FederatedSpec: %+v, %v, %v", policy, retain, err)
	}
	if got := drift.PolicyFor(policy, "cluster-a", nil, typesv1beta1.RemediationEnforce); strings.Join(got.IgnorePaths, ",") != "/spec/replicas,/metadata/labels" ||
		strings.Join(got.IgnoreManagers, ",") != "kube-controller-manager,keda" {
		t.Errorf("policy of cluster-a: %+v", got)
	}
	policy, retain, err = FederatedSpec(object(t, "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedDeployment\nmetadata: {name: web}\n"))
	if policy != nil || retain || err != nil {
		t.Errorf("no spec: %+v, %v, %v", policy, retain, err)
	}
}

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}

// desiredYAML is the desired copy of the FederatedDeployment shop/web.
const desiredYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web, kubefed.io/managed: "true"}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        resources: {requests: {cpu: 1000m}}
`

// liveYAML is a member copy of desiredYAML as an API server keeps it
// (defaults, status, its own annotation, cpu normalized), with %s for the
// image and %d for the replicas.
const liveYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  uid: 0b7f0b9e-0000-4000-8000-000000000001
  resourceVersion: "42"
  generation: 2
  labels: {app: web, kubefed.io/managed: "true"}
  annotations:
    deployment.kubernetes.io/revision: "1"
    fedwarden.io/template-version: "1"
    fedwarden.io/override-version: "1"
    fedwarden.io/desired-hash: abc
spec:
  replicas: %d
  progressDeadlineSeconds: 600
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate}
  template:
    metadata: {labels: {app: web}}
    spec:
      restartPolicy: Always
      containers:
      - name: web
        image: %s
        imagePullPolicy: IfNotPresent
        resources: {requests: {cpu: "1"}}
      - name: sidecar
        image: envoy
status: {replicas: 3}
`

// owned are managedFields entries: fedwarden owns what it applies; another
// manager may own the image or the replicas.
func owned(manager string, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(fields)}
}

const (
	imageFields    = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:image":{}}}}}}}`
	replicasFields = `{"f:spec":{"f:replicas":{}}}`
)

// scaled is the managed-fields entry of a write of replicas through the
// scale subresource, as kubectl scale or an HPA makes it.
func scaled(manager string) metav1.ManagedFieldsEntry {
	e := owned(manager, replicasFields)
	e.Subresource = "scale"
	return e
}

func live(t *testing.T, image string, replicas int, managers ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	t.Helper()
	u := object(t, strings.NewReplacer("%s", image, "%d", strconv.Itoa(replicas)).Replace(liveYAML))
	u.SetManagedFields(append([]metav1.ManagedFieldsEntry{owned("fedwarden", `{"f:spec":{"f:replicas":{}}}`)}, managers...))
	return u
}

func TestCompare(t *testing.T) {
	t.Parallel()
	at1 := Versions{Template: "1", Override: "1"}
	tests := []struct {
		name        string
		live        *unstructured.Unstructured
		policy      drift.Policy
		versions    Versions
		wantReasons string
		want        []string // lines of the diff
		notWant     []string
	}{
		{name: "in sync, defaulted and normalized", live: live(t, "nginx:1.25", 3), versions: at1},
		{name: "in sync, versions unknown", live: live(t, "nginx:1.25", 3)},
		{name: "image changed out of band", live: live(t, "nginx:1.26", 3, owned("kubectl-edit", imageFields)), versions: at1,
			wantReasons: "changed /spec/template/spec/containers/0/image (by kubectl-edit)",
			want: []string{
				"--- desired cluster-a/shop/web\n+++ live cluster-a/shop/web\n",
				"\n-      - image: nginx:1.25\n+      - image: nginx:1.26\n",
			},
			notWant: []string{"sidecar", "status", "revision", "desired-hash", "imagePullPolicy", "cpu: \"1\"", "managedFields", "uid"},
		},
		{name: "change in an ignored path", live: live(t, "nginx:1.25", 5, owned("hpa", replicasFields)), versions: at1,
			policy: drift.Policy{IgnorePaths: []string{"/spec/replicas"}}},
		{name: "ignored path hidden from a diff shown for another reason", live: live(t, "nginx:1.26", 5, owned("hpa", replicasFields), owned("kubectl", imageFields)),
			versions: at1, policy: drift.Policy{IgnorePaths: []string{"/spec/replicas"}},
			wantReasons: "changed /spec/template/spec/containers/0/image (by kubectl)",
			want:        []string{"+      - image: nginx:1.26\n"}, notWant: []string{"replicas"},
		},
		{name: "scaled through the scale subresource", live: live(t, "nginx:1.25", 1, scaled("kubectl-scale")), versions: at1,
			wantReasons: "changed /spec/replicas (by kubectl-scale)",
			want:        []string{"-  replicas: 3\n+  replicas: 1\n"},
		},
		{name: "scaled by an ignored manager", live: live(t, "nginx:1.25", 5, scaled("kube-controller-manager")), versions: at1,
			policy: drift.Policy{IgnoreManagers: []string{"kube-controller-manager"}}},
		{name: "an ignored manager's field hidden from a diff shown for another reason", live: live(t, "nginx:1.26", 5, scaled("kube-controller-manager"), owned("kubectl", imageFields)),
			versions: at1, policy: drift.Policy{IgnoreManagers: []string{"kube-controller-manager"}},
			wantReasons: "changed /spec/template/spec/containers/0/image (by kubectl)",
			want:        []string{"+      - image: nginx:1.26\n"}, notWant: []string{"replicas"},
		},
		{name: "outdated template", live: live(t, "nginx:1.25", 3), versions: Versions{Template: "2", Override: "1"},
			wantReasons: "template version 1, the host is at 2",
			want:        []string{"-    fedwarden.io/template-version: \"2\"\n+    fedwarden.io/template-version: \"1\"\n"},
		},
		{name: "missing", versions: at1, wantReasons: "missing",
			want: []string{"--- desired cluster-a/shop/web\n+++ live cluster-a/shop/web\n@@ -1,27 +0,0 @@\n-apiVersion: apps/v1\n", "-    fedwarden.io/template-version: \"1\"\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := Compare(Input{Location: "cluster-a/shop/web", Desired: object(t, desiredYAML), Live: tt.live, Policy: tt.policy, Versions: tt.versions})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(v.Reasons, "; "); got != tt.wantReasons {
				t.Errorf("reasons %q, want %q", got, tt.wantReasons)
			}
			if tt.wantReasons == "" && v.Text != "" {
				t.Errorf("a copy that does not differ has a diff:\n%s", v.Text)
			}
			for _, w := range tt.want {
				if !strings.Contains(v.Text, w) {
					t.Errorf("diff does not hold %q:\n%s", w, v.Text)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(v.Text, w) {
					t.Errorf("diff holds %q:\n%s", w, v.Text)
				}
			}
		})
	}
}

func TestRetainReplicas(t *testing.T) {
	t.Parallel()
	desired := object(t, desiredYAML)
	RetainReplicas(desired, live(t, "nginx:1.25", 7))
	if n, _, _ := unstructured.NestedInt64(desired.Object, "spec", "replicas"); n != 7 {
		t.Errorf("replicas %d, want the member's 7", n)
	}
	RetainReplicas(desired, nil)
}

func TestRemove(t *testing.T) {
	t.Parallel()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte("a: {b/c: 1, d: 2}\nl: [{x: 1}, {x: 2}]\n"), &obj); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/a/b~1c", "/l/0", "/nope/x", "/l/9", "/a/d/deeper"} {
		remove(obj, p)
	}
	data, _ := yaml.Marshal(obj)
	if got, want := string(data), "a:\n  d: 2\nl:\n- x: 2\n"; got != want {
		t.Errorf("after remove:\n%s\nwant:\n%s", got, want)
	}
}
