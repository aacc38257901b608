package federatedtype

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// fakeDiscovery serves a few resources, core first, as a host does.
func fakeDiscovery() *fake.FakeDiscovery {
	return &fake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", SingularName: "configmap", Kind: "ConfigMap", Namespaced: true, ShortNames: []string{"cm"}, Verbs: allVerbs},
			{Name: "events", SingularName: "event", Kind: "Event", Namespaced: true, ShortNames: []string{"ev"}, Verbs: allVerbs},
			{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", ShortNames: []string{"ns"}, Verbs: allVerbs},
			{Name: "namespaces/status", SingularName: "namespace", Kind: "Namespace", Verbs: []string{"get"}},
			{Name: "bindings", SingularName: "binding", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true, ShortNames: []string{"deploy"}, Verbs: allVerbs},
		}},
		{GroupVersion: "autoscaling/v2", APIResources: []metav1.APIResource{
			{Name: "horizontalpodautoscalers", SingularName: "horizontalpodautoscaler", Kind: "HorizontalPodAutoscaler", Namespaced: true, ShortNames: []string{"hpa"}, Verbs: allVerbs},
		}},
		{GroupVersion: "autoscaling/v1", APIResources: []metav1.APIResource{
			{Name: "horizontalpodautoscalers", SingularName: "horizontalpodautoscaler", Kind: "HorizontalPodAutoscaler", Namespaced: true, ShortNames: []string{"hpa"}, Verbs: allVerbs},
		}},
		{GroupVersion: "events.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "events", SingularName: "event", Kind: "Event", Namespaced: true, ShortNames: []string{"ev"}, Verbs: allVerbs},
		}},
		{GroupVersion: "types.kubefed.io/v1beta1", APIResources: []metav1.APIResource{
			{Name: "federateddeployments", SingularName: "federateddeployment", Kind: "FederatedDeployment", Namespaced: true, ShortNames: []string{"fdeploy"}, Verbs: allVerbs},
		}},
	}}}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	hpa := func(v string) Target {
		return Target{Group: "autoscaling", Version: v, Kind: "HorizontalPodAutoscaler", Plural: "horizontalpodautoscalers", Namespaced: true}
	}
	events := Target{Version: "v1", Kind: "Event", Plural: "events", Namespaced: true}
	tests := []struct {
		name    string
		arg     string
		version string
		want    Target
		wantErr string
	}{
		{name: "plural", arg: "configmaps", want: configmaps},
		{name: "singular", arg: "configmap", want: configmaps},
		{name: "short name", arg: "cm", want: configmaps},
		{name: "kind, any case", arg: "ConfigMap", want: configmaps},
		{name: "upper case", arg: "CONFIGMAPS", want: configmaps},
		{name: "resource.group", arg: "deployments.apps", want: deployments},
		{name: "kind.group", arg: "Deployment.apps", want: deployments},
		{name: "short name.group", arg: "deploy.apps", want: deployments},
		{name: "resource.version.group", arg: "hpa.v1.autoscaling", want: hpa("v1")},
		{name: "preferred version", arg: "hpa", want: hpa("v2")},
		{name: "version asked", arg: "horizontalpodautoscalers.autoscaling", version: "v1", want: hpa("v1")},
		{name: "core group first", arg: "events", want: events},
		{name: "other group by name", arg: "events.events.k8s.io", want: Target{Group: "events.k8s.io", Version: "v1", Kind: "Event", Plural: "events", Namespaced: true}},
		{name: "cluster scoped", arg: "ns", want: namespaces},
		{name: "unknown, with near matches", arg: "deploymnets", wantErr: `unknown resource "deploymnets": the host serves no such resource; did you mean deployments.apps?`},
		{name: "unknown, a part of names", arg: "config", wantErr: "did you mean configmaps?"},
		{name: "unknown, nothing near", arg: "zzzzzz", wantErr: `unknown resource "zzzzzz": the host serves no such resource`},
		{name: "wrong group", arg: "deployments.extensions", wantErr: "the host serves no such resource; did you mean deployments.apps?"},
		{name: "version not served", arg: "deployments.apps", version: "v1beta2", wantErr: "deployments.apps is not served at version v1beta2 (versions: v1)"},
		{name: "subresource", arg: "namespaces/status", wantErr: "unknown resource"},
		{name: "fedwarden kind", arg: "fdeploy", wantErr: "federateddeployments.types.kubefed.io is a Fedwarden kind, which is not federated"},
		{name: "verbs missing", arg: "bindings", wantErr: `bindings cannot be federated: the host does not allow "get" on it (it allows create)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Resolve(context.Background(), fakeDiscovery(), tt.arg, tt.version)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrUnknownResource) {
					t.Fatalf("error %v, want ErrUnknownResource holding %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Resolve(%q) = %+v, want %+v", tt.arg, got, tt.want)
			}
		})
	}
}
