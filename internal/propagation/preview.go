package propagation

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/render"
)

// Previewer runs the apply stage of one cluster (syncCluster, deleteCopy)
// as the controller's next sync would, with a writer that writes nothing:
// every write, create, release and delete goes to the member with
// dryRun=All, so that its admission answers, and no namespace is created
// for a copy. It has no informers: it reads the member. fedwarden plan
// calls it, so that what plan predicts is the controller's own rule.
type Previewer struct {
	Type Type
	// DefaultRemediation is the drift policy of resources that name none.
	DefaultRemediation typesv1beta1.Remediation
}

// Preview is what the apply stage would do in one cluster, and how the
// member answered the dry run.
type Preview struct {
	// Decided: the write decision was made, and Decision is it; false when
	// the sync ends before (Message says why).
	Decided  bool
	Decision Decision
	// Live is the member's copy (nil when none), Sent the object the sync
	// would apply (nil when it applies none).
	Live, Sent *unstructured.Unstructured
	// Removal is what leaving the cluster does to Live: "delete",
	// "release" or "keep"; "" when no copy of the resource is there.
	Removal string
	// Reason and Message are the cluster's result as its CPV entry would
	// record it (typesv1beta1.Cluster*), scrubbed; Message is "" when the
	// write or removal went through. Code is the HTTP status code of the
	// member's refusal; 0 when it has none.
	Reason, Message string
	Code            int32
	// NamespaceMissing: the write was not judged, as the copy's namespace
	// does not exist in the member yet (the controller creates it first).
	NamespaceMissing bool
	// Gone: the cluster is placed only to keep a copy the namespace
	// restriction would leave out, and there is none: nothing is written,
	// and the cluster leaves the placement.
	Gone bool
}

// dryRunner is what an applier that writes nothing has instead of the
// controller's member cache: the one member it previews, and what a
// removal would do there.
type dryRunner struct {
	member  *clustercache.Member
	removal string
	removed *unstructured.Unstructured
}

// dryRunAll is the dryRun option of the applier's member writes: All in a
// preview, none otherwise.
func (a *applier) dryRunAll() []string {
	if a.dryRun != nil {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// noteRemoval records, in a preview, what removing obj does.
func (d *dryRunner) noteRemoval(obj *unstructured.Unstructured, r removal) {
	if d == nil {
		return
	}
	d.removed, d.removal = obj, r.String()
}

func (p Previewer) applier(member *clustercache.Member) *applier {
	return &applier{typ: p.Type, defaultRemediation: p.DefaultRemediation, dryRun: &dryRunner{member: member}}
}

// Sync previews the sync of fed, whose spec is spec, in cluster fc, whose
// clients are member; in are the sync's inputs (InputsOf), pl the place
// stage's decision.
func (p Previewer) Sync(ctx context.Context, member *clustercache.Member, fc *corev1beta1.FederatedCluster, fed *unstructured.Unstructured, spec render.Spec, in Inputs, pl Placement) Preview {
	sin := in.syncInput(fed, spec, pl.t.replicas)
	sin.keptByNamespace = pl.t.keptByNamespace
	res := p.applier(member).syncCluster(ctx, sin, member.Name, fc)
	out := previewOf(res)
	out.Decided, out.Decision = res.decided, res.decision
	return out
}

// Removal previews the removal of fed's copy from cluster fc, whose
// clients are member, which fed left; cpv is fed's CPV.
func (p Previewer) Removal(ctx context.Context, member *clustercache.Member, fc *corev1beta1.FederatedCluster, fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion) Preview {
	a := p.applier(member)
	_, failed := a.deleteCopy(ctx, fed, cpv, member.Name, fc)
	out := Preview{Live: a.dryRun.removed, Removal: a.dryRun.removal}
	if failed != nil {
		out = previewOf(*failed)
		out.Live, out.Removal = a.dryRun.removed, a.dryRun.removal
	}
	return out
}

func previewOf(res clusterResult) Preview {
	return Preview{Live: res.live, Sent: res.sent, Reason: res.reason, Message: res.message, Code: res.code, NamespaceMissing: res.namespaceMissing, Gone: res.gone}
}

// Pull predicts the write decision of the agent of Pull cluster for the
// copy desired, planned there, from what the agent reported in fed's CPV,
// cpv: the host cannot read the member. in are the sync's inputs, spec
// fed's spec, clusterLabels those of the cluster's FederatedCluster;
// current is the resource as the host has it, nil when it has none.
func (p Previewer) Pull(current *unstructured.Unstructured, spec render.Spec, cpv *typesv1beta1.ClusterPropagatedVersion, in Inputs, cluster string, clusterLabels map[string]string, desired *unstructured.Unstructured) Decision {
	prev, recorded := in.Previous[cluster]
	moved := prev.TemplateVersion != in.Versions.Template || prev.OverrideVersion != in.Versions.Override
	same := recorded && moved && p.agentHasCurrent(current, cpv, cluster, prev, desired)
	d := DecideFromEntry(prev, recorded, moved && !same, in.Versions, PolicyFor(spec, cluster, clusterLabels, p.DefaultRemediation), in.Force)
	if same && d.Action == ActionUnchanged {
		d.Reason = "its agent reports its copy in sync at the host's current versions, and the copy planned there has the same content"
	}
	return d
}

// agentHasCurrent tells whether a Pull cluster's copy is known to hold
// desired's content already: its agent reports it InSync at the versions
// the host's resource, current, is at, and current renders there as
// desired does. Its agent, which writes only content that changed, then
// writes nothing.
func (p Previewer) agentHasCurrent(current *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, cluster string, prev typesv1beta1.ClusterVersion, desired *unstructured.Unstructured) bool {
	if desired == nil || current == nil || cpv == nil {
		return false
	}
	st := cpv.Status
	if prev.State != typesv1beta1.InSync || prev.TemplateVersion != st.TemplateVersion || prev.OverrideVersion != st.OverrideVersion {
		return false
	}
	spec, err := render.ParseSpec(current)
	if err != nil {
		return false
	}
	now, err := p.Type.Render(current, spec, cluster, replicasIn(targetsOf(cpv).replicas, cluster))
	return err == nil && render.ContentHash(now.Object) == render.ContentHash(desired.Object)
}
