package plan

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/render"
)

// pullNoDryRun says why a Pull cluster has no dry run.
const pullNoDryRun = "a Pull cluster: the host keeps no credentials for it, so no dry run; its agent applies the change, and the member's admission answers then"

// planCluster plans the resource in one cluster: placed, it is rendered
// and compared with the live copy; no longer placed, its copy is deleted.
func (p *planner) planCluster(ctx context.Context, in *planInput, name string) Cluster {
	c := Cluster{Name: name}
	if !slices.Contains(in.placed.names, name) {
		if _, recorded := in.Previous[name]; recorded {
			p.planRemoval(ctx, in, &c)
		} else {
			c.Action, c.Reason = ActionNotPlaced, in.placed.ruledOut(name)
		}
		return c
	}
	c.Placed = true
	pc := in.placed.placedCluster(name)
	c.Replicas = pc.Replicas
	c.Wave, c.WaveNumber = in.rollout.waveOf(name)
	desired, err := render.For(renderTarget(in), in.s.fed, in.s.spec, name, pc.Replicas)
	if err != nil {
		c.Action, c.Error = ActionUnknown, fmt.Sprintf("rendering its copy: %v", err)
		return c
	}
	sc := propagation.ScrubberOf(in.s.kind.Type, in.s.fed)
	propagation.Seen(sc, desired)
	c.Rendered = rendered(in, name, desired)
	fc := in.joined[name]
	switch {
	case fc == nil:
		c.Action, c.Reason = ActionUnknown, fmt.Sprintf("cluster %s is not joined: there is no FederatedCluster of that name", name)
	case fc.Spec.SyncMode == corev1beta1.SyncModePull:
		planPull(in, &c, desired, p.remediation)
	default:
		p.planPush(ctx, in, &c, desired, sc)
	}
	if note := in.placed.decision.WhyKept(name); note != "" {
		c.Reason += "; " + note
	}
	if fc != nil && c.Action.writes() && !meta.IsStatusConditionTrue(fc.Status.Conditions, corev1beta1.ClusterReady) {
		c.Reason += "; the cluster is not Ready: the controller writes once it is"
	}
	scrubCluster(sc, &c)
	return c
}

// planPush plans a placed Push cluster: reads its copy, decides as the
// controller would, and dry-runs the write in the member.
func (p *planner) planPush(ctx context.Context, in *planInput, c *Cluster, desired *unstructured.Unstructured, sc *scrub.Scrubber) {
	member, live, err := p.readLive(ctx, in, c.Name, desired)
	if err != nil {
		c.Action, c.Error = ActionUnknown, err.Error()
		return
	}
	propagation.Seen(sc, live)
	ctx = scrub.NewContext(ctx, sc) // the dry run's warnings are scrubbed too
	policy := propagation.PolicyFor(in.s.spec, c.Name, p.remediation)
	prev, recorded := in.Previous[c.Name]
	d, err := propagation.DecideWrite(propagation.Copy{Type: in.s.kind.Type, Fed: in.s.fed, Versions: in.Versions, Previous: prev, Recorded: recorded,
		Desired: desired, Live: live, Policy: policy, Force: in.Force})
	if err != nil {
		c.Action, c.Error = ActionUnknown, err.Error()
		return
	}
	c.Action, c.Reason = Action(d.Action), d.Reason
	in.timing(c, d.NewContent)
	if !c.Action.writes() {
		return
	}
	write := propagation.Stamped(desired, live, in.s.spec.RetainReplicas, in.Versions, in.s.fed.GetUID())
	c.DryRun = p.dryRunApply(ctx, in, member, write)
	if c.DryRun.Status == DryRunFailed {
		c.Error = c.DryRun.Message
	}
	if c.Diff, err = diffText(in, c.Name, write, live, policy); err != nil {
		c.Error = err.Error()
	}
	c.OverwritesDrift = overwrites(prev, recorded)
}

// planPull plans a placed Pull cluster from what its agent reported in the
// CPV: the host cannot read it. desired is the copy planned there.
func planPull(in *planInput, c *Cluster, desired *unstructured.Unstructured, def typesv1beta1.Remediation) {
	c.Pull = true
	prev, recorded := in.Previous[c.Name]
	moved := prev.TemplateVersion != in.Versions.Template || prev.OverrideVersion != in.Versions.Override
	changed := moved && !(recorded && agentHasCurrent(in, c.Name, prev, desired))
	d := propagation.DecideFromEntry(prev, recorded, changed, in.Versions, propagation.PolicyFor(in.s.spec, c.Name, def), in.Force)
	c.Action, c.Reason = Action(d.Action), d.Reason
	if recorded && moved && !changed && d.Action == propagation.ActionUnchanged {
		c.Reason = "its agent reports its copy in sync at the host's current versions, and the copy planned there has the same content"
	}
	in.timing(c, d.NewContent)
	if c.Action.writes() {
		c.DryRun = &DryRun{Status: DryRunSkipped, Message: pullNoDryRun}
		c.OverwritesDrift = overwrites(prev, recorded)
	}
}

// planRemoval plans a cluster the resource leaves: the controller deletes
// its copy there.
func (p *planner) planRemoval(ctx context.Context, in *planInput, c *Cluster) {
	why := "no longer placed (" + in.placed.ruledOut(c.Name) + ")"
	fc := in.joined[c.Name]
	switch {
	case fc == nil:
		c.Action, c.Reason = ActionUnchanged, why+"; the cluster left the federation: nothing is deleted there"
		return
	case fc.Spec.SyncMode == corev1beta1.SyncModePull:
		c.Pull = true
		c.Action, c.Reason, c.Now = ActionDelete, why+": its agent deletes its copy, as spec.removals of the ClusterPropagatedVersion tells it", true
		c.DryRun = &DryRun{Status: DryRunSkipped, Message: pullNoDryRun}
		return
	}
	probe := &unstructured.Unstructured{}
	probe.SetName(in.s.fed.GetName())
	if in.s.kind.Type.TargetNamespaced {
		probe.SetNamespace(in.s.fed.GetNamespace())
	}
	member, live, err := p.readLive(ctx, in, c.Name, probe)
	switch {
	case err != nil:
		c.Action, c.Error = ActionUnknown, err.Error()
		return
	case live == nil || live.GetLabels()[typesv1beta1.LabelManaged] != "true":
		c.Action, c.Reason = ActionUnchanged, why+"; the cluster holds no copy Fedwarden manages: nothing is deleted"
		return
	case !propagation.OwnCopy(in.s.fed, in.s.cpv, c.Name, live):
		c.Action, c.Reason = ActionUnchanged, why+"; the copy there is not this resource's (another resource of its name wrote it, fedwarden.io/owner-uid): it is kept"
		return
	}
	// The member's answer to the dry run may quote the copy: a Secret's
	// values are taken out, as for a write.
	sc := propagation.ScrubberOf(in.s.kind.Type, in.s.fed)
	propagation.Seen(sc, live)
	defer scrubCluster(sc, c)
	ctx = scrub.NewContext(ctx, sc)
	c.Action, c.Reason, c.Now = ActionDelete, why+": its copy is deleted", true
	if in.s.kind.Type.IsNamespace() {
		c.Reason = why + ": the namespace is deleted, or released when Fedwarden did not create it"
		c.DryRun = &DryRun{Status: DryRunSkipped, Message: "a namespace's removal is not dry-run: whether it is deleted or released depends on who created it"}
		return
	}
	c.DryRun = p.dryRunDelete(ctx, in, member, live)
	if c.DryRun.Status == DryRunFailed {
		c.Error = c.DryRun.Message
	}
}

// readLive reads, with the credentials the host keeps for the cluster, the
// member's object of obj's name: nil when it has none.
func (p *planner) readLive(ctx context.Context, in *planInput, cluster string, obj *unstructured.Unstructured) (*clustercache.Member, *unstructured.Unstructured, error) {
	member, err := p.members.Get(ctx, p.host, cluster)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	live, err := resource(in, member, obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return member, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("reading %s %s in cluster %s: %w", in.s.kind.Type.Target.Kind, describeKey(obj.GetNamespace(), obj.GetName()), cluster, err)
	}
	return member, live, nil
}

// resource is the member's API of the resource's target kind.
func resource(in *planInput, member *clustercache.Member, namespace string) dynamic.ResourceInterface {
	res := member.Dynamic.Resource(in.s.kind.Type.TargetResource)
	if in.s.kind.Type.TargetNamespaced {
		return res.Namespace(namespace)
	}
	return res
}

// renderTarget is what render needs of the resource's type.
func renderTarget(in *planInput) render.Target {
	t := in.s.kind.Type
	return render.Target{Kind: t.Target, Namespaced: t.TargetNamespaced}
}

// rendered is the copy as the report shows it: with the versions, a
// Secret's values redacted.
func rendered(in *planInput, cluster string, desired *unstructured.Unstructured) map[string]any {
	v, err := memberdiff.Compare(memberdiff.Input{
		Location: cluster, Desired: desired, Versions: memberdiff.Versions{Template: string(in.Versions.Template), Override: string(in.Versions.Override)},
		Redact: memberdiff.IsSecret(in.s.kind.Type.Target),
	})
	if err != nil {
		return nil
	}
	return v.Desired
}

// overwrites is the drift a cluster's CPV entry records, which a write
// overwrites; nil when none.
func overwrites(prev typesv1beta1.ClusterVersion, recorded bool) *Drift {
	if !recorded || (prev.State != typesv1beta1.ModifiedOutOfBand && prev.State != typesv1beta1.Missing) {
		return nil
	}
	return &Drift{State: string(prev.State), ChangedPaths: nonNil(prev.ChangedPaths), ChangedBy: nonNil(prev.ChangedBy), DriftedSince: prev.DriftedSince}
}

// agentHasCurrent tells whether a Pull cluster's copy is known to hold
// desired's content already: its agent reports it InSync at the versions
// the host's resource is at, and the host's resource renders there as
// desired does. Its agent, which writes only content that changed, then
// writes nothing.
func agentHasCurrent(in *planInput, cluster string, prev typesv1beta1.ClusterVersion, desired *unstructured.Unstructured) bool {
	if desired == nil || in.s.current == nil || in.s.cpv == nil {
		return false
	}
	st := in.s.cpv.Status
	if prev.State != typesv1beta1.InSync || prev.TemplateVersion != st.TemplateVersion || prev.OverrideVersion != st.OverrideVersion {
		return false
	}
	spec, err := render.ParseSpec(in.s.current)
	if err != nil {
		return false
	}
	var replicas *int32
	for _, pc := range in.s.cpv.Spec.Clusters {
		if string(pc.Name) == cluster {
			replicas = pc.Replicas
		}
	}
	current, err := render.For(renderTarget(in), in.s.current, spec, cluster, replicas)
	return err == nil && render.ContentHash(current.Object) == render.ContentHash(desired.Object)
}
