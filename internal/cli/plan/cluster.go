package plan

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
	"github.com/fedwarden/fedwarden/internal/planreport"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

// pullNoDryRun says why a Pull cluster has no dry run.
const pullNoDryRun = "a Pull cluster: the host keeps no credentials for it, so no dry run; its agent applies the change, and the member's admission answers then"

// planCluster plans the resource in one cluster: placed, it is rendered
// and compared with the live copy; no longer placed, its copy is deleted.
func (p *planner) planCluster(ctx context.Context, in *planInput, name string) planreport.Cluster {
	c := planreport.Cluster{Name: name}
	if !slices.Contains(in.placed.Names(), name) {
		if _, recorded := in.Previous[name]; recorded {
			p.planRemoval(ctx, in, &c)
		} else {
			c.Action, c.Reason = planreport.ActionNotPlaced, in.placed.ruledOut(name)
		}
		return c
	}
	c.Placed = true
	c.Replicas = in.placed.ReplicasOf(name)
	c.Wave, c.WaveNumber = in.rollout.WaveOf(name)
	desired, err := in.s.kind.Type.Render(in.s.fed, in.s.spec, name, c.Replicas)
	if err != nil {
		c.Action, c.Error = planreport.ActionUnknown, fmt.Sprintf("rendering its copy: %v", err)
		return c
	}
	sc := propagation.ScrubberOf(in.s.kind.Type, in.s.fed)
	propagation.Seen(sc, desired)
	c.Rendered = rendered(in, name, desired)
	fc := in.joined[name]
	switch {
	case p.isDown(name):
		c.Action, c.Reason = planreport.ActionUnchanged, "planned as down (--what-if-down): nothing is written there, and its copy is kept as it is"
	case fc == nil:
		c.Action, c.Reason = planreport.ActionUnknown, fmt.Sprintf("cluster %s is not joined: there is no FederatedCluster of that name", name)
	case fc.Spec.SyncMode == corev1beta1.SyncModePull:
		planPull(in, &c, desired, p.remediation)
	default:
		p.planPush(ctx, in, &c, desired, sc)
	}
	if note := in.placed.decision.WhyKept(name); note != "" {
		c.Reason += "; " + note
	}
	if fc != nil && c.Action.Writes() && !meta.IsStatusConditionTrue(fc.Status.Conditions, corev1beta1.ClusterReady) {
		c.Reason += "; the cluster is not Ready: the controller writes once it is"
	}
	scrubCluster(sc, &c)
	return c
}

// planPush plans a placed Push cluster: the controller's apply stage,
// run with a writer that writes nothing (propagation.Previewer), reads its
// copy, decides, and dry-runs the write in the member.
func (p *planner) planPush(ctx context.Context, in *planInput, c *planreport.Cluster, desired *unstructured.Unstructured, sc *scrub.Scrubber) {
	member, err := p.members.Get(ctx, p.host, c.Name)
	if err != nil {
		c.Action, c.Error = planreport.ActionUnknown, err.Error()
		return
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	pv := p.previewer(in).Sync(ctx, member, in.joined[c.Name], in.s.fed, in.s.spec, in.Inputs, in.placed.Placement)
	propagation.Seen(sc, pv.Live)
	switch {
	case pv.Gone:
		c.Action, c.Reason = planreport.ActionUnchanged, "the cluster is kept only for a copy the namespace restriction would leave out, and there is none: nothing is written, and the cluster leaves the placement"
		return
	case pv.Reason == typesv1beta1.ClusterAlreadyExists:
		c.Action, c.Reason = planreport.ActionConflict, pv.Message
		return
	case !pv.Decided:
		c.Action, c.Error = planreport.ActionUnknown, pv.Message
		return
	}
	c.Action, c.Reason = planreport.Action(pv.Decision.Action), pv.Decision.Reason
	in.timing(c, pv.Decision.NewContent)
	if !c.Action.Writes() {
		return
	}
	c.DryRun = dryRunOf(pv, fmt.Sprintf("namespace %s does not exist in cluster %s yet: the controller creates it before the copy, "+
		"so the member cannot judge the copy before then", desired.GetNamespace(), c.Name))
	if c.DryRun.Status == planreport.DryRunFailed {
		c.Error = c.DryRun.Message
	}
	if pv.Sent != nil {
		if c.Diff, err = diffText(in, c.Name, pv.Sent, pv.Live, propagation.PolicyFor(in.s.spec, c.Name, in.labelsOf(c.Name), p.remediation)); err != nil {
			c.Error = err.Error()
		}
	}
	prev, recorded := in.Previous[c.Name]
	c.OverwritesDrift = overwrites(prev, recorded)
}

// planPull plans a placed Pull cluster from what its agent reported in the
// CPV (propagation.Previewer.Pull): the host cannot read it. desired is the
// copy planned there.
func planPull(in *planInput, c *planreport.Cluster, desired *unstructured.Unstructured, def typesv1beta1.Remediation) {
	c.Pull = true
	pv := propagation.Previewer{Type: in.s.kind.Type, DefaultRemediation: def}
	d := pv.Pull(in.s.current, in.s.spec, in.s.cpv, in.Inputs, c.Name, in.labelsOf(c.Name), desired)
	c.Action, c.Reason = planreport.Action(d.Action), d.Reason
	in.timing(c, d.NewContent)
	if c.Action.Writes() {
		c.DryRun = &planreport.DryRun{Status: planreport.DryRunSkipped, Message: pullNoDryRun}
		prev, recorded := in.Previous[c.Name]
		c.OverwritesDrift = overwrites(prev, recorded)
	}
}

// planRemoval plans a cluster the resource leaves: the controller's
// removal (propagation.Previewer) deletes its copy there, or releases an
// adopted namespace, when the copy is the resource's own.
func (p *planner) planRemoval(ctx context.Context, in *planInput, c *planreport.Cluster) {
	why := "no longer placed (" + in.placed.ruledOut(c.Name) + ")"
	fc := in.joined[c.Name]
	switch {
	case fc == nil:
		c.Action, c.Reason = planreport.ActionUnchanged, why+"; the cluster left the federation: nothing is deleted there"
		return
	case fc.Spec.SyncMode == corev1beta1.SyncModePull:
		c.Pull = true
		c.Action, c.Reason, c.Now = planreport.ActionDelete, why+": its agent deletes its copy, as spec.removals of the ClusterPropagatedVersion tells it", true
		c.DryRun = &planreport.DryRun{Status: planreport.DryRunSkipped, Message: pullNoDryRun}
		return
	}
	member, err := p.members.Get(ctx, p.host, c.Name)
	if err != nil {
		c.Action, c.Error = planreport.ActionUnknown, err.Error()
		return
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	pv := p.previewer(in).Removal(ctx, member, fc, in.s.fed, in.s.cpv)
	sc := propagation.ScrubberOf(in.s.kind.Type, in.s.fed)
	propagation.Seen(sc, pv.Live)
	defer scrubCluster(sc, c)
	switch pv.Removal {
	case "":
		if pv.Reason == typesv1beta1.ClusterUnreachable {
			c.Action, c.Error = planreport.ActionUnknown, pv.Message
			return
		}
		c.Action, c.Reason = planreport.ActionUnchanged, why+"; the controller's delete rule finds no copy of this resource there (none Fedwarden manages, "+
			"another resource's copy, fedwarden.io/owner-uid, or the cluster is a second name of one joined first): nothing is deleted"
		return
	case "keep":
		c.Action, c.Reason = planreport.ActionUnchanged, why+"; a kube-* namespace is never deleted or released"
		return
	case "release":
		c.Reason = why + ": the namespace is released (Fedwarden's marks taken off), as Fedwarden did not create it"
	default:
		c.Reason = why + ": its copy is deleted"
	}
	c.Action, c.Now = planreport.ActionDelete, true
	c.DryRun = dryRunOf(pv, "")
	if c.DryRun.Status == planreport.DryRunFailed {
		c.Error = c.DryRun.Message
	}
}

// previewer is the controller's apply stage for the resource's type,
// writing nothing.
func (p *planner) previewer(in *planInput) propagation.Previewer {
	return propagation.Previewer{Type: in.s.kind.Type, DefaultRemediation: p.remediation}
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
func overwrites(prev typesv1beta1.ClusterVersion, recorded bool) *planreport.Drift {
	if !recorded || (prev.State != typesv1beta1.ModifiedOutOfBand && prev.State != typesv1beta1.Missing) {
		return nil
	}
	return &planreport.Drift{State: string(prev.State), ChangedPaths: nonNil(prev.ChangedPaths), ChangedBy: nonNil(prev.ChangedBy), DriftedSince: prev.DriftedSince}
}
