package plan

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/dependencies"
	"github.com/fedwarden/fedwarden/internal/planreport"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/render"
)

// planInput is what the plans of every cluster of one resource share.
type planInput struct {
	s       *subject
	placed  placement
	rollout planreport.Rollout
	// Inputs are the controller's sync inputs: the versions it would
	// stamp the copies with, the CPV's entries, and whether a new
	// kubefed.io/resync value makes it write every placed cluster.
	propagation.Inputs
	// joined are the FederatedClusters by name; clusters as listed.
	joined   map[string]*corev1beta1.FederatedCluster
	clusters []corev1beta1.FederatedCluster
	// engine is the rollout engine's decision under strategy Waves; nil
	// under All, or when plan could not run it (rollout.Note says why).
	engine *engine
}

// plan plans the resource s in every cluster: placement, waves, the
// rollout engine's decision, then each cluster's copy.
func (p *planner) plan(ctx context.Context, s *subject) (*planreport.Report, error) {
	joined, err := p.listClusters(ctx)
	if err != nil {
		return nil, err
	}
	pl, err := p.place(ctx, s, joined)
	if err != nil {
		return nil, err
	}
	// What the controller refuses to sync is no plan: it writes nothing.
	if err := s.kind.Type.RefusedRollout(s.spec.Rollout); err != nil {
		return nil, fmt.Errorf("%s: the controller refuses it: %w", s.describe(), err)
	}
	ro, err := planWaves(s.spec.Rollout, pl.Names(), joined)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.describe(), err)
	}
	in := &planInput{s: s, placed: pl, rollout: ro, Inputs: propagation.InputsOf(s.fed, s.spec, s.cpv, pl.Replicas()),
		joined: map[string]*corev1beta1.FederatedCluster{}, clusters: joined}
	names := slices.Clone(pl.Names())
	for i := range joined {
		in.joined[joined[i].Name] = &joined[i]
		names = append(names, joined[i].Name)
	}
	for name := range in.Previous {
		names = append(names, name)
	}
	slices.Sort(names)
	if in.engine, in.rollout.Note, err = p.runEngine(ctx, in); err != nil {
		return nil, err
	}
	if in.engine != nil {
		in.engine.summarize(&in.rollout)
	}
	r := newReport(s, in)
	r.Placement.Down = p.down
	if r.Dependencies, err = p.planDependencies(ctx, s, pl); err != nil {
		return nil, fmt.Errorf("%s: planning its dependencies: %w", s.describe(), err)
	}
	for _, name := range slices.Compact(names) {
		r.Clusters = append(r.Clusters, p.planCluster(ctx, in, name))
	}
	r.Summarize()
	return r, nil
}

// newReport is the report of s before its clusters are planned.
func newReport(s *subject, in *planInput) *planreport.Report {
	r := &planreport.Report{
		Kind: s.kind.Type.Federated.Kind, Namespace: s.fed.GetNamespace(), Name: s.fed.GetName(), Source: "host", New: !s.exists, Waiting: s.waiting,
		Versions: planreport.Versions{Template: string(in.Versions.Template), Override: string(in.Versions.Override)},
		Placement: planreport.Placement{
			Scheduled: in.placed.decision.Failure == nil && !in.placed.deleting, Message: in.placed.message,
			Clusters: nonNil(slices.Clone(in.placed.Names())), RuledOut: []planreport.Verdict{},
		},
		Rollout:  in.rollout,
		Clusters: []planreport.Cluster{},
	}
	if s.fromFile {
		r.Source = "file"
	}
	r.Placement.Failover, _ = in.placed.Failover()
	for _, v := range in.placed.decision.RuledOut {
		r.Placement.RuledOut = append(r.Placement.RuledOut, planreport.Verdict{Cluster: v.Cluster, Plugin: v.Plugin, Reasons: nonNil(v.Reasons)})
	}
	return r
}

// labelsOf returns the labels of the joined cluster name, nil when it is
// not joined.
func (in *planInput) labelsOf(name string) map[string]string {
	if fc := in.joined[name]; fc != nil {
		return fc.Labels
	}
	return nil
}

// planDependencies is what the change of s does to the dependencies its
// pod template names, as the controller's dependencies stage decides:
// before is the host's resource, after the planned one placed on pl, each
// only when it propagates its dependencies.
func (p *planner) planDependencies(ctx context.Context, s *subject, pl placement) ([]planreport.Dependency, error) {
	typ := s.kind.Type
	none := []planreport.Dependency{}
	if !dependencies.HasPodTemplate(typ.Target.GroupKind()) {
		return none, nil
	}
	workload := func(obj *unstructured.Unstructured, clusters []string) (*dependencies.Workload, error) {
		spec, err := render.ParseSpec(obj)
		if err != nil || !spec.PropagateDependencies {
			return nil, err
		}
		w := &dependencies.Workload{Federated: typ.Federated, Target: typ.Target.GroupKind(), Object: obj, Clusters: clusters}
		if spec.DriftPolicy != nil {
			w.Remediation = spec.DriftPolicy.Remediation
		}
		return w, nil
	}
	var before, after *dependencies.Workload
	var err error
	if s.current != nil {
		if before, err = workload(s.current, nil); err != nil {
			return nil, err
		}
	}
	if !pl.deleting {
		if after, err = workload(s.fed, pl.Names()); err != nil {
			return nil, err
		}
	}
	if before == nil && after == nil {
		return none, nil
	}
	changes, err := p.dependencies.Plan(ctx, before, after)
	if err != nil {
		return nil, err
	}
	out := none
	for _, c := range changes {
		out = append(out, planreport.Dependency{Kind: c.Kind, Name: c.Name, State: string(c.State), Optional: c.Optional,
			Adds: nonNil(c.Adds), Removes: nonNil(c.Removes)})
	}
	return out, nil
}
