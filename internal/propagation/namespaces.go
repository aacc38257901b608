package propagation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/render"
	"github.com/fedwarden/fedwarden/internal/scheduler"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

// systemNamespacePrefix starts the names of Kubernetes' own namespaces
// (kube-system, kube-public, kube-node-lease), which Fedwarden never
// adopts, writes or deletes.
const systemNamespacePrefix = "kube-"

// isSystemNamespace tells whether name is one of Kubernetes' own namespaces.
func isSystemNamespace(name string) bool { return strings.HasPrefix(name, systemNamespacePrefix) }

// OutOfReach says why fed, a FederatedNamespace, must not be synced at all,
// or returns an empty reason. A FederatedNamespace federates the namespace
// it lives in: one named after another namespace would let whoever may
// write in one namespace adopt, then delete, another in every member. No
// kube-* namespace is ever adopted, written or deleted.
func OutOfReach(typ Type, fed *unstructured.Unstructured) (reason, message string) {
	if !typ.IsNamespace() {
		return "", ""
	}
	name, namespace := fed.GetName(), fed.GetNamespace()
	switch {
	case typ.FederatedNamespaced && name != namespace:
		return typesv1beta1.ReasonNameNotNamespace, fmt.Sprintf(
			"a %s federates the namespace it lives in, and this one is named %s in namespace %s: it is not synced, and nothing is written to or deleted from any cluster; "+
				"to federate namespace %s, create %s %s in namespace %s", typ.Federated.Kind, name, namespace, name, typ.Federated.Kind, name, name)
	case isSystemNamespace(name):
		return typesv1beta1.ReasonSystemNamespace, fmt.Sprintf(
			"%s is a Kubernetes system namespace: Fedwarden never adopts, writes or deletes a %s* namespace in a member; "+
				"the namespaced resources of %s still go only to the clusters this %s is placed on", name, systemNamespacePrefix, name, typ.Federated.Kind)
	}
	return "", ""
}

// refusedStatus is the status of a resource that is not synced, for
// reason: both conditions False with the reason, and no cluster.
func refusedStatus(old typesv1beta1.FederatedStatus, reason, message string, generation int64, now metav1.Time) typesv1beta1.FederatedStatus {
	st := typesv1beta1.FederatedStatus{ObservedGeneration: generation, Conditions: append([]metav1.Condition(nil), old.Conditions...), ClusterCount: new(int32(0))}
	setCondition(&st.Conditions, typesv1beta1.FederatedScheduled, false, reason, message, generation, now)
	setCondition(&st.Conditions, typesv1beta1.FederatedPropagated, false, reason, message, generation, now)
	return st
}

// namespaceRestriction keeps a namespaced resource to the clusters its
// namespace is federated to, when namespaces are federated (KubeFed's
// rule). A FederatedNamespace's placement is the user's intent: a cluster
// it leaves out loses its copy. A namespace without a FederatedNamespace
// (what `fedwarden enable namespaces` on a live federation finds), or whose
// FederatedNamespace's placement cannot be read, is state: new placements
// go nowhere, and the copies already there are kept and reported.
func (p *placer) namespaceRestriction(ctx context.Context, fed *unstructured.Unstructured, clusters []corev1beta1.FederatedCluster) (*scheduler.Restriction, string, string, error) {
	if !p.typ.TargetNamespaced || p.namespaces == nil {
		return nil, "", "", nil
	}
	gvk, federated, err := p.namespaces.FederatedNamespaceKind(ctx)
	if err != nil || !federated {
		return nil, "", "", err
	}
	namespace := fed.GetNamespace()
	fns := &unstructured.Unstructured{}
	fns.SetGroupVersionKind(gvk)
	err = p.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: namespace}, fns)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		msg := fmt.Sprintf("namespace %s has no %s of the same name: namespaced resources go only to the clusters their namespace is federated to; "+
			"copies already in clusters stay (Scheduled condition, reason %s) until the %s places the namespace", namespace, gvk.Kind, typesv1beta1.ReasonCopiesKept, gvk.Kind)
		return &scheduler.Restriction{Plugin: gvk.Kind, Reason: "namespace " + namespace + " is not federated"}, typesv1beta1.ReasonNamespaceNotFederated, msg, nil
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("reading %s %s: %w", gvk.Kind, namespace, err)
	}
	nsPlaced, err := namespacePlacement(fns, clusters)
	if err != nil {
		// The FederatedNamespace's own status reports its bad placement.
		return &scheduler.Restriction{Plugin: gvk.Kind, Reason: fmt.Sprintf("the placement of %s %s cannot be read: %v", gvk.Kind, namespace, err)}, "", "", nil
	}
	return &scheduler.Restriction{Plugin: gvk.Kind, Clusters: nsPlaced, Reason: "namespace " + namespace + " is not federated to it", Intent: true}, "", "", nil
}

// refuse reports, with the resource's conditions and an Event when they
// change, why fed is not synced, and writes nothing else: no member, no CPV,
// no finalizer. Retrying cannot fix the input: the error is terminal.
func (rep *reporter) refuse(ctx context.Context, fed *unstructured.Unstructured, reason, message string) error {
	old := federatedStatusOf(fed)
	if c := meta.FindStatusCondition(old.Conditions, typesv1beta1.FederatedPropagated); (c == nil || c.Reason != reason || c.Message != message) && rep.recorder != nil {
		rep.recorder.Eventf(fed, nil, corev1.EventTypeWarning, reason, "Sync", "%s", message)
	}
	next := refusedStatus(old, reason, message, fed.GetGeneration(), metav1.NewTime(rep.now()))
	if err := rep.patchFederatedStatus(ctx, fed, old, next); err != nil {
		return err
	}
	return reconcile.TerminalError(fmt.Errorf("%s %s is not synced: %s", rep.typ.Federated.Kind, client.ObjectKeyFromObject(fed), reason))
}

// namespacePlacement returns the clusters a FederatedNamespace is placed on.
func namespacePlacement(fns *unstructured.Unstructured, clusters []corev1beta1.FederatedCluster) ([]string, error) {
	spec, err := render.ParseSpec(fns)
	if err != nil {
		return nil, err
	}
	return place(spec.Placement, clusters)
}

// keptByNamespace returns the clusters of names that a restriction about
// state (no FederatedNamespace) leaves out: they are there only to keep a
// copy.
func keptByNamespace(restriction *scheduler.Restriction, names []string) map[string]bool {
	if restriction == nil || restriction.Intent {
		return nil
	}
	kept := map[string]bool{}
	for _, name := range names {
		if !slices.Contains(restriction.Clusters, name) {
			kept[name] = true
		}
	}
	return kept
}

// dropGone takes out of results and t the clusters whose sync found that a
// copy kept only by the namespace restriction is gone (deleted with its
// namespace, say): there is nothing left to keep, and a new copy there
// would be a new placement, which the restriction forbids. Their CPV
// entries then go, and the Scheduled condition says they are ruled out.
func dropGone(results []clusterResult, t targets) ([]clusterResult, targets) {
	gone := map[string]bool{}
	for _, res := range results {
		if res.gone {
			gone[res.name] = true
		}
	}
	if len(gone) == 0 {
		return results, t
	}
	results = slices.DeleteFunc(slices.Clone(results), func(res clusterResult) bool { return gone[res.name] })
	t.names = slices.DeleteFunc(slices.Clone(t.names), func(name string) bool { return gone[name] })
	replicas := map[string]int32{}
	for name, n := range t.replicas {
		if !gone[name] {
			replicas[name] = n
		}
	}
	t.replicas = replicas
	t.decision = withoutClusters(t.decision, gone, "its copy is gone, and the restriction places no new one")
	return results, t
}

// withoutClusters returns d with the clusters of drop, which it kept, ruled
// out instead, their verdicts saying why too.
func withoutClusters(d framework.Decision, drop map[string]bool, why string) framework.Decision {
	d.Clusters = slices.DeleteFunc(slices.Clone(d.Clusters), func(p framework.Placement) bool { return drop[p.Name] })
	var kept []framework.Verdict
	ruledOut := slices.Clone(d.RuledOut)
	for _, v := range d.Kept {
		if !drop[v.Cluster] {
			kept = append(kept, v)
			continue
		}
		v.Reasons = []string{strings.Join(append(slices.Clone(v.Reasons), why), "; ")}
		ruledOut = append(ruledOut, v)
	}
	slices.SortStableFunc(ruledOut, func(a, b framework.Verdict) int { return strings.Compare(a.Cluster, b.Cluster) })
	d.Kept, d.RuledOut = kept, ruledOut
	return d
}

// removal is what leaving a cluster does to a member copy.
type removal int

const (
	// removeDelete deletes the copy.
	removeDelete removal = iota
	// removeRelease leaves a Namespace Fedwarden did not create (it
	// adopted it) where it is, with what it holds, and takes Fedwarden's
	// marks off it.
	removeRelease
	// removeNothing leaves a kube-* Namespace alone.
	removeNothing
)

// removalOf is what leaving a cluster does to obj, a managed copy of typ.
func removalOf(typ Type, obj *unstructured.Unstructured) removal {
	switch {
	case !typ.IsNamespace():
		return removeDelete
	case isSystemNamespace(obj.GetName()):
		return removeNothing
	case obj.GetAnnotations()[typesv1beta1.AnnotationCreatedNamespace] == "true":
		return removeDelete
	}
	return removeRelease
}

// releaseMarks are the label and annotations that make a member object
// Fedwarden's; releasing an object removes them, and nothing else.
var releaseMarks = struct{ labels, annotations []string }{
	labels:      []string{typesv1beta1.LabelManaged},
	annotations: []string{typesv1beta1.AnnotationTemplateVersion, typesv1beta1.AnnotationOverrideVersion, typesv1beta1.AnnotationDesiredHash, typesv1beta1.AnnotationOwnerUID},
}

// removeCopy deletes, releases or leaves obj, a managed copy in member,
// as removalOf says; obj's UID guards against a copy created since.
func (a *applier) removeCopy(ctx context.Context, member *clustercache.Member, obj *unstructured.Unstructured) error {
	uid := obj.GetUID()
	switch removalOf(a.typ, obj) {
	case removeNothing:
		return nil
	case removeRelease:
		return a.release(ctx, member, obj)
	}
	err := a.resource(member, obj.GetNamespace()).Delete(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	memberWrites.WithLabelValues(member.Name, "delete").Inc()
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting %s %s in cluster %s: %w", a.typ.Target.Kind, obj.GetName(), member.Name, err)
	}
	return nil
}

// releasePatch is the JSON merge patch that releases the object of uid: it
// removes Fedwarden's marks, and fails if the object was replaced since
// (its UID cannot change).
func releasePatch(uid types.UID) ([]byte, error) {
	labels, annotations := map[string]any{}, map[string]any{}
	for _, k := range releaseMarks.labels {
		labels[k] = nil
	}
	for _, k := range releaseMarks.annotations {
		annotations[k] = nil
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"uid": string(uid), "labels": labels, "annotations": annotations}})
}

// release takes Fedwarden's marks off obj in member: it is no longer
// managed, and stays as it is otherwise.
func (a *applier) release(ctx context.Context, member *clustercache.Member, obj *unstructured.Unstructured) error {
	patch, err := releasePatch(obj.GetUID())
	if err != nil {
		return fmt.Errorf("encoding the release of %s %s: %w", a.typ.Target.Kind, obj.GetName(), err)
	}
	_, err = a.resource(member, obj.GetNamespace()).Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	memberWrites.WithLabelValues(member.Name, "release").Inc()
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing %s %s in cluster %s (it was adopted, so it is not deleted): %w", a.typ.Target.Kind, obj.GetName(), member.Name, err)
	}
	return nil
}

// createNamespaceCopy creates the Namespace a FederatedNamespace places in
// member, marked as created by Fedwarden (so that it, unlike an adopted
// one, is deleted when the FederatedNamespace leaves); the apply that
// follows writes the rest. A namespace that appeared meanwhile is taken
// over only if Fedwarden created it (for a namespaced resource); any other
// is left to the next sync, which adopts it only if allowed.
func (a *applier) createNamespaceCopy(ctx context.Context, member *clustercache.Member, name string) *clusterResult {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Annotations: map[string]string{typesv1beta1.AnnotationCreatedNamespace: "true"},
	}}
	namespaces := member.Kube.CoreV1().Namespaces()
	_, err := namespaces.Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager})
	memberWrites.WithLabelValues(member.Name, "create-namespace").Inc()
	if apierrors.IsAlreadyExists(err) {
		var got *corev1.Namespace
		if got, err = namespaces.Get(ctx, name, metav1.GetOptions{}); err == nil && got.Annotations[typesv1beta1.AnnotationCreatedNamespace] != "true" {
			err = fmt.Errorf("namespace %s appeared in cluster %s while Fedwarden was creating it: it is looked at again", name, member.Name)
		}
	}
	if err != nil {
		res := applyFailed(member.Name, fmt.Errorf("creating namespace %s in cluster %s: %w", name, member.Name, err), true)
		return &res
	}
	return nil
}

// NamespaceKind returns the federated kind of the first (by name)
// FederatedTypeConfig of Namespaces that enables propagation and is not
// being deleted: namespaces are federated as that kind. False when none.
func NamespaceKind(ftcs []corev1beta1.FederatedTypeConfig) (schema.GroupVersionKind, bool) {
	var found *Type
	name := ""
	for i := range ftcs {
		ftc := &ftcs[i]
		typ := TypeFromConfig(ftc)
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

// NamespacesOf answers, from FederatedTypeConfigs read once, whether and
// as which kind namespaces are federated (NamespaceKind).
type NamespacesOf []corev1beta1.FederatedTypeConfig

// FederatedNamespaceKind implements Namespaces.
func (n NamespacesOf) FederatedNamespaceKind(context.Context) (schema.GroupVersionKind, bool, error) {
	gvk, ok := NamespaceKind(n)
	return gvk, ok, nil
}
