package dependencies

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Kinds are the kinds a pod template can name, in the order they are
// reported.
var Kinds = []string{ConfigMap, PersistentVolumeClaim, Secret, ServiceAccount}

// Stage is the dependencies stage of a workload's sync: it writes the
// derived federated resources of the objects the workload's pod template
// names, and takes the workload off those it no longer names. It writes
// nothing else; the derived resources' own propagation places them.
type Stage struct {
	// client reads FederatedTypeConfigs and federated resources from the
	// cache, and writes the derived resources.
	client client.Client
	// host reads the host objects themselves, from the API server: the
	// cache holds only the control plane's Secrets.
	host client.Reader
	// meta caches the metadata of the host objects of Kinds: their
	// changes sync their owners (Source), and an object whose
	// resourceVersion its derived resource already records is not read
	// again.
	meta cache.Cache
	// missing are the owners waiting for each host object that was
	// missing, by kind/namespace/name: its creation syncs them. It only
	// speeds that up; a restart forgets it, and the owners' periodic
	// retry (Again) finds the object then.
	missing missingOwners
}

// missingOwners are, by host object, the owner keys that found it missing.
type missingOwners struct {
	mu     sync.Mutex
	owners map[string]map[string]bool
}

func (m *missingOwners) note(object, owner string, missing bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !missing {
		delete(m.owners[object], owner)
		if len(m.owners[object]) == 0 {
			delete(m.owners, object)
		}
		return
	}
	if m.owners == nil {
		m.owners = map[string]map[string]bool{}
	}
	if m.owners[object] == nil {
		m.owners[object] = map[string]bool{}
	}
	m.owners[object][owner] = true
}

func (m *missingOwners) of(object string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []string
	for k := range m.owners[object] {
		keys = append(keys, k)
	}
	return keys
}

// NewStage returns the dependencies stage. meta is a cache of the host's
// objects' metadata, which the caller starts (NewMetadataCache).
func NewStage(c client.Client, host client.Reader, meta cache.Cache) *Stage {
	return &Stage{client: c, host: host, meta: meta}
}

// NewMetadataCache returns the cache of metadata NewStage wants: of every
// namespace, as dependencies live in the workloads' namespaces. It reads
// no Secret's data. Add it to the manager, which starts it.
func NewMetadataCache(cfg *rest.Config, scheme *runtime.Scheme) (cache.Cache, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of the dependencies' metadata: %w", err)
	}
	return c, nil
}

// Source is a watch of the metadata of the host objects of kind, one of
// Kinds, that calls h on each change.
func (s *Stage) Source(kind string, h handler.TypedEventHandler[*metav1.PartialObjectMetadata, reconcile.Request]) source.TypedSource[reconcile.Request] {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: kind})
	return source.Kind(s.meta, obj, h, predicate.TypedResourceVersionChangedPredicate[*metav1.PartialObjectMetadata]{})
}

// Workload is a workload under spec.propagateDependencies, as one sync
// sees it.
type Workload struct {
	// Federated is the workload's federated kind; Target the kind of its
	// copies, whose pod template names the dependencies.
	Federated schema.GroupVersionKind
	Target    schema.GroupKind
	Object    *unstructured.Unstructured
	// Clusters are the clusters the workload is placed on.
	Clusters []string
	// Remediation is its drift policy's remediation, if it sets one.
	Remediation typesv1beta1.Remediation
	// Previous are the dependencies its status listed after its last
	// sync: those no longer named are the ones Sync takes it off.
	Previous []typesv1beta1.DependencyStatus
}

func (w Workload) key() string { return OwnerKey(w.Federated, w.Object.GetName()) }

func (w Workload) owner() Owner {
	a := w.Object.GetAnnotations()
	return Owner{
		Clusters:    w.Clusters,
		Remediation: w.Remediation,
		Adopt:       a[typesv1beta1.AnnotationConflictResolution] == typesv1beta1.ConflictResolutionAdopt,
		Orphan:      a[typesv1beta1.AnnotationOrphan] == "true",
	}
}

// Sync makes each dependency w's template names go with w: it returns
// how each goes, and an error when a write failed (to retry). Writes are
// conditional on the resourceVersion read, so that two workloads sharing a
// dependency never undo each other's entry.
func (s *Stage) Sync(ctx context.Context, w Workload) ([]typesv1beta1.DependencyStatus, error) {
	refs, err := w.refs()
	if err != nil {
		return nil, err
	}
	kinds, err := s.kinds(ctx)
	if err != nil {
		return nil, err
	}
	var statuses []typesv1beta1.DependencyStatus
	var errs []error
	named := map[string]bool{}
	for _, ref := range refs {
		named[ref.Kind+"/"+ref.Name] = true
		st, err := s.carry(ctx, w, ref, kinds)
		statuses = append(statuses, st)
		errs = append(errs, err)
	}
	kept, err := s.releaseDropped(ctx, w, kinds, named)
	return append(statuses, kept...), errors.Join(append(errs, err)...)
}

// releaseDropped takes w off the derived resources of the dependencies
// its last status listed that its template no longer names (named, by
// kind/name): a read of each, not a list of the namespace, so that a sync
// costs the same however many derived resources the namespace holds. A
// dependency the status lost track of keeps w among its owners, and its
// copies, until w is deleted or stops propagating them (Release). Those
// it could not take w off stay in the returned statuses, Failed, so that
// the next sync's Previous still lists them and tries again.
func (s *Stage) releaseDropped(ctx context.Context, w Workload, kinds map[string]schema.GroupVersionKind, named map[string]bool) ([]typesv1beta1.DependencyStatus, error) {
	var kept []typesv1beta1.DependencyStatus
	var errs []error
	for _, d := range w.Previous {
		federated, ok := kinds[d.Kind]
		if !ok || named[d.Kind+"/"+d.Name] {
			continue
		}
		obj, err := s.derived(ctx, federated, w.Object.GetNamespace(), d.Name)
		if err == nil && obj != nil && IsDerived(obj) {
			err = s.releaseOne(ctx, obj, federated, d.Kind, w.key())
		}
		if err != nil {
			err = withoutValues(Ref{Kind: d.Kind, Name: d.Name}, err)
			kept = append(kept, typesv1beta1.DependencyStatus{Kind: d.Kind, Name: d.Name, State: typesv1beta1.DependencyFailed,
				Message: "no longer named, but the workload could not be taken off it yet: " + err.Error()})
			errs = append(errs, err)
		}
	}
	return kept, errors.Join(errs...)
}

// Release takes w off every derived resource it owns: a resource left
// without owners is deleted, and with it its copies.
func (s *Stage) Release(ctx context.Context, w Workload) error {
	kinds, err := s.kinds(ctx)
	if err != nil {
		return err
	}
	return s.release(ctx, w.Object.GetNamespace(), w.key(), kinds)
}

// kinds are the federated kinds of the enabled types of the kinds a pod
// template names, by kind.
func (s *Stage) kinds(ctx context.Context) (map[string]schema.GroupVersionKind, error) {
	var ftcs corev1beta1.FederatedTypeConfigList
	if err := s.client.List(ctx, &ftcs); err != nil {
		return nil, fmt.Errorf("listing FederatedTypeConfigs: %w", err)
	}
	kinds := map[string]schema.GroupVersionKind{}
	for _, ftc := range ftcs.Items {
		t, f := ftc.Spec.TargetType, ftc.Spec.FederatedType
		if t.Group != "" || !slices.Contains(Kinds, t.Kind) || ftc.Spec.Propagation == corev1beta1.Disabled || !ftc.DeletionTimestamp.IsZero() {
			continue
		}
		kinds[t.Kind] = schema.GroupVersionKind{Group: f.Group, Version: f.Version, Kind: f.Kind}
	}
	return kinds, nil
}

// carry writes ref's derived resource with w among its owners.
func (s *Stage) carry(ctx context.Context, w Workload, ref Ref, kinds map[string]schema.GroupVersionKind) (typesv1beta1.DependencyStatus, error) {
	st := typesv1beta1.DependencyStatus{Kind: ref.Kind, Name: ref.Name, Optional: ref.Optional}
	federated, ok := kinds[ref.Kind]
	if !ok {
		st.State = typesv1beta1.DependencyKindNotEnabled
		st.Message = fmt.Sprintf("%s is not a federated kind here, so %s %q (%s) does not go with the workload: run fedwarden enable %s",
			ref.Kind, ref.Kind, ref.Name, where(ref), strings.ToLower(ref.Kind)+"s")
		return st, nil
	}
	ns := w.Object.GetNamespace()
	existing, err := s.derived(ctx, federated, ns, ref.Name)
	if err != nil {
		return failed(st, err)
	}
	if existing != nil && !IsDerived(existing) {
		st.State = typesv1beta1.DependencyExplicit
		st.Message = fmt.Sprintf("%s %q, which does not carry the label %s, places it: its placement wins over the workload's",
			federated.Kind, ref.Name, typesv1beta1.LabelDependency)
		return st, nil
	}
	host, err := s.hostObject(ctx, ref, ns, existing)
	s.missing.note(ref.Kind+"/"+ns+"/"+ref.Name, w.key(), apierrors.IsNotFound(err))
	if apierrors.IsNotFound(err) {
		st.State = typesv1beta1.DependencyMissing
		st.Message = fmt.Sprintf("%s %q (%s) does not exist in namespace %s on the host: the workload goes without it, and its Pods wait for it%s",
			ref.Kind, ref.Name, where(ref), ns, optional(ref))
		return st, nil
	}
	if err != nil {
		return failed(st, err)
	}
	owners, err := OwnersOf(orEmpty(existing))
	if err != nil {
		return failed(st, err)
	}
	owners[w.key()] = w.owner()
	desired, err := Derive(federated, ns, ref.Name, host, existing, owners)
	if err != nil {
		return failed(st, err)
	}
	if err := s.write(ctx, existing, desired); err != nil {
		return failed(st, withoutValues(ref, err))
	}
	st.State = typesv1beta1.DependencyPropagated
	return st, nil
}

// withoutValues is err, the API server's answer to a write of ref's
// derived resource, without its message when ref is a Secret: a refusal
// may quote the values it refused, and the message goes to the status,
// an Event and the log. Its reason and code stay, and so does what kind
// of error it is (a conflict is still a conflict).
func withoutValues(ref Ref, err error) error {
	if err == nil || ref.Kind != Secret {
		return err
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return fmt.Errorf("writing the FederatedSecret %q failed; the error is not shown, as it may quote the Secret", ref.Name)
	}
	st := status.Status()
	st.Message = fmt.Sprintf("writing the FederatedSecret %q: the API server refused it (%s, code %d); its message is not shown, as it may quote the Secret", ref.Name, st.Reason, st.Code)
	st.Details = nil
	return &apierrors.StatusError{ErrStatus: st}
}

func failed(st typesv1beta1.DependencyStatus, err error) (typesv1beta1.DependencyStatus, error) {
	st.State = typesv1beta1.DependencyFailed
	st.Message = err.Error()
	return st, err
}

func where(ref Ref) string { return "named by " + strings.Join(ref.From, ", ") }

func optional(ref Ref) string {
	if ref.Optional {
		return " (every place marks it optional)"
	}
	return ""
}

func orEmpty(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return &unstructured.Unstructured{}
	}
	return obj
}

// derived reads the federated resource of kind federated named name, from
// the cache; nil when there is none.
func (s *Stage) derived(ctx context.Context, federated schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(federated)
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s %s/%s: %w", federated.Kind, ns, name, err)
	}
	return obj, nil
}

// hostObject reads the host object ref names. When the metadata cache
// says it has not changed since existing's template was copied from it,
// the copy in existing serves, and nothing is read.
func (s *Stage) hostObject(ctx context.Context, ref Ref, ns string, existing *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: ref.Kind}
	key := client.ObjectKey{Namespace: ns, Name: ref.Name}
	if existing != nil && s.meta != nil {
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(gvk)
		if err := s.meta.Get(ctx, key, meta); err == nil &&
			meta.ResourceVersion == existing.GetAnnotations()[typesv1beta1.AnnotationDependencySource] {
			return nil, nil
		}
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := s.host.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("reading %s %s on the host: %w", ref.Kind, key, err)
	}
	return obj, nil
}

// write creates desired, or updates existing to it when they differ,
// conditional on the resourceVersion read. A created one carries the sync
// finalizer already, which its kind's controller, enabled (kinds), would
// otherwise add with a write of its own before its first copy.
func (s *Stage) write(ctx context.Context, existing, desired *unstructured.Unstructured) error {
	if existing == nil {
		controllerutil.AddFinalizer(desired, typesv1beta1.FinalizerSync)
		if err := s.client.Create(ctx, desired); err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", desired.GetKind(), desired.GetNamespace(), desired.GetName(), err)
		}
		return nil
	}
	// Derive leaves the status out, which the derived resource's own
	// controller writes: compared with it, every sync of an owner would
	// patch every derived resource for nothing. A shallow copy serves, as
	// neither the comparison nor the patch's diff changes it.
	base := &unstructured.Unstructured{Object: maps.Clone(existing.Object)}
	delete(base.Object, "status")
	if equality.Semantic.DeepEqual(base.Object, desired.Object) {
		return nil
	}
	if err := s.client.Patch(ctx, desired, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating %s %s/%s: %w", desired.GetKind(), desired.GetNamespace(), desired.GetName(), err)
	}
	return nil
}

// release takes the owner key off every derived resource in ns it owns.
func (s *Stage) release(ctx context.Context, ns, key string, kinds map[string]schema.GroupVersionKind) error {
	var errs []error
	for _, kind := range Kinds {
		federated, ok := kinds[kind]
		if !ok {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(federated.GroupVersion().WithKind(federated.Kind + "List"))
		// Copied: the host cache holds federated resources as JSON, which
		// only a copy decodes (hostcache.Hold). A release is rare: a
		// workload deleted, or no longer propagating its dependencies.
		if err := s.client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{typesv1beta1.LabelDependency: "true"}); err != nil {
			errs = append(errs, fmt.Errorf("listing %s in %s: %w", federated.Kind, ns, err))
			continue
		}
		for i := range list.Items {
			errs = append(errs, s.releaseOne(ctx, &list.Items[i], federated, kind, key))
		}
	}
	return errors.Join(errs...)
}

// releaseOne takes the owner key off obj, a derived resource, which it
// does not change.
func (s *Stage) releaseOne(ctx context.Context, obj *unstructured.Unstructured, federated schema.GroupVersionKind, kind, key string) error {
	owners, err := OwnersOf(obj)
	if err != nil {
		return err
	}
	if _, owned := owners[key]; !owned {
		return nil
	}
	delete(owners, key)
	if len(owners) == 0 {
		uid, rv := obj.GetUID(), obj.GetResourceVersion()
		err := s.client.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s/%s, which no workload needs any more: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
		return nil
	}
	desired, err := Derive(federated, obj.GetNamespace(), obj.GetName(), nil, obj, owners)
	if err != nil {
		return err
	}
	return withoutValues(Ref{Kind: kind, Name: obj.GetName()}, s.write(ctx, obj, desired))
}

// OwnersOfHost returns the names of the workloads of kind federated that
// own the derived resource of the host object kind/ns/name: those to sync
// when it changes.
func (s *Stage) OwnersOfHost(ctx context.Context, kind, ns, name string, federated schema.GroupVersionKind) []string {
	kinds, err := s.kinds(ctx)
	if err != nil {
		return nil
	}
	fk, ok := kinds[kind]
	if !ok {
		return nil
	}
	keys := s.missing.of(kind + "/" + ns + "/" + name)
	if obj, err := s.derived(ctx, fk, ns, name); err == nil && obj != nil && IsDerived(obj) {
		if owners, err := OwnersOf(obj); err == nil {
			for key := range owners {
				keys = append(keys, key)
			}
		}
	}
	prefix := OwnerKey(federated, "")
	var names []string
	for _, key := range keys {
		if n, ok := strings.CutPrefix(key, prefix); ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Again tells whether a workload whose dependencies are deps should be
// synced again after a while even without an event: one is missing on the
// host or of a kind not federated, which a restart's lost trigger or an
// enabled type would not otherwise bring back.
func Again(deps []typesv1beta1.DependencyStatus) bool {
	return slices.ContainsFunc(deps, func(d typesv1beta1.DependencyStatus) bool {
		return d.State == typesv1beta1.DependencyMissing || d.State == typesv1beta1.DependencyKindNotEnabled
	})
}
