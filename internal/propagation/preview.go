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
