package memberdiff

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

// Resource is a federated resource to compare, and what the host says of
// it.
type Resource struct {
	// Type is its federated type.
	Type propagation.Type
	// Fed is the federated resource.
	Fed *unstructured.Unstructured
	// CPV is its ClusterPropagatedVersion.
	CPV *typesv1beta1.ClusterPropagatedVersion
	// Policy is its spec.driftPolicy.
	Policy *typesv1beta1.DriftPolicy
	// RetainReplicas is its spec.retainReplicas: the member's replicas are
	// kept.
	RetainReplicas bool
}

// NewResource returns the resource fed of type typ, tracked by cpv, with
// the drift policy and retainReplicas of its spec.
func NewResource(typ propagation.Type, fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion) (*Resource, error) {
	policy, retain, err := FederatedSpec(fed)
	if err != nil {
		return nil, err
	}
	return &Resource{Type: typ, Fed: fed, CPV: cpv, Policy: policy, RetainReplicas: retain}, nil
}

// FederatedSpec reads the drift policy and retainReplicas of a federated
// resource's spec.
func FederatedSpec(fed *unstructured.Unstructured) (*typesv1beta1.DriftPolicy, bool, error) {
	retain, _, err := unstructured.NestedBool(fed.Object, "spec", "retainReplicas")
	if err != nil {
		return nil, false, fmt.Errorf("reading spec.retainReplicas: %w", err)
	}
	raw, found, err := unstructured.NestedMap(fed.Object, "spec", "driftPolicy")
	if err != nil || !found {
		return nil, retain, err
	}
	policy := &typesv1beta1.DriftPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, policy); err != nil {
		return nil, false, fmt.Errorf("reading spec.driftPolicy: %w", err)
	}
	return policy, retain, nil
}

// Options say how to compare a copy.
type Options struct {
	// Members reaches the member clusters.
	Members *Members
	// Host reads the FederatedClusters and credentials, with the caller's
	// identity.
	Host client.Reader
	// Timeout of the read of the member's copy.
	Timeout time.Duration
	// ShowSecrets shows a Secret's values rather than redacting them.
	ShowSecrets bool
}

// Copy compares r's copy in the placed cluster pc: it renders the desired
// copy as the controller does, reads the live one from the member, and
// compares them. A Pull cluster gives an error wrapping ErrPullCluster.
func Copy(ctx context.Context, o Options, r *Resource, pc typesv1beta1.PlacedCluster) (Verdict, error) {
	name := string(pc.Name)
	desired, live, err := Live(ctx, o, r, pc)
	if err != nil {
		return Verdict{}, err
	}
	if r.RetainReplicas {
		RetainReplicas(desired, live)
	}
	policy, err := policyFor(ctx, o.Host, r.Policy, name)
	if err != nil {
		return Verdict{}, err
	}
	return Compare(Input{
		Location: name + "/" + cache.NewObjectName(desired.GetNamespace(), desired.GetName()).String(),
		Desired:  desired,
		Live:     live,
		Policy:   policy,
		Versions: Versions{Template: string(r.CPV.Status.TemplateVersion), Override: string(r.CPV.Status.OverrideVersion)},
		Redact:   IsSecret(r.Type.Target) && !o.ShowSecrets,
	})
}

// Live renders r's copy for the placed cluster pc as the controller does,
// and reads the copy the member holds: nil when it has none. A Pull
// cluster gives an error wrapping ErrPullCluster.
func Live(ctx context.Context, o Options, r *Resource, pc typesv1beta1.PlacedCluster) (desired, live *unstructured.Unstructured, err error) {
	desired, err = propagation.Desired(r.Type, r.Fed, string(pc.Name), pc.Replicas)
	if err != nil {
		return nil, nil, fmt.Errorf("rendering its copy: %w", err)
	}
	live, err = readLive(ctx, o, r, string(pc.Name), desired)
	return desired, live, err
}

// readLive reads desired's object from the member: nil when it has none.
func readLive(ctx context.Context, o Options, r *Resource, cluster string, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	member, err := o.Members.Get(ctx, o.Host, cluster)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	res := member.Dynamic.Resource(r.Type.TargetResource)
	var got *unstructured.Unstructured
	if r.Type.TargetNamespaced {
		got, err = res.Namespace(desired.GetNamespace()).Get(ctx, desired.GetName(), metav1.GetOptions{})
	} else {
		got, err = res.Get(ctx, desired.GetName(), metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s in cluster %s: %w", r.Type.Target.Kind, cache.NewObjectName(desired.GetNamespace(), desired.GetName()).String(), cluster, err)
	}
	return got, nil
}

// policyFor is the drift policy p in cluster name, as the controller
// resolves it: a waiver's clusterSelector is judged on the labels of the
// cluster's FederatedCluster, read from host only when one selects so.
func policyFor(ctx context.Context, host client.Reader, p *typesv1beta1.DriftPolicy, name string) (drift.Policy, error) {
	var clusterLabels map[string]string
	if drift.SelectsByLabel(p) {
		fc := &corev1beta1.FederatedCluster{}
		if err := host.Get(ctx, client.ObjectKey{Name: name}, fc); err != nil {
			return drift.Policy{}, fmt.Errorf("reading FederatedCluster %s, whose labels a waiver's clusterSelector selects on: %w", name, err)
		}
		clusterLabels = fc.Labels
	}
	policy := drift.PolicyFor(p, name, clusterLabels, typesv1beta1.RemediationEnforce)
	return policy, policy.Invalid
}
