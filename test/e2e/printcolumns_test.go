package e2e

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// TestKubectlColumns asks the host for tables, as `kubectl get` does, and
// checks the columns and short names users see.
func TestKubectlColumns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		gv        schema.GroupVersion
		resource  string
		namespace string
		columns   []string
	}{
		{schema.GroupVersion{Group: "core.kubefed.io", Version: "v1beta1"}, "federatedclusters", "", []string{"Name", "Ready", "Mode", "Version", "Region", "Age"}},
		{schema.GroupVersion{Group: "types.kubefed.io", Version: "v1beta1"}, "clusterpropagatedversions", "default", []string{"Name", "Template", "Override", "Clusters", "Drifted", "Age"}},
		{schema.GroupVersion{Group: "types.kubefed.io", Version: "v1beta1"}, "federateddeployments", "default", []string{"Name", "Clusters", "Propagated", "Age"}},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			t.Parallel()
			table := getTable(t, tt.gv, tt.namespace, tt.resource)
			var got []string
			for _, c := range table.ColumnDefinitions {
				got = append(got, c.Name)
			}
			if !reflect.DeepEqual(got, tt.columns) {
				t.Errorf("kubectl get %s shows columns %v, want %v", tt.resource, got, tt.columns)
			}
		})
	}
}

func getTable(t *testing.T, gv schema.GroupVersion, namespace, resource string) *metav1.Table {
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
	err = rc.Get().Namespace(namespace).Resource(resource).
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
