package plan

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/kindref"
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
	return s.kind.Type.Federated.Kind + " " + describeKey(s.fed.GetNamespace(), s.fed.GetName())
}

// subject reads the resource to plan: manifest, or the one o.ref names, in
// namespace.
func (p *planner) subject(ctx context.Context, o *options, manifest *manifestObject, namespace string) (*subject, error) {
	resolver, err := kindref.NewResolver(ctx, p.host, p.disco)
	if err != nil {
		return nil, err
	}
	p.configs = resolver.Configs
	s := &subject{}
	if manifest != nil {
		err = p.fromManifest(ctx, s, resolver, manifest, o.namespace, namespace)
	} else {
		err = p.fromHost(ctx, s, resolver, o.ref, namespace)
	}
	if err != nil {
		return nil, err
	}
	if reason, msg := outOfReach(s.kind.Type, s.fed); reason != "" {
		return nil, fmt.Errorf("%s: %s", s.describe(), msg)
	}
	if s.spec, err = render.ParseSpec(s.fed); err != nil {
		return nil, fmt.Errorf("%s: %w", s.describe(), err)
	}
	return s, p.readCPV(ctx, s)
}

// fromManifest plans the manifest's object, in the namespace it names,
// else in namespace; flagNamespace, -n, must not contradict it.
func (p *planner) fromManifest(ctx context.Context, s *subject, resolver *kindref.Resolver, m *manifestObject, flagNamespace, namespace string) error {
	gvk := m.obj.GroupVersionKind()
	kind, err := kindOf(resolver, gvk.Group, gvk.Kind)
	if err != nil {
		return streams.UsageError(fmt.Errorf("-f %s: %w", m.file, err))
	}
	if v := kind.Type.Federated.Version; gvk.Version != v {
		return streams.UsageError(fmt.Errorf("-f %s: %s is served as %s/%s here, not %s", m.file, gvk.Kind, gvk.Group, v, gvk.Version))
	}
	if own := m.obj.GetNamespace(); own != "" && kind.Type.FederatedNamespaced {
		if flagNamespace != "" && flagNamespace != own {
			return streams.UsageError(fmt.Errorf("-f %s: the object is in namespace %s, -n says %s", m.file, own, flagNamespace))
		}
		namespace = own
	}
	key := kind.Key(m.obj.GetName(), namespace)
	s.kind, s.fed, s.fromFile = kind, m.obj.DeepCopy(), true
	s.fed.SetNamespace(key.Namespace)
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(kind.Type.Federated)
	err = p.host.Get(ctx, key, live)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading %s: %w", s.describe(), err)
	default:
		s.exists, s.current = true, live
	}
	return nil
}

// fromHost plans the host's resource ref.
func (p *planner) fromHost(ctx context.Context, s *subject, resolver *kindref.Resolver, ref kindref.Ref, namespace string) error {
	kind, err := resolver.Resolve(ref.Kind)
	if err != nil {
		return err
	}
	key := kind.Key(ref.Name, namespace)
	s.kind, s.fed, s.exists = kind, &unstructured.Unstructured{}, true
	s.fed.SetGroupVersionKind(kind.Type.Federated)
	err = p.host.Get(ctx, key, s.fed)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s not found in the host", kind.Type.Federated.Kind, describeKey(key.Namespace, key.Name))
	case err != nil:
		return fmt.Errorf("reading %s %s: %w", kind.Type.Federated.Kind, describeKey(key.Namespace, key.Name), err)
	}
	s.current = s.fed
	return nil
}

// readCPV reads the resource's ClusterPropagatedVersion, if it has one.
func (p *planner) readCPV(ctx context.Context, s *subject) error {
	key := client.ObjectKey{Namespace: s.fed.GetNamespace(), Name: s.kind.Type.CPVName(s.fed.GetName())}
	if key.Namespace == "" {
		key.Namespace = p.controlPlane
	}
	s.cpv = &typesv1beta1.ClusterPropagatedVersion{}
	err := p.host.Get(ctx, key, s.cpv)
	switch {
	case apierrors.IsNotFound(err):
		s.cpv = &typesv1beta1.ClusterPropagatedVersion{}
	case err != nil:
		return fmt.Errorf("reading ClusterPropagatedVersion %s: %w", describeKey(key.Namespace, key.Name), err)
	}
	owner := s.fed
	if s.current != nil {
		owner = s.current
	}
	if earlier := propagation.EarlierOwner(s.cpv, owner); earlier != nil {
		// The controller writes nothing until the garbage collector has
		// deleted it, then starts without it.
		s.waiting = earlier.Error() + ": the controller writes nothing until the garbage collector has deleted it; planned as for a resource without one"
		s.cpv = &typesv1beta1.ClusterPropagatedVersion{}
	}
	return nil
}

// kindOf returns the federated kind group/kind a FederatedTypeConfig
// federates.
func kindOf(resolver *kindref.Resolver, group, kind string) (kindref.Kind, error) {
	var kinds []string
	for i := range resolver.Configs {
		ftc := &resolver.Configs[i]
		f := ftc.Spec.FederatedType
		if f.Group == group && f.Kind == kind {
			return kindref.Kind{Config: ftc, Type: propagation.TypeFromConfig(ftc)}, nil
		}
		kinds = append(kinds, f.Kind)
	}
	known := "none; `fedwarden enable` federates one"
	if len(kinds) > 0 {
		known = strings.Join(kinds, ", ")
	}
	return kindref.Kind{}, fmt.Errorf("%w %s.%s: no FederatedTypeConfig federates it (federated kinds: %s)", kindref.ErrUnknownKind, kind, group, known)
}

// outOfReach tells why the controller would sync nothing of fed, as
// propagation does for a FederatedNamespace that is not named after its
// namespace or that federates a system namespace.
func outOfReach(typ propagation.Type, fed *unstructured.Unstructured) (reason, message string) {
	if !typ.IsNamespace() {
		return "", ""
	}
	name, namespace := fed.GetName(), fed.GetNamespace()
	switch {
	case typ.FederatedNamespaced && name != namespace:
		return typesv1beta1.ReasonNameNotNamespace, fmt.Sprintf("a %s federates the namespace it lives in, and this one is named %s in namespace %s: "+
			"the controller syncs nothing of it", typ.Federated.Kind, name, namespace)
	case strings.HasPrefix(name, "kube-"):
		return typesv1beta1.ReasonSystemNamespace, fmt.Sprintf("%s is a Kubernetes system namespace: Fedwarden never writes it in a member", name)
	}
	return "", ""
}

func describeKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
