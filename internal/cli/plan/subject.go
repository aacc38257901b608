package plan

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/render"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// subject is the federated resource being planned, and what the host says
// of it.
type subject struct {
	kind kindref.Kind
	// fed is the resource as planned: the manifest of -f, or the host's.
	fed  *unstructured.Unstructured
	spec render.Spec
	// exists: the host has the resource (for -f: a change, not a create).
	exists bool
	// current is the resource as the host has it; nil when it does not.
	current *unstructured.Unstructured
	// fromFile: fed is a manifest.
	fromFile bool
	// cpv is its ClusterPropagatedVersion; empty (no resourceVersion) when
	// it has none yet, or has an earlier resource's.
	cpv *typesv1beta1.ClusterPropagatedVersion
	// waiting says what the controller waits for before it writes
	// anything for the resource; empty when nothing.
	waiting string
}

// describe names the resource in messages: FederatedDeployment shop/web.
func (s *subject) describe() string {
	return s.kind.Type.Federated.Kind + " " + cache.NewObjectName(s.fed.GetNamespace(), s.fed.GetName()).String()
}

// subjects reads the resources to plan: the manifests of -f, or the one
// o.ref names, in namespace. The place stage then sees the manifests as
// applied (overlay).
func (p *planner) subjects(ctx context.Context, o *options, manifests []manifest.Object, namespace string) ([]*subject, error) {
	resolver, err := kindref.NewResolver(ctx, p.host, p.disco)
	if err != nil {
		return nil, err
	}
	p.configs = resolver.Configs
	if len(manifests) == 0 {
		s := &subject{}
		if err := p.fromHost(ctx, s, resolver, o.ref, namespace); err != nil {
			return nil, err
		}
		return []*subject{s}, p.read(ctx, s)
	}
	var out []*subject
	for _, m := range manifests {
		s := &subject{}
		if err := p.fromManifest(ctx, s, resolver, m, o.namespace, namespace); err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(out, func(o *subject) bool { return o.describe() == s.describe() }); i >= 0 {
			return nil, streams.UsageError(fmt.Errorf("-f %s: %s is planned twice: %s holds it too", m.Source, s.describe(), manifests[i].Source))
		}
		if err := p.read(ctx, s); err != nil {
			return nil, err
		}
		out = append(out, s)
		p.planned = append(p.planned, s.fed)
	}
	return out, nil
}

// read checks that the controller syncs s at all, and reads its spec and
// its ClusterPropagatedVersion.
func (p *planner) read(ctx context.Context, s *subject) error {
	if reason, msg := propagation.OutOfReach(s.kind.Type, s.fed); reason != "" {
		return fmt.Errorf("%s: %s", s.describe(), msg)
	}
	spec, err := render.ParseSpec(s.fed)
	if err != nil {
		return fmt.Errorf("%s: %w", s.describe(), err)
	}
	s.spec = spec
	return p.readCPV(ctx, s)
}

// fromManifest plans the manifest's object, in the namespace it names,
// else in namespace; flagNamespace, -n, must not contradict it.
func (p *planner) fromManifest(ctx context.Context, s *subject, resolver *kindref.Resolver, m manifest.Object, flagNamespace, namespace string) error {
	gvk := m.Obj.GroupVersionKind()
	kind, err := resolver.ByFederatedKind(gvk.GroupKind())
	if err != nil {
		return streams.UsageError(fmt.Errorf("-f %s: %w", m.Source, err))
	}
	if v := kind.Type.Federated.Version; gvk.Version != v {
		return streams.UsageError(fmt.Errorf("-f %s: %s is served as %s/%s here, not %s", m.Source, gvk.Kind, gvk.Group, v, gvk.Version))
	}
	if own := m.Obj.GetNamespace(); own != "" && kind.Type.FederatedNamespaced {
		if flagNamespace != "" && flagNamespace != own {
			return streams.UsageError(fmt.Errorf("-f %s: the object is in namespace %s, -n says %s", m.Source, own, flagNamespace))
		}
		namespace = own
	}
	key := kind.Key(m.Obj.GetName(), namespace)
	s.kind, s.fed, s.fromFile = kind, m.Obj.DeepCopy(), true
	s.fed.SetNamespace(key.Namespace)
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(kind.Type.Federated)
	err = p.host.Get(ctx, key, live)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading %s: %w", s.describe(), err)
	default:
		// The controller stamps copies with the host's resource's UID.
		s.exists, s.current = true, live
		s.fed.SetUID(live.GetUID())
	}
	return nil
}

// fromHost plans the host's resource ref.
func (p *planner) fromHost(ctx context.Context, s *subject, resolver *kindref.Resolver, ref kindref.Ref, namespace string) error {
	kind, err := resolver.Resolve(ref.Kind)
	if err != nil {
		return err
	}
	fed, err := kind.Get(ctx, p.host, kind.Key(ref.Name, namespace))
	if err != nil {
		return err
	}
	s.kind, s.fed, s.current, s.exists = kind, fed, fed, true
	return nil
}

// readCPV reads the resource's ClusterPropagatedVersion, if it has one.
func (p *planner) readCPV(ctx context.Context, s *subject) error {
	key := propagation.CPVKey(s.kind.Type, s.fed, p.controlPlane)
	s.cpv = &typesv1beta1.ClusterPropagatedVersion{}
	err := p.host.Get(ctx, key, s.cpv)
	switch {
	case apierrors.IsNotFound(err):
		s.cpv = &typesv1beta1.ClusterPropagatedVersion{}
	case err != nil:
		return fmt.Errorf("reading ClusterPropagatedVersion %s: %w", cache.ObjectName(key), err)
	}
	if earlier := propagation.EarlierOwner(s.cpv, s.fed); earlier != nil {
		// The controller writes nothing until the garbage collector has
		// deleted it, then starts without it.
		s.waiting = earlier.Error() + ": the controller writes nothing until the garbage collector has deleted it; planned as for a resource without one"
		s.cpv = &typesv1beta1.ClusterPropagatedVersion{}
	}
	return nil
}
