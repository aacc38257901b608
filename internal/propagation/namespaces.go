package propagation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
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

// String names r as a Preview says it: delete, release or keep.
func (r removal) String() string {
	switch r {
	case removeRelease:
		return "release"
	case removeNothing:
		return "keep"
	}
	return "delete"
}

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
	r := removalOf(a.typ, obj)
	a.dryRun.noteRemoval(obj, r)
	switch r {
	case removeNothing:
		return nil
	case removeRelease:
		return a.release(ctx, member, obj)
	}
	err := a.resource(member, obj.GetNamespace()).Delete(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, DryRun: a.dryRunAll()})
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
	_, err = a.resource(member, obj.GetNamespace()).Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager, DryRun: a.dryRunAll()})
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
	_, err := namespaces.Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager, DryRun: a.dryRunAll()})
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
