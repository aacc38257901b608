package helm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/config/admission"
)

// TestChartPolicyFilesAreTheShippedOnes checks that policies/ holds exactly
// the files of config/admission/policies (make generate copies them).
func TestChartPolicyFilesAreTheShippedOnes(t *testing.T) {
	t.Parallel()
	want, err := filepath.Glob(filepath.Join(root, "config", "admission", "policies", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := filepath.Glob(filepath.Join(chart, "policies", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("config/admission/policies holds no policy")
	}
	base := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if !slices.Equal(base(got), base(want)) {
		t.Fatalf("the chart's policies/ holds %v, config/admission/policies %v: run make generate", base(got), base(want))
	}
	for _, path := range want {
		w, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		g, err := os.ReadFile(filepath.Join(chart, "policies", filepath.Base(path)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, w) {
			t.Errorf("policies/%s differs from config/admission/policies: run make generate", filepath.Base(path))
		}
	}
}

// TestChartInstallsTheShippedAdmissionPolicies checks that the chart renders
// every policy and binding of config/admission, as Fedwarden embeds them,
// with the chart's labels; and that the API server accepts each and would
// change nothing of the ones localfed installed from config/admission.
func TestChartInstallsTheShippedAdmissionPolicies(t *testing.T) {
	needHelm(t)
	t.Parallel()
	set, err := admission.Objects()
	if err != nil {
		t.Fatal(err)
	}
	objs := mustRender(t)
	for _, want := range set.Policies {
		var got admissionregistrationv1.ValidatingAdmissionPolicy
		findNamed(t, objs, "ValidatingAdmissionPolicy", want.Name, &got)
		if !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
			t.Errorf("the chart's policy %s differs from config/admission's:\n%+v\nwant\n%+v", want.Name, got.Spec, want.Spec)
		}
		checkChartLabels(t, "policy "+want.Name, got.Labels)
	}
	for _, want := range set.Bindings {
		var got admissionregistrationv1.ValidatingAdmissionPolicyBinding
		findNamed(t, objs, "ValidatingAdmissionPolicyBinding", want.Name, &got)
		if !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
			t.Errorf("the chart's binding %s is %+v, config/admission's %+v", want.Name, got.Spec, want.Spec)
		}
		checkChartLabels(t, "binding "+want.Name, got.Labels)
	}
	c, err := newClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if shipped(set, o) {
			t.Run(describe(o), func(t *testing.T) { checkSameAsInstalled(t, c, o) })
		}
	}
}

// shipped tells whether o is one of set's policies or bindings.
func shipped(set admission.Set, o *unstructured.Unstructured) bool {
	switch o.GetKind() {
	case "ValidatingAdmissionPolicy":
		return slices.ContainsFunc(set.Policies, func(p *admissionregistrationv1.ValidatingAdmissionPolicy) bool { return p.Name == o.GetName() })
	case "ValidatingAdmissionPolicyBinding":
		return slices.ContainsFunc(set.Bindings, func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool { return b.Name == o.GetName() })
	}
	return false
}

func checkChartLabels(t *testing.T, what string, labels map[string]string) {
	t.Helper()
	if labels["app.kubernetes.io/managed-by"] != "Helm" || labels["app.kubernetes.io/part-of"] != "fedwarden" || labels["helm.sh/chart"] == "" {
		t.Errorf("%s has labels %v, want the chart's", what, labels)
	}
}

// checkSameAsInstalled applies a rendered object with server-side dry-run
// over the one localfed installed: the API server (which compiles a
// policy's CEL) must accept it and find nothing to change in its spec.
func checkSameAsInstalled(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	installed := &unstructured.Unstructured{}
	installed.SetGroupVersionKind(obj.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), installed); err != nil {
		t.Fatalf("the chart has %s, which localfed did not install: %v", describe(obj), err)
	}
	got, err := dryRunApply(ctx, c, obj)
	if err != nil {
		t.Fatalf("the API server refuses %s: %v", describe(obj), err)
	}
	if got.GetGeneration() != installed.GetGeneration() || !equality.Semantic.DeepEqual(got.Object["spec"], installed.Object["spec"]) {
		t.Errorf("applying the chart's %s would change the one Fedwarden installs (generation %d -> %d): run make generate",
			describe(obj), installed.GetGeneration(), got.GetGeneration())
	}
}

// TestAdmissionPoliciesSwitch checks that admissionPolicies.enabled=false,
// and an agent-only install, render none of the shipped policies.
func TestAdmissionPoliciesSwitch(t *testing.T) {
	needHelm(t)
	t.Parallel()
	set, err := admission.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--set", "admissionPolicies.enabled=false"},
		{"--set", "controllerManager.enabled=false,agent.enabled=true,agent.clusterName=east"},
	} {
		for _, o := range mustRender(t, args...) {
			if shipped(set, o) {
				t.Errorf("%v renders %s", args, describe(o))
			}
		}
	}
}
