package plan

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/render"
	"github.com/fedwarden/fedwarden/internal/scheduler"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
	"github.com/fedwarden/fedwarden/internal/scheduler/plugins/clusteraffinity"
)

// maxExplanation bounds the placement message, as the Scheduled
// condition's.
const maxExplanation = 2048

// placement is where the scheduler puts the resource.
type placement struct {
	// names are the placed clusters, sorted; replicas those of the
	// clusters whose replicas the scheduler divides.
	names    []string
	replicas map[string]int32
	decision framework.Decision
	// message says it as the Scheduled condition would.
	message string
	// deleting: the resource is being deleted; it is placed nowhere.
	deleting bool
}

// place runs the scheduler as the controller does: on the joined
// clusters, from the decision and copies the CPV records, within what the
// resource's namespace allows. When no decision can be made, the resource
// stays where it is.
func (p *planner) place(ctx context.Context, s *subject, clusters []corev1beta1.FederatedCluster) (placement, error) {
	if !s.fed.GetDeletionTimestamp().IsZero() {
		return placement{deleting: true, replicas: map[string]int32{}, message: "not scheduled: the resource is being deleted; its copies are deleted from every cluster"}, nil
	}
	restriction, err := p.namespaceRestriction(ctx, s, clusters)
	if err != nil {
		return placement{}, err
	}
	rsp, err := p.preference(ctx, s)
	if err != nil {
		return placement{}, err
	}
	var held []string
	for _, cv := range s.cpv.Status.ClusterVersions {
		held = append(held, string(cv.ClusterName))
	}
	d := p.scheduler.Schedule(scheduler.Input{
		Federated: s.fed, Placement: s.spec.Placement, Clusters: clusters, Preference: rsp,
		Previous: s.cpv.Spec.Clusters, Holding: held, Spread: s.cpv.Spec.Spread, Restriction: restriction,
	})
	pl := placement{decision: d, replicas: map[string]int32{}, message: d.Explain(maxExplanation)}
	if d.Failure == nil {
		for _, c := range d.Clusters {
			pl.names = append(pl.names, c.Name)
			if c.Replicas != nil {
				pl.replicas[c.Name] = *c.Replicas
			}
		}
		return pl, nil
	}
	// Keep the last decision, and every joined cluster that holds a copy.
	for _, pc := range s.cpv.Spec.Clusters {
		pl.names = append(pl.names, string(pc.Name))
		if pc.Replicas != nil {
			pl.replicas[string(pc.Name)] = *pc.Replicas
		}
	}
	for _, name := range held {
		if !slices.Contains(pl.names, name) && slices.ContainsFunc(clusters, func(fc corev1beta1.FederatedCluster) bool { return fc.Name == name }) {
			pl.names = append(pl.names, name)
		}
	}
	slices.Sort(pl.names)
	if len(pl.names) > 0 {
		pl.message += "; the resource stays on " + join(pl.names)
	}
	return pl, nil
}

// preference returns the ReplicaSchedulingPreference of the resource:
// same namespace and name, targeting its kind.
func (p *planner) preference(ctx context.Context, s *subject) (*schedulingv1alpha1.ReplicaSchedulingPreference, error) {
	if !s.kind.Type.FederatedNamespaced {
		return nil, nil
	}
	rsp := &schedulingv1alpha1.ReplicaSchedulingPreference{}
	err := p.host.Get(ctx, client.ObjectKeyFromObject(s.fed), rsp)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading ReplicaSchedulingPreference %s: %w", client.ObjectKeyFromObject(s.fed), err)
	case rsp.Spec.TargetKind != s.kind.Type.Federated.Kind:
		return nil, nil
	}
	return rsp, nil
}

// namespaceRestriction keeps a namespaced resource to the clusters its
// namespace is federated to, when namespaces are federated, as the
// controller does (propagation's namespaceRestriction, which is not
// exported): a FederatedNamespace's placement is intent; no
// FederatedNamespace, or one whose placement cannot be read, is state.
func (p *planner) namespaceRestriction(ctx context.Context, s *subject, clusters []corev1beta1.FederatedCluster) (*scheduler.Restriction, error) {
	gvk, federated := p.namespaceKind()
	if !s.kind.Type.TargetNamespaced || !federated {
		return nil, nil
	}
	namespace := s.fed.GetNamespace()
	fns := &unstructured.Unstructured{}
	fns.SetGroupVersionKind(gvk)
	err := p.host.Get(ctx, client.ObjectKey{Namespace: namespace, Name: namespace}, fns)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return &scheduler.Restriction{Plugin: gvk.Kind, Reason: "namespace " + namespace + " is not federated"}, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s: %w", gvk.Kind, namespace, err)
	}
	nsPlaced, err := namespacePlacement(fns, clusters)
	if err != nil {
		return &scheduler.Restriction{Plugin: gvk.Kind, Reason: fmt.Sprintf("the placement of %s %s cannot be read: %v", gvk.Kind, namespace, err)}, nil
	}
	return &scheduler.Restriction{Plugin: gvk.Kind, Clusters: nsPlaced, Reason: "namespace " + namespace + " is not federated to it", Intent: true}, nil
}

// namespaceKind returns the kind of FederatedNamespaces when namespaces
// are federated: a FederatedTypeConfig of Namespaces enables propagation
// (the first by name, as the controller takes it).
func (p *planner) namespaceKind() (schema.GroupVersionKind, bool) {
	var found *propagation.Type
	name := ""
	for i := range p.configs {
		ftc := &p.configs[i]
		typ := propagation.TypeFromConfig(ftc)
		if !typ.IsNamespace() || ftc.Spec.Propagation == corev1beta1.Disabled || !ftc.DeletionTimestamp.IsZero() {
			continue
		}
		if found == nil || ftc.Name < name {
			found, name = &typ, ftc.Name
		}
	}
	if found == nil {
		return schema.GroupVersionKind{}, false
	}
	return found.Federated, true
}

// namespacePlacement returns the clusters a FederatedNamespace is placed
// on, as ClusterAffinity reads its placement.
func namespacePlacement(fns *unstructured.Unstructured, clusters []corev1beta1.FederatedCluster) ([]string, error) {
	spec, err := render.ParseSpec(fns)
	if err != nil {
		return nil, err
	}
	pl := spec.Placement
	if pl.Clusters == nil && pl.ClusterSelector == nil {
		return nil, nil
	}
	labelsOf := map[string]map[string]string{}
	for _, c := range clusters {
		labelsOf[c.Name] = c.Labels
	}
	candidates := slices.Collect(maps.Keys(labelsOf))
	for _, c := range pl.Clusters {
		candidates = append(candidates, string(c.Name))
	}
	var names []string
	for _, name := range candidates {
		ok, _, err := clusteraffinity.Selects(pl, name, labelsOf[name])
		if err != nil {
			return nil, err
		}
		if ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// listClusters returns the joined clusters.
func (p *planner) listClusters(ctx context.Context) ([]corev1beta1.FederatedCluster, error) {
	var list corev1beta1.FederatedClusterList
	if err := p.host.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing FederatedClusters: %w", err)
	}
	return list.Items, nil
}

// ruledOut returns what the decision says of a cluster it does not place
// the resource on: the plugins' verdicts, or that it was not chosen.
func (pl placement) ruledOut(cluster string) string {
	if pl.deleting {
		return "the resource is being deleted"
	}
	var reasons []string
	for _, v := range pl.decision.RuledOut {
		if v.Cluster == cluster {
			reasons = append(reasons, v.Plugin+": "+joinReasons(v.Reasons))
		}
	}
	if len(reasons) == 0 {
		if pl.decision.Failure != nil {
			return "no decision could be made: " + pl.decision.Failure.String()
		}
		return "not chosen by the scheduler"
	}
	return joinWith(reasons, "; ")
}

// keptReason returns why a plugin would have dropped a cluster that keeps
// its copy, or "".
func (pl placement) keptReason(cluster string) string {
	for _, v := range pl.decision.Kept {
		if v.Cluster == cluster {
			return "kept, as it holds a copy, despite " + v.Plugin + ": " + joinReasons(v.Reasons)
		}
	}
	return ""
}

// placedCluster is a placed cluster with its replicas, as the CPV records
// it.
func (pl placement) placedCluster(name string) typesv1beta1.PlacedCluster {
	pc := typesv1beta1.PlacedCluster{Name: typesv1beta1.ClusterName(name)}
	if n, ok := pl.replicas[name]; ok {
		pc.Replicas = &n
	}
	return pc
}
