package e2e

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// TestKubectlColumns asks the host for tables, as `kubectl get` does, and
// checks the columns users see and the values in them.
func TestKubectlColumns(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	c := hostClient(t)
	ns := testNamespace(t, c)
	enableDeployments(t)
	// A FederatedDeployment propagated for real, as users see it.
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	fd := decode(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: web, namespace: %s}
spec:
  template:
    spec:
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "nginx:1.27"}]}
  placement: {clusters: [{name: %s}, {name: %s}]}
`, ns, m1, m2))
	if err := c.Create(t.Context(), fd); err != nil {
		t.Fatal(err)
	}
	waitForCPV(t, c, ns, "deployment-web", "1", "1", m1, m2)
	poll.Eventually(t, 30*time.Second, "the FederatedDeployment's status", func(ctx context.Context) (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(fd), fd); err != nil {
			return false, err.Error()
		}
		n, _, _ := unstructured.NestedInt64(fd.Object, "status", "clusterCount")
		return n == 2, fmt.Sprint(fd.Object["status"])
	})
	joinedMembers(t)
	tests := []struct {
		gv        schema.GroupVersion
		resource  string
		namespace string
		name      string
		columns   []string
		cells     []string // the row's cells but the age
	}{
		{
			// A member joined by the shared test bed, its status kept by the
			// health controller.
			gv: schema.GroupVersion{Group: "core.kubefed.io", Version: "v1beta1"}, resource: "federatedclusters",
			name: m1,
			// Served-By has priority 1: kubectl shows it with -o wide.
			columns: []string{"Name", "Ready", "Mode", "Version", "Region", "Served-By", "Age"},
			cells:   []string{m1, "True", "Push", "v1.37.2", "region-1", fedtest.ReplicaName},
		},
		{
			gv: schema.GroupVersion{Group: "types.kubefed.io", Version: "v1beta1"}, resource: "clusterpropagatedversions", namespace: ns,
			name:    "deployment-web",
			columns: []string{"Name", "Template", "Override", "Clusters", "Drifted", "Healthy", "Dependency-Of", "Age"},
			// The members have no node: their Deployments' Pods never
			// run, so no copy is Healthy.
			cells: []string{"deployment-web", "1", "1", "2", "0", "0"},
		},
		{
			gv: schema.GroupVersion{Group: "types.kubefed.io", Version: "v1beta1"}, resource: "federateddeployments", namespace: ns,
			name:    "web",
			columns: []string{"Name", "Clusters", "Propagated", "Drifted", "Healthy", "Age"},
			cells:   []string{"web", "2", "True", "0", "0/2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			table := getTable(t, tt.gv, tt.namespace, tt.resource, tt.name)
			var got []string
			for _, col := range table.ColumnDefinitions {
				got = append(got, col.Name)
			}
			if !reflect.DeepEqual(got, tt.columns) {
				t.Errorf("kubectl get %s shows columns %v, want %v", tt.resource, got, tt.columns)
			}
			if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(tt.columns) {
				t.Fatalf("kubectl get %s %s shows rows %v, want one of %d cells", tt.resource, tt.name, table.Rows, len(tt.columns))
			}
			var cells []string
			for _, cell := range table.Rows[0].Cells[:len(tt.cells)] {
				cells = append(cells, fmt.Sprint(cell))
			}
			if !reflect.DeepEqual(cells, tt.cells) {
				t.Errorf("kubectl get %s shows %v, want %v", tt.resource, cells, tt.cells)
			}
		})
	}
}

func getTable(t *testing.T, gv schema.GroupVersion, namespace, resource, name string) *metav1.Table {
	t.Helper()
	cfg := rest.CopyConfig(fed.Host.Config)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.WithoutConversionCodecFactory{CodecFactory: scheme.Codecs}
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	table := &metav1.Table{}
	req := rc.Get().Resource(resource).Name(name)
	if namespace != "" {
		req = req.Namespace(namespace)
	}
	err = req.
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		Do(t.Context()).Into(table)
	if err != nil {
		t.Fatalf("getting %s as a table: %v", resource, err)
	}
	return table
}

// TestShortNames checks the short names through discovery, as kubectl
// resolves `kubectl get cpv`. Discovery is published a moment after a CRD is
// Established, so the test waits for it.
func TestShortNames(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	want := map[string]string{
		"fcl": "federatedclusters", "ftc": "federatedtypeconfigs", "cpv": "clusterpropagatedversions",
		"fdeploy": "federateddeployments", "rsp": "replicaschedulingpreferences",
	}
	dc := discoveryClient(t)
	var got map[string]string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = map[string]string{}
		_, lists, err := dc.ServerGroupsAndResources()
		if err != nil {
			return false, nil
		}
		for _, l := range lists {
			if !strings.Contains(l.GroupVersion, "kubefed.io/") {
				continue
			}
			for _, r := range l.APIResources {
				for _, s := range r.ShortNames {
					got[s] = r.Name
				}
			}
		}
		return reflect.DeepEqual(got, want), nil
	})
	if err != nil {
		t.Errorf("short names in discovery: %v, want %v", got, want)
	}
}
