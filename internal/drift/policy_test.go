package drift

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

func TestPolicyFor(t *testing.T) {
	t.Parallel()
	p := &typesv1beta1.DriftPolicy{
		Remediation:    typesv1beta1.RemediationAlert,
		IgnorePaths:    []typesv1beta1.JSONPointer{"/spec/replicas"},
		IgnoreManagers: []typesv1beta1.FieldManager{"kube-controller-manager"},
		Clusters: []typesv1beta1.ClusterDriftPolicy{
			{Name: "prod", Remediation: typesv1beta1.RemediationEnforce, IgnorePaths: []typesv1beta1.JSONPointer{"/metadata/annotations"}, IgnoreManagers: []typesv1beta1.FieldManager{"keda"}},
		},
	}
	tests := []struct {
		name    string
		policy  *typesv1beta1.DriftPolicy
		cluster string
		def     typesv1beta1.Remediation
		want    Policy
	}{
		{"no policy: the default", nil, "a", typesv1beta1.RemediationEnforce, Policy{Remediation: typesv1beta1.RemediationEnforce}},
		{"the resource's", p, "dev", typesv1beta1.RemediationEnforce, Policy{Remediation: typesv1beta1.RemediationAlert, IgnorePaths: []string{"/spec/replicas"}, IgnoreManagers: []string{"kube-controller-manager"}}},
		{"the cluster's exception", p, "prod", typesv1beta1.RemediationAlert, Policy{Remediation: typesv1beta1.RemediationEnforce, IgnorePaths: []string{"/spec/replicas", "/metadata/annotations"}, IgnoreManagers: []string{"kube-controller-manager", "keda"}}},
	}
	for _, tt := range tests {
		got := PolicyFor(tt.policy, tt.cluster, nil, tt.def)
		if got.Remediation != tt.want.Remediation || !slices.Equal(got.IgnorePaths, tt.want.IgnorePaths) || !slices.Equal(got.IgnoreManagers, tt.want.IgnoreManagers) {
			t.Errorf("%s: PolicyFor = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestIgnored(t *testing.T) {
	t.Parallel()
	p := Policy{IgnorePaths: []string{"/spec/replicas", "/metadata/annotations/"}}
	for pointer, want := range map[string]bool{
		"/spec/replicas":                   true,
		"/spec/replicasCount":              false,
		"/metadata/annotations/a~1b":       true,
		"/metadata/annotations":            false,
		"/spec/template/spec/containers/0": false,
	} {
		if got := p.Ignored(pointer); got != want {
			t.Errorf("Ignored(%q) = %v, want %v", pointer, got, want)
		}
	}
	changes := []Change{{Path: "/spec/replicas", Manager: "hpa"}, {Path: "/spec/template/spec/containers/0/image", Manager: "kubectl-edit"}, {Path: "/metadata/labels/app"}}
	paths, managers := Paths(p.Filter(changes))
	if !slices.Equal(paths, []string{"/spec/template/spec/containers/0/image", "/metadata/labels/app"}) || !slices.Equal(managers, []string{"kubectl-edit"}) {
		t.Errorf("Paths(Filter) = %v, %v", paths, managers)
	}
	p.IgnoreManagers = []string{"kubectl-edit"}
	if paths, _ := Paths(p.Filter(changes)); !slices.Equal(paths, []string{"/metadata/labels/app"}) {
		t.Errorf("Paths(Filter) ignoring kubectl-edit = %v, want only the removed label", paths)
	}
}

// TestHidden checks what a diff leaves out: the fields an ignored manager
// or path covers, not another manager's.
func TestHidden(t *testing.T) {
	t.Parallel()
	live := object(t, liveYAML, entry("fedwarden", "", ownedByFedwarden), entry("kube-controller-manager", "scale", replicasByHPA), entry("kubectl-edit", "", imageByKubectlEdit))
	scaleTo(2)(live)
	c, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	c[0].(map[string]any)["image"] = "nginx:1.28"
	_ = unstructured.SetNestedSlice(live.Object, c, "spec", "template", "spec", "containers")
	tests := []struct {
		name   string
		policy Policy
		want   []string
	}{
		{"no policy", Policy{}, nil},
		{"an ignored manager", Policy{IgnoreManagers: []string{"kube-controller-manager"}}, []string{"/spec/replicas"}},
		{"an ignored path", Policy{IgnorePaths: []string{"/spec/template"}}, []string{"/spec/template/spec/containers/0/image"}},
	}
	for _, tt := range tests {
		got, err := tt.policy.Hidden(object(t, desiredYAML), live, "fedwarden")
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: Hidden = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

// TestDetectBound checks that the bound applies to the changes the policy
// keeps: ignored ones do not crowd out the others.
func TestDetectBound(t *testing.T) {
	t.Parallel()
	desired := object(t, desiredYAML)
	live := object(t, liveYAML, entry("fedwarden", "", ownedByFedwarden))
	annotations := map[string]string{}
	for i := range MaxPaths + 5 {
		annotations[fmt.Sprintf("a%02d", i)] = "x"
	}
	desired.SetAnnotations(annotations)
	unstructured.RemoveNestedField(live.Object, "spec", "template", "spec", "containers") // sorts after /metadata/annotations
	p := Policy{IgnorePaths: []string{"/metadata/annotations"}}
	got, err := p.Detect(desired, live, "fedwarden")
	if err != nil || len(got) != 1 || got[0].Path != "/spec/template/spec/containers" {
		t.Errorf("Detect = %+v, %v; want only the removed containers", got, err)
	}
	if all, _ := Detect(desired, live, "fedwarden"); len(all) != MaxPaths {
		t.Errorf("Detect without a policy found %d changes, want the bound %d", len(all), MaxPaths)
	}
}

// TestOperations checks that each manager and operation is listed once, in
// the order of the changes, with the paths it changed, and that a removed
// field is nobody's.
func TestOperations(t *testing.T) {
	t.Parallel()
	apply := metav1.ManagedFieldsOperationApply
	changes := []Change{
		{Path: "/metadata/labels/app"},
		{Path: "/spec/replicas", Manager: "kubectl", Operation: update},
		{Path: "/spec/template/spec/containers/0/image", Manager: "kubectl", Operation: apply},
		{Path: "/spec/template/spec/containers/0/name", Manager: "kubectl", Operation: update},
		{Path: "/spec/paused", Manager: "kube-controller-manager", Operation: update},
	}
	want := []typesv1beta1.ManagerOperation{
		{Manager: "kubectl", Operation: update, Paths: []string{"/spec/replicas", "/spec/template/spec/containers/0/name"}},
		{Manager: "kubectl", Operation: apply, Paths: []string{"/spec/template/spec/containers/0/image"}},
		{Manager: "kube-controller-manager", Operation: update, Paths: []string{"/spec/paused"}},
	}
	if got := Operations(changes); !reflect.DeepEqual(got, want) {
		t.Errorf("Operations = %+v, want %+v", got, want)
	}
	if got := Operations([]Change{{Path: "/metadata/labels/app"}}); got != nil {
		t.Errorf("Operations of a removed field = %+v, want none", got)
	}
}
