package localfed

import (
	"context"
	"fmt"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/config/admission"
)

// installAdmissionPolicies creates or updates Fedwarden's admission policies
// (config/admission), then their bindings, and waits until the API server
// enforces them: it loads policies a moment after they are written, and a
// test or a user of `fedwarden up` must not get a bad object past them in
// between.
func installAdmissionPolicies(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	set, err := admission.Objects()
	if err != nil {
		return fmt.Errorf("installing admission policies: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("installing admission policies: %w", err)
	}
	if err := installCPVSpecWriter(ctx, client); err != nil {
		return fmt.Errorf("installing admission policies: %w", err)
	}
	api := client.AdmissionregistrationV1()
	for _, p := range set.Policies {
		if err := apply(ctx, api.ValidatingAdmissionPolicies(), p); err != nil {
			return fmt.Errorf("installing admission policy %s: %w", p.Name, err)
		}
	}
	for _, b := range set.Bindings {
		if err := apply(ctx, api.ValidatingAdmissionPolicyBindings(), b); err != nil {
			return fmt.Errorf("installing admission policy binding %s: %w", b.Name, err)
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("installing admission policies: %w", err)
	}
	for _, p := range probes() {
		if err := waitEnforced(ctx, dyn, p, timeout); err != nil {
			return fmt.Errorf("installing admission policies: waiting until %s is enforced: %w", p.policy, err)
		}
	}
	if err := waitCPVSpecEnforced(ctx, cfg, timeout); err != nil {
		return fmt.Errorf("installing admission policies: waiting until %s is enforced: %w", admission.CPVSpecPolicy, err)
	}
	return nil
}

// installCPVSpecWriter grants the ClusterRole admission.CPVSpecWriter to
// the identity the controller-manager runs as here: the admin user, whose
// credentials `fedwarden up` and the test beds give it. The policy
// admission.CPVSpecPolicy takes that binding's subjects as the only
// identity that may write a ClusterPropagatedVersion's spec.
func installCPVSpecWriter(ctx context.Context, client kubernetes.Interface) error {
	rbac := client.RbacV1()
	role := admission.CPVSpecWriterRole()
	if err := apply(ctx, rbac.ClusterRoles(), role); err != nil {
		return fmt.Errorf("installing ClusterRole %s: %w", role.Name, err)
	}
	binding := admission.CPVSpecWriterBinding(rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: adminUser})
	if err := apply(ctx, rbac.ClusterRoleBindings(), binding); err != nil {
		return fmt.Errorf("installing ClusterRoleBinding %s: %w", binding.Name, err)
	}
	return nil
}

// cpvProbeUser is the user the CPV probe impersonates: not the
// controller-manager's identity, but in system:masters, so that RBAC lets
// it through to admission.
const cpvProbeUser = "fedwarden-admission-probe"

// waitCPVSpecEnforced creates a ClusterPropagatedVersion with dryRun, as
// cpvProbeUser, until the API server refuses it with the policy's own
// message: then the policy is loaded with its parameter, and the
// controller-manager's writes are admitted (before, a write may be refused
// for want of the parameter).
func waitCPVSpecEnforced(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	probeCfg := rest.CopyConfig(cfg)
	probeCfg.Impersonate = rest.ImpersonationConfig{UserName: cpvProbeUser, Groups: []string{"system:masters"}}
	dyn, err := dynamic.NewForConfig(probeCfg)
	if err != nil {
		return err
	}
	cpv := &unstructured.Unstructured{}
	cpv.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind("ClusterPropagatedVersion"))
	cpv.SetNamespace(probeNamespace)
	cpv.SetName("fedwarden-admission-probe")
	cpv.Object["spec"] = map[string]any{"template": "probe"}
	api := dyn.Resource(typesv1beta1.GroupVersion.WithResource("clusterpropagatedversions")).Namespace(probeNamespace)
	return waitRefused(ctx, api, cpv, timeout, func(err error) bool { return strings.Contains(err.Error(), cpvProbeUser+" may not") })
}

// probe is an object that policy refuses.
type probe struct {
	policy string
	obj    *unstructured.Unstructured
}

// probeNamespace holds the probes, which are only created with dryRun.
const probeNamespace = metav1.NamespaceDefault

// probes are known-bad FederatedDeployments, for the first and the last
// policy installed (admission.Objects returns them in that order). The API
// server loads policies and bindings from its watches of them, which
// deliver them in the order they were written, and compiles all it has at
// once: when the last policy and binding are enforced, the ones before are
// too. (The FederatedNamespace and FederatedSecret policies, in between,
// cannot be probed here: those kinds exist only once `fedwarden enable`
// ran for them.)
func probes() []probe {
	badSelector := probeObject()
	badSelector.Object["spec"] = map[string]any{"placement": map[string]any{"clusterSelector": map[string]any{
		"matchLabels": map[string]any{"not a label key": "probe"},
	}}}
	longResync := probeObject()
	longResync.SetAnnotations(map[string]string{typesv1beta1.AnnotationResync: strings.Repeat("r", admission.ResyncMaxLength+1)})
	return []probe{
		{policy: admission.ClusterSelectorPolicy, obj: badSelector},
		{policy: admission.ResyncAnnotationPolicy, obj: longResync},
	}
}

func probeObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind("FederatedDeployment"))
	u.SetNamespace(probeNamespace)
	u.SetName("fedwarden-admission-probe")
	return u
}

// waitEnforced creates p's object with dryRun until the API server refuses
// it with p's policy.
func waitEnforced(ctx context.Context, dyn dynamic.Interface, p probe, timeout time.Duration) error {
	api := dyn.Resource(typesv1beta1.GroupVersion.WithResource("federateddeployments")).Namespace(probeNamespace)
	return waitRefused(ctx, api, p.obj, timeout, func(err error) bool {
		return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+p.policy+"'")
	})
}

// waitRefused creates obj in api with dryRun until the API server refuses
// it as refused tells.
func waitRefused(ctx context.Context, api dynamic.ResourceInterface, obj *unstructured.Unstructured, timeout time.Duration, refused func(error) bool) error {
	last := "no answer yet"
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := api.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil:
			last = "the probe was admitted"
		case refused(err):
			return true, nil
		default:
			last = err.Error()
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last answer: %s)", err, last)
	}
	return nil
}
