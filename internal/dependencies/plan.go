package dependencies

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Change is what a change of a workload does to one of its dependencies,
// before and after it: where its copies are added and removed, as Sync
// would decide.
type Change struct {
	typesv1beta1.DependencyStatus
	// Adds and Removes are the clusters that gain or lose a copy of it.
	Adds    []string
	Removes []string
}

// Plan says what Sync (or Release) would do to the dependencies when the
// workload changes from before (nil when it does not exist, or does not
// propagate its dependencies) to after (nil when it is deleted, or stops
// propagating them). It only reads.
func (s *Stage) Plan(ctx context.Context, before, after *Workload) ([]Change, error) {
	kinds, err := s.kinds(ctx)
	if err != nil {
		return nil, err
	}
	named := map[string]Ref{}
	var afterRefs map[string]bool
	for _, w := range []*Workload{before, after} {
		if w == nil {
			continue
		}
		refs, err := w.refs()
		if err != nil {
			return nil, err
		}
		if w == after {
			afterRefs = map[string]bool{}
		}
		for _, r := range refs {
			named[r.Kind+"/"+r.Name] = r
			if w == after {
				afterRefs[r.Kind+"/"+r.Name] = true
			}
		}
	}
	keys := make([]string, 0, len(named))
	for k := range named {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var changes []Change
	for _, k := range keys {
		w := after
		if w == nil || !afterRefs[k] {
			w = before
		}
		c, err := s.planOne(ctx, *w, named[k], kinds, after != nil && afterRefs[k], after)
		if err != nil {
			return nil, err
		}
		changes = append(changes, c)
	}
	return changes, nil
}

// refs are the dependencies w's pod template names.
func (w Workload) refs() ([]Ref, error) {
	template, _, err := unstructured.NestedMap(w.Object.Object, "spec", "template")
	if err != nil {
		return nil, fmt.Errorf("reading spec.template: %w", err)
	}
	return Find(w.Target, template)
}

// planOne is Plan for one dependency ref of w; needed says whether the
// workload after the change names it (after).
func (s *Stage) planOne(ctx context.Context, w Workload, ref Ref, kinds map[string]schema.GroupVersionKind, needed bool, after *Workload) (Change, error) {
	c := Change{DependencyStatus: typesv1beta1.DependencyStatus{Kind: ref.Kind, Name: ref.Name, Optional: ref.Optional, State: typesv1beta1.DependencyPropagated}}
	federated, ok := kinds[ref.Kind]
	if !ok {
		c.State = typesv1beta1.DependencyKindNotEnabled
		return c, nil
	}
	ns := w.Object.GetNamespace()
	existing, err := s.derived(ctx, federated, ns, ref.Name)
	if err != nil {
		return c, err
	}
	if existing != nil && !IsDerived(existing) {
		c.State = typesv1beta1.DependencyExplicit
		return c, nil
	}
	owners, err := OwnersOf(orEmpty(existing))
	if err != nil {
		return c, err
	}
	if needed {
		if _, err := s.hostObject(ctx, ref, ns, nil); apierrors.IsNotFound(err) {
			c.State = typesv1beta1.DependencyMissing
			return c, nil
		} else if err != nil {
			return c, err
		}
	}
	was := owners.clusters()
	next := Owners{}
	for k, o := range owners {
		next[k] = o
	}
	delete(next, w.key())
	if needed {
		next[w.key()] = after.owner()
	}
	will := next.clusters()
	for _, cl := range will {
		if !slices.Contains(was, cl) {
			c.Adds = append(c.Adds, cl)
		}
	}
	for _, cl := range was {
		if !slices.Contains(will, cl) {
			c.Removes = append(c.Removes, cl)
		}
	}
	return c, nil
}
