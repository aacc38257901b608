package propagation

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/copyhealth"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
)

// copyProjection is the transform of the member informers of managed
// copies: it keeps of each copy what a sync reads from the informer, and
// not the rest, the server's defaults above all.
//
// A sync reads a stamped copy's metadata (DecideWrite's labels and
// annotations, the owner, removals, echoes, the CPV entry's versions), its
// status (health, collected status), and, for drift, the fields some
// manager owns (drift.Owned). So a copy keeps its apiVersion, kind, the
// metadata keptMetadata names, status, the leaves some manager other than
// the status subresource owns, Fedwarden included (read, then dropped as
// keepOthersFields drops it), and whatever else keptFields names. Three
// kinds of copies are kept whole (but for keepOthersFields): a copy with no
// desired-hash annotation, which DecideWrite compares field by field
// whoever wrote it (decideUnstamped); one with no entry of Fedwarden's
// (its managed fields were reset), where every field Fedwarden sets would
// look removed; and every copy of a kind with spec.healthRules, which may
// read any field.
//
// A projected copy carries projectedField, so that a second pass, which an
// informer may make (client-go's TransformFunc must be idempotent), leaves
// it as it is; a copy kept whole has no entry of Fedwarden's left, so a
// second pass keeps it whole too.
type copyProjection struct {
	// health, when set, tells which kinds have spec.healthRules.
	health *copyhealth.Evaluator
}

// projectedField marks a projected copy: a top-level field, set to true,
// that no Kubernetes object has. Nothing sends a cached copy anywhere, so
// it never leaves the process; the built-in health rules, which see it,
// read only fields they name.
const projectedField = "fedwarden.io/projected"

// lastApplied is the annotation kubectl apply keeps the whole object in.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// cache is the member informers' TransformFunc: the projection, held as
// a cachedCopy. An object cached already is left as it is.
func (p copyProjection) cache(obj any) (any, error) {
	if c, ok := obj.(*cachedCopy); ok {
		return c, nil
	}
	out, err := p.transform(obj)
	if u, ok := out.(*unstructured.Unstructured); ok && err == nil {
		return compact(u)
	}
	return out, err
}

// transform projects a copy, decoded.
func (p copyProjection) transform(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return keepOthersFields(obj) // a tombstone
	}
	if isProjected(u) {
		return u, nil
	}
	entries := u.GetManagedFields()
	own := slices.IndexFunc(entries, func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == FieldManager && e.Subresource == "" && e.FieldsV1 != nil
	})
	if own < 0 || !p.projects(u) {
		return keepOthersFields(u)
	}
	owned, err := drift.Owned(entries)
	if err != nil {
		return keepOthersFields(u) // drift detection reports the bad fields
	}
	applied, _, _ := unstructured.NestedString(u.Object, "metadata", "annotations", lastApplied)
	dropApplied := applied != "" && !ownsLastApplied(entries[own])
	u.Object = drift.Project(u.Object, owned.Union(keptFields(u.GroupVersionKind().GroupKind())))
	if others := othersFields(entries); len(others) > 0 {
		u.SetManagedFields(others)
	} else {
		u.SetManagedFields(nil)
	}
	if dropApplied {
		unstructured.RemoveNestedField(u.Object, "metadata", "annotations", lastApplied)
	}
	u.Object[projectedField] = true
	return u, nil
}

// projects tells whether u, a copy with an entry of Fedwarden's, may be
// projected: it is stamped, and its kind has no spec.healthRules.
func (p copyProjection) projects(u *unstructured.Unstructured) bool {
	hash, _, _ := unstructured.NestedString(u.Object, "metadata", "annotations", typesv1beta1.AnnotationDesiredHash)
	return hash != "" && (p.health == nil || !p.health.HasSpecRules(u.GroupVersionKind().GroupKind()))
}

// partial tells whether obj, a copy from the informer, was projected
// although its kind's copies are now kept whole: its kind got
// spec.healthRules after the informer cached it. A sync reads it from the
// member instead.
func (p copyProjection) partial(obj *unstructured.Unstructured) bool {
	return isProjected(obj) && p.health != nil && p.health.HasSpecRules(obj.GroupVersionKind().GroupKind())
}

// isProjected tells whether u carries projectedField.
func isProjected(u *unstructured.Unstructured) bool {
	projected, _ := u.Object[projectedField].(bool)
	return projected
}

// ownsLastApplied tells whether entry, Fedwarden's, owns the last-applied
// annotation: then desired sets it, and drift detection reads it. Without
// that, only kubectl apply in the member sets it, and nothing reads it.
func ownsLastApplied(entry metav1.ManagedFieldsEntry) bool {
	set := &fieldpath.Set{}
	if err := set.FromJSON(entry.FieldsV1.GetRawReader()); err != nil {
		return true
	}
	return set.Has(fieldpath.MakePathOrDie("metadata", "annotations", lastApplied))
}

// keptMetadata are the fields of metadata a projected copy keeps: what
// DecideWrite, removals, echoes, health, the update filter (matters) and
// the CPV entry read. Its creationTimestamp, which nothing reads, goes.
var keptMetadata = []string{
	"name", "namespace", "uid", "resourceVersion", "generation", "labels", "annotations",
	"deletionTimestamp", "deletionGracePeriodSeconds", "finalizers", "ownerReferences", "managedFields",
}

// keptFields are the fields a projected copy of kind gk keeps, whoever
// owns them: apiVersion, kind, keptMetadata and status; spec.replicas,
// which a resource that retains replicas writes back as the member has it
// (stamped), owned or defaulted; the spec fields the kind's built-in health
// rules read; and the values the scrubber hides from messages (a Secret's).
func keptFields(gk schema.GroupKind) *fieldpath.Set {
	if s, ok := keptByKind.Load(gk); ok {
		return s.(*fieldpath.Set)
	}
	s := fieldpath.NewSet(
		fieldpath.MakePathOrDie("apiVersion"), fieldpath.MakePathOrDie("kind"), fieldpath.MakePathOrDie("status"),
		fieldpath.MakePathOrDie("spec", "replicas"))
	for _, f := range keptMetadata {
		s.Insert(fieldpath.MakePathOrDie("metadata", f))
	}
	for _, f := range copyhealth.SpecFields(gk) {
		s.Insert(fieldpath.MakePathOrDie("spec", f))
	}
	for _, f := range scrub.Fields {
		s.Insert(fieldpath.MakePathOrDie(f))
	}
	keptByKind.Store(gk, s)
	return s
}

// keptByKind holds keptFields per kind: a kind's never changes.
var keptByKind sync.Map

// keepOthersFields drops from a member copy the managed-fields entries
// drift detection never reads: Fedwarden's own (the largest: every field
// it writes) and those of the status subresource. Those of every other
// manager stay, as drift detection names who changed a field from them.
func keepOthersFields(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil // a tombstone
	}
	all := o.GetManagedFields()
	if kept := othersFields(all); len(kept) != len(all) {
		o.SetManagedFields(kept)
	}
	return obj, nil
}

// othersFields are entries but Fedwarden's and the status subresource's.
func othersFields(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	return slices.DeleteFunc(slices.Clone(entries), func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == FieldManager || e.Subresource == "status"
	})
}
