package drift

import (
	"slices"
	"testing"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

func TestPolicyFor(t *testing.T) {
	t.Parallel()
	p := &typesv1beta1.DriftPolicy{
		Remediation: typesv1beta1.RemediationAlert,
		IgnorePaths: []typesv1beta1.JSONPointer{"/spec/replicas"},
		Clusters: []typesv1beta1.ClusterDriftPolicy{
			{Name: "prod", Remediation: typesv1beta1.RemediationEnforce, IgnorePaths: []typesv1beta1.JSONPointer{"/metadata/annotations"}},
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
		{"the resource's", p, "dev", typesv1beta1.RemediationEnforce, Policy{Remediation: typesv1beta1.RemediationAlert, IgnorePaths: []string{"/spec/replicas"}}},
		{"the cluster's exception", p, "prod", typesv1beta1.RemediationAlert, Policy{Remediation: typesv1beta1.RemediationEnforce, IgnorePaths: []string{"/spec/replicas", "/metadata/annotations"}}},
	}
	for _, tt := range tests {
		got := PolicyFor(tt.policy, tt.cluster, tt.def)
		if got.Remediation != tt.want.Remediation || !slices.Equal(got.IgnorePaths, tt.want.IgnorePaths) {
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
}
