package localfed

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

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
}
