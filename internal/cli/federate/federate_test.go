package federate

import (
	"bytes"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/internal/clitest"
)

// writeKubeconfig writes a kubeconfig with the contexts host, and
// team (namespace team-a), pointing to a server never contacted.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	kc := clitest.UnreachableConfig()
	kc.Contexts["team"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "host", Namespace: "team-a"}
	return clitest.WriteKubeconfig(t, kc)
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := writeKubeconfig(t)
	base := []string{"configmap", "web", "--host-kubeconfig", kc}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "one argument", args: []string{"configmap", "--all-clusters"}, wantErr: "two arguments, the kind and the object's name; got 1"},
		{name: "no placement", args: base, wantErr: "exactly one of --clusters, --cluster-selector and --all-clusters"},
		{name: "two placements", args: append([]string{"--clusters", "a", "--all-clusters"}, base...), wantErr: "exactly one of"},
		{name: "bad cluster name", args: append([]string{"--clusters", "Cluster_1"}, base...), wantErr: `cluster name "Cluster_1" is not valid`},
		{name: "cluster twice", args: append([]string{"--clusters", "a,a"}, base...), wantErr: `cluster "a" is given twice`},
		{name: "bad selector", args: append([]string{"--cluster-selector", "env=a b"}, base...), wantErr: `value "a b" of label "env" is not valid`},
		{name: "selector syntax", args: append([]string{"--cluster-selector", "env"}, base...), wantErr: "env"},
		{name: "bad output", args: append([]string{"--all-clusters", "-o", "xml"}, base...), wantErr: `--output "xml" is not supported`},
		{name: "missing context", args: append([]string{"--all-clusters", "--host-context", "nope"}, base...), wantErr: `context "nope" (--host-context)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, tt.args...)
		})
	}
}

// object decodes a YAML manifest.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		object string
		want   string // the template, as JSON
	}{
		{
			name: "server-set metadata, status, kind and apiVersion are left out",
			object: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  namespace: test
  uid: 6c3c4c2e-1
  resourceVersion: "42"
  generation: 3
  creationTimestamp: "2024-01-01T00:00:00Z"
  selfLink: /api/v1/namespaces/test/configmaps/web
  managedFields: [{manager: kubectl}]
  ownerReferences: [{apiVersion: v1, kind: Pod, name: p, uid: u}]
  finalizers: [example.com/f]
  labels: {app: web}
  annotations:
    note: kept
    kubectl.kubernetes.io/last-applied-configuration: "{}"
data: {index.html: hello}
status: {}`,
			want: `{"data":{"index.html":"hello"},"metadata":{"annotations":{"note":"kept"},"labels":{"app":"web"}}}`,
		},
		{
			name:   "no labels nor annotations: no metadata",
			object: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, annotations: {kubectl.kubernetes.io/last-applied-configuration: x}}\ntype: Opaque\n",
			want:   `{"type":"Opaque"}`,
		},
		{
			name: "a Deployment's revision annotation is the controller's",
			object: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, annotations: {deployment.kubernetes.io/revision: "2"}}
spec: {replicas: 2}`,
			want: `{"spec":{"replicas":2}}`,
		},
		{
			name: "a Service's allocated cluster IPs are the host's",
			object: `
apiVersion: v1
kind: Service
metadata: {name: s}
spec: {clusterIP: 10.0.0.7, clusterIPs: [10.0.0.7], ports: [{port: 80}], type: ClusterIP}`,
			want: `{"spec":{"ports":[{"port":80}],"type":"ClusterIP"}}`,
		},
		{
			name:   "a headless Service stays headless",
			object: "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {clusterIP: None, clusterIPs: [None]}\n",
			want:   `{"spec":{"clusterIP":"None","clusterIPs":["None"]}}`,
		},
		{
			name: "a Job's generated selector is the host's",
			object: `
apiVersion: batch/v1
kind: Job
metadata: {name: j, labels: {app: batch}}
spec:
  selector: {matchLabels: {batch.kubernetes.io/controller-uid: abc}}
  template:
    metadata:
      labels: {app: batch, controller-uid: abc, job-name: j, batch.kubernetes.io/controller-uid: abc, batch.kubernetes.io/job-name: j}
    spec: {restartPolicy: Never}`,
			want: `{"metadata":{"labels":{"app":"batch"}},"spec":{"template":{"metadata":{"labels":{"app":"batch"}},"spec":{"restartPolicy":"Never"}}}}`,
		},
		{
			name: "a Job's manual selector is kept",
			object: `
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  manualSelector: true
  selector: {matchLabels: {app: busybox}}
  template: {metadata: {labels: {app: busybox}}}`,
			want: `{"spec":{"manualSelector":true,"selector":{"matchLabels":{"app":"busybox"}},"template":{"metadata":{"labels":{"app":"busybox"}}}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obj := object(t, tt.object)
			original := obj.DeepCopy()
			got, err := json.Marshal(template(obj))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("template\n%s\nwant\n%s", got, tt.want)
			}
			if !equal(obj, original) {
				t.Error("template changed the object")
			}
		})
	}
}

func equal(a, b *unstructured.Unstructured) bool {
	x, _ := json.Marshal(a.Object)
	y, _ := json.Marshal(b.Object)
	return bytes.Equal(x, y)
}

func TestBuild(t *testing.T) {
	t.Parallel()
	gvk := schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedConfigMap"}
	obj := object(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: test}\ndata: {a: b}\n")
	tests := []struct {
		name      string
		clusters  []string
		selector  map[string]string
		all       bool
		placement string
	}{
		{name: "clusters", clusters: []string{"cluster2", "cluster1"}, placement: `{"clusters":[{"name":"cluster2"},{"name":"cluster1"}]}`},
		{name: "selector", selector: map[string]string{"env": "prod"}, placement: `{"clusterSelector":{"matchLabels":{"env":"prod"}}}`},
		{name: "every cluster", all: true, placement: `{"clusterSelector":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := federatedResource{gvk: gvk, name: "web", namespace: "test", object: obj, placement: newPlacement(tt.clusters, tt.selector, tt.all)}
			got, err := json.Marshal(r.build().Object)
			if err != nil {
				t.Fatal(err)
			}
			want := `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedConfigMap","metadata":{"name":"web","namespace":"test"},` +
				`"spec":{"placement":` + tt.placement + `,"template":{"data":{"a":"b"}}}}`
			if string(got) != want {
				t.Errorf("built\n%s\nwant\n%s", got, want)
			}
		})
	}
}
