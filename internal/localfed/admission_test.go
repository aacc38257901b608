package localfed

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/config/admission"
)

// checkAdmissionPolicies checks that the host has every policy and binding
// of config/admission as shipped, and enforces them as soon as Start has
// returned: a bad selector is refused at once.
func checkAdmissionPolicies(t *testing.T, host *Cluster) {
	ctx := context.Background()
	set, err := admission.Objects()
	if err != nil {
		t.Fatal(err)
	}
	api := mustClient(t, host).AdmissionregistrationV1()
	for _, want := range set.Policies {
		got, err := api.ValidatingAdmissionPolicies().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("policy %s: %v", want.Name, err)
		} else if !equality.Semantic.DeepEqual(got.Spec.Validations, want.Spec.Validations) {
			t.Errorf("policy %s differs from config/admission", want.Name)
		}
	}
	for _, want := range set.Bindings {
		if _, err := api.ValidatingAdmissionPolicyBindings().Get(ctx, want.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("binding %s: %v", want.Name, err)
		}
	}
	dyn, err := dynamic.NewForConfig(host.Config)
	if err != nil {
		t.Fatal(err)
	}
	bad := probes()[0]
	bad.obj.SetName("bad-selector-right-after-start")
	_, err = dyn.Resource(typesv1beta1.GroupVersion.WithResource("federateddeployments")).Namespace(probeNamespace).
		Create(ctx, bad.obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), admission.ClusterSelectorPolicy) {
		t.Errorf("a FederatedDeployment with a bad selector, right after Start: %v, want a refusal by %s", err, admission.ClusterSelectorPolicy)
	}
	checkCPVSpecWriter(ctx, t, host)
}

// checkCPVSpecWriter checks that, as soon as Start has returned, the admin
// user (whom the controller-manager runs as) may create a CPV, and another
// user may not, even in system:masters.
func checkCPVSpecWriter(ctx context.Context, t *testing.T, host *Cluster) {
	t.Helper()
	cpv := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": "FederatedDeployment/web"}}}
	cpv.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind("ClusterPropagatedVersion"))
	cpv.SetNamespace(probeNamespace)
	cpv.SetName("deployment-web")
	create := func(cfg *rest.Config) error {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = dyn.Resource(typesv1beta1.GroupVersion.WithResource("clusterpropagatedversions")).Namespace(probeNamespace).
			Create(ctx, cpv, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	if err := create(host.Config); err != nil {
		t.Errorf("the admin user creating a CPV, right after Start: %v", err)
	}
	other := rest.CopyConfig(host.Config)
	other.Impersonate = rest.ImpersonationConfig{UserName: "someone-else", Groups: []string{"system:masters"}}
	if err := create(other); err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+admission.CPVSpecPolicy+"'") {
		t.Errorf("another user creating a CPV, right after Start: %v, want a refusal by %s", err, admission.CPVSpecPolicy)
	}
}
