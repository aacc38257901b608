package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/render"
)

// Revision is one stored revision of a federated resource: its template
// and overrides, and the versions the CPV gave them.
type Revision struct {
	Number    typesv1beta1.Revision
	Template  map[string]any
	Overrides []any
	// Versions are the template and override versions the CPV had given
	// the content when the revision was made.
	Versions render.Versions
	Key      Key
	// Name of its ControllerRevision.
	Name        string
	ChangeCause string
}

// content is a revision's data.
type content struct {
	Template  map[string]any `json:"template"`
	Overrides []any          `json:"overrides,omitempty"`
}

// Store reads and writes the ControllerRevisions of federated resources.
type Store struct {
	Client client.Client
	Reader client.Reader
	// DryRun: Ensure writes nothing, and returns what it would have
	// written (fedwarden plan; Client may be nil).
	DryRun bool
}

// Key is what tells revisions apart: the content hashes of a resource's
// spec.template and spec.overrides (without the scheduler's replicas,
// which are placement, not content).
type Key struct {
	Template, Overrides string
}

// KeyOf is the key of fed's current content.
func KeyOf(fed *unstructured.Unstructured) Key {
	overrides, _, _ := unstructured.NestedSlice(fed.Object, "spec", "overrides")
	return Key{Template: render.ContentHash(render.Template(fed)), Overrides: render.ContentHash(overrides)}
}

// RevisionName is the ControllerRevision name of fed's content with key
// k: <kind>-<name>-<hash>, lower-case, with the name shortened (see
// shortened) where the whole would be longer than an object name may be.
func RevisionName(fed *unstructured.Unstructured, k Key) string {
	h := render.ContentHash(k)[:10]
	kind := strings.ToLower(fed.GetKind())
	name := shortened(fed.GetName(), validation.DNS1123SubdomainMaxLength-len(kind)-len(h)-2)
	return fmt.Sprintf("%s-%s-%s", kind, name, h)
}

// revisionLabels are the labels that find fed's revisions: its kind, and
// its name, shortened (see shortened) where it is longer than a label
// value may be, so that a resource of any name can roll out in waves.
func revisionLabels(fed *unstructured.Unstructured) map[string]string {
	return map[string]string{
		typesv1beta1.LabelRevisionOf:   shortened(fed.GetName(), validation.LabelValueMaxLength),
		typesv1beta1.LabelRevisionKind: strings.ToLower(fed.GetKind()),
	}
}

// shortened returns name as it is when it has at most max characters, else
// its beginning and a hash of the whole, max characters in all: two long
// names differ in it however alike their beginnings. A resource's name is
// a DNS subdomain (lower-case letters, digits, '-' and '.'), so the result
// is one too, and a label value.
func shortened(name string, max int) string {
	if len(name) <= max {
		return name
	}
	h := render.ContentHash(name)[:10]
	prefix := strings.TrimRight(name[:max-len(h)-1], "-.")
	return prefix + "-" + h
}

// List returns fed's revisions in namespace, oldest first.
func (s *Store) List(ctx context.Context, fed *unstructured.Unstructured, namespace string) ([]Revision, error) {
	list := &appsv1.ControllerRevisionList{}
	err := s.Reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels(revisionLabels(fed)))
	if err != nil {
		return nil, fmt.Errorf("listing the revisions of %s %s: %w", fed.GetKind(), client.ObjectKeyFromObject(fed), err)
	}
	var out []Revision
	for _, cr := range list.Items {
		r, err := fromControllerRevision(&cr)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Revision) int { return int(a.Number - b.Number) })
	return out, nil
}

func fromControllerRevision(cr *appsv1.ControllerRevision) (Revision, error) {
	// Numbers are decoded as the API server's objects have them (int64
	// where integral, as in unstructured objects), so that a revision
	// renders exactly as the resource did.
	var c content
	if err := utiljson.Unmarshal(cr.Data.Raw, &c); err != nil {
		return Revision{}, fmt.Errorf("reading ControllerRevision %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	a := cr.Annotations
	return Revision{
		Number: typesv1beta1.Revision(cr.Revision), Template: c.Template, Overrides: c.Overrides, Name: cr.Name,
		ChangeCause: a[typesv1beta1.AnnotationChangeCause],
		Versions: render.Versions{
			Template: typesv1beta1.Version(a[typesv1beta1.AnnotationTemplateVersion]), Override: typesv1beta1.Version(a[typesv1beta1.AnnotationOverrideVersion]),
		},
		Key: Key{Template: a[annotationTemplateHash], Overrides: a[annotationOverridesHash]},
	}, nil
}

// The content hashes of a revision: its Key.
const (
	annotationTemplateHash  = "fedwarden.io/template-hash"
	annotationOverridesHash = "fedwarden.io/overrides-hash"
)

// Find returns the revision of revs whose key is k.
func Find(revs []Revision, k Key) (Revision, bool) {
	for _, r := range revs {
		if r.Key == k {
			return r, true
		}
	}
	return Revision{}, false
}

// ByNumber returns the revision of revs numbered n.
func ByNumber(revs []Revision, n typesv1beta1.Revision) (Revision, bool) {
	for _, r := range revs {
		if r.Number == n {
			return r, true
		}
	}
	return Revision{}, false
}

// Ensure returns fed's revision of its current content, whose versions
// the CPV gives as v, creating it, numbered after the last of revs, when
// there is none; a content seen before (an undo) is renumbered as the
// latest, as a Deployment's ReplicaSet is. It returns revs as they are
// then.
func (s *Store) Ensure(ctx context.Context, fed *unstructured.Unstructured, namespace string, revs []Revision, v render.Versions) (Revision, []Revision, error) {
	next := typesv1beta1.Revision(1)
	if len(revs) > 0 {
		next = revs[len(revs)-1].Number + 1
	}
	k := KeyOf(fed)
	if r, ok := Find(revs, k); ok {
		if r.Number == revs[len(revs)-1].Number {
			return r, revs, nil
		}
		return s.renumber(ctx, namespace, r, next, v, revs)
	}
	overrides, _, _ := unstructured.NestedSlice(fed.Object, "spec", "overrides")
	raw, err := json.Marshal(content{Template: render.Template(fed), Overrides: overrides})
	if err != nil {
		return Revision{}, nil, fmt.Errorf("encoding the revision: %w", err)
	}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: RevisionName(fed, k), Namespace: namespace,
			Labels: revisionLabels(fed),
			Annotations: map[string]string{
				typesv1beta1.AnnotationTemplateVersion: string(v.Template), typesv1beta1.AnnotationOverrideVersion: string(v.Override),
				annotationTemplateHash: k.Template, annotationOverridesHash: k.Overrides,
			},
			OwnerReferences: []metav1.OwnerReference{ownerOf(fed)},
		},
		Data:     runtime.RawExtension{Raw: raw},
		Revision: int64(next),
	}
	if cause := fed.GetAnnotations()[typesv1beta1.AnnotationChangeCause]; cause != "" {
		cr.Annotations[typesv1beta1.AnnotationChangeCause] = cause
	}
	if err := s.create(ctx, cr); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Written by an earlier sync whose list did not see it yet:
			// the next sync reads it.
			return Revision{}, nil, fmt.Errorf("revision %s exists but was not listed yet: %w", cr.Name, err)
		}
		return Revision{}, nil, fmt.Errorf("creating the revision %s/%s: %w", namespace, cr.Name, err)
	}
	r, err := fromControllerRevision(cr)
	if err != nil {
		return Revision{}, nil, err
	}
	return r, append(slices.Clone(revs), r), nil
}

// renumber makes r the latest revision, numbered next, with the versions
// the CPV now gives its content.
func (s *Store) renumber(ctx context.Context, namespace string, r Revision, next typesv1beta1.Revision, v render.Versions, revs []Revision) (Revision, []Revision, error) {
	patch, err := json.Marshal(map[string]any{
		"revision": next,
		"metadata": map[string]any{"annotations": map[string]string{
			typesv1beta1.AnnotationTemplateVersion: string(v.Template), typesv1beta1.AnnotationOverrideVersion: string(v.Override),
		}},
	})
	if err != nil {
		return Revision{}, nil, fmt.Errorf("encoding the renumbering: %w", err)
	}
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: namespace}}
	if err := s.patch(ctx, cr, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return Revision{}, nil, fmt.Errorf("renumbering the revision %s/%s: %w", namespace, r.Name, err)
	}
	r.Number, r.Versions = next, render.Versions{Template: v.Template, Override: v.Override}
	out := slices.DeleteFunc(slices.Clone(revs), func(x Revision) bool { return x.Name == r.Name })
	return r, append(out, r), nil
}

// create creates cr, unless the store is a dry run.
func (s *Store) create(ctx context.Context, cr *appsv1.ControllerRevision) error {
	if s.DryRun {
		return nil
	}
	return s.Client.Create(ctx, cr)
}

// patch patches cr, unless the store is a dry run.
func (s *Store) patch(ctx context.Context, cr *appsv1.ControllerRevision, p client.Patch) error {
	if s.DryRun {
		return nil
	}
	return s.Client.Patch(ctx, cr, p)
}

// Prune deletes the oldest revisions past limit, keeping any that keep
// names (the revisions clusters are held at).
func (s *Store) Prune(ctx context.Context, namespace string, revs []Revision, limit int, keep map[typesv1beta1.Revision]bool) error {
	excess := len(revs) - limit
	for _, r := range revs {
		if excess <= 0 {
			break
		}
		if keep[r.Number] {
			continue
		}
		cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: namespace}}
		if err := s.Client.Delete(ctx, cr); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the revision %s/%s past the history limit: %w", namespace, r.Name, err)
		}
		excess--
	}
	return nil
}

// ownerOf is the owner reference a revision has to fed: deleting fed
// deletes its revisions.
func ownerOf(fed *unstructured.Unstructured) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: fed.GetAPIVersion(), Kind: fed.GetKind(), Name: fed.GetName(), UID: fed.GetUID()}
}

// Apply returns a copy of fed whose spec.template and spec.overrides are
// r's: the resource as it was at revision r, for the clusters a rollout
// holds there.
func Apply(fed *unstructured.Unstructured, r Revision) *unstructured.Unstructured {
	out := fed.DeepCopy()
	_ = unstructured.SetNestedField(out.Object, runtime.DeepCopyJSONValue(r.Template), "spec", "template")
	if len(r.Overrides) == 0 {
		unstructured.RemoveNestedField(out.Object, "spec", "overrides")
	} else {
		_ = unstructured.SetNestedSlice(out.Object, runtime.DeepCopyJSONValue(r.Overrides).([]any), "spec", "overrides")
	}
	return out
}
