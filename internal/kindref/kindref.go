// Package kindref reads a federated resource as the command line names it,
// KIND/NAME, and resolves KIND to the federated kind a FederatedTypeConfig
// enables, as kubectl resolves kinds. resync, diff, rollout and plan name
// their resource this way. It also resolves the group and kind of a
// manifest, as plan -f reads it, to its federated kind.
package kindref

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

// ErrUnknownKind says that a name names no federated kind of the host.
var ErrUnknownKind = errors.New("unknown federated kind")

// Ref is a federated resource as the command line names it: KIND/NAME.
type Ref struct {
	Kind, Name string
}

// ParseRef parses KIND/NAME.
func ParseRef(arg string) (Ref, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || strings.TrimSpace(kind) == "" || name == "" || strings.Contains(name, "/") {
		return Ref{}, fmt.Errorf("%q is not KIND/NAME, such as federateddeployment/web", arg)
	}
	return Ref{Kind: kind, Name: name}, nil
}

// Kind is a federated kind that a FederatedTypeConfig enables.
type Kind struct {
	// Config is the FederatedTypeConfig.
	Config *corev1beta1.FederatedTypeConfig
	// Type is what propagation makes of it.
	Type propagation.Type
}

// Key returns the key of the federated resource called name, of namespace
// when the federated kind is namespaced.
func (k Kind) Key(name, namespace string) client.ObjectKey {
	if !k.Type.FederatedNamespaced {
		namespace = ""
	}
	return client.ObjectKey{Namespace: namespace, Name: name}
}

// Get reads the federated resource of kind k at key from the host; its
// errors name the resource: "FederatedDeployment shop/web not found in the
// host", or "reading FederatedDeployment shop/web: …".
func (k Kind) Get(ctx context.Context, host client.Reader, key client.ObjectKey) (*unstructured.Unstructured, error) {
	fed := &unstructured.Unstructured{}
	fed.SetGroupVersionKind(k.Type.Federated)
	err := host.Get(ctx, key, fed)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s %s not found in the host", k.Type.Federated.Kind, cache.ObjectName(key))
	case err != nil:
		return nil, fmt.Errorf("reading %s %s: %w", k.Type.Federated.Kind, cache.ObjectName(key), err)
	}
	return fed, nil
}

// Describe names a federated resource as kubectl does: its lower-case kind
// and group, and its name (federateddeployment.types.kubefed.io/web).
func (k Kind) Describe(name string) string {
	gvk := k.Type.Federated
	return strings.ToLower(gvk.Kind) + "." + gvk.Group + "/" + name
}

// Resolver finds the federated kind a name names, as kubectl finds kinds:
// by the host's discovery, plural, singular, kind or short name, in any
// case, with an optional .group; only kinds a FederatedTypeConfig
// federates, or targets, count. A target kind (deployment) names its
// Federated<Kind>.
type Resolver struct {
	// Mapper maps resource names to kinds.
	Mapper meta.RESTMapper
	// Configs are the host's FederatedTypeConfigs.
	Configs []corev1beta1.FederatedTypeConfig
}

// NewResolver reads the host's discovery and FederatedTypeConfigs.
func NewResolver(ctx context.Context, host client.Reader, disco discovery.DiscoveryInterface) (*Resolver, error) {
	list := &corev1beta1.FederatedTypeConfigList{}
	if err := host.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing FederatedTypeConfigs: %w", err)
	}
	cached := memory.NewMemCacheClient(disco)
	groups, err := restmapper.GetAPIGroupResources(cached)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovering the host's resources: %w", err)
	}
	mapper := restmapper.NewShortcutExpander(restmapper.NewDiscoveryRESTMapper(groups), cached, nil)
	return &Resolver{Mapper: mapper, Configs: list.Items}, nil
}

// Resolve returns the federated kind arg names. A name the host does not
// serve, or whose kind nothing federates, gives an error wrapping
// ErrUnknownKind.
func (r *Resolver) Resolve(arg string) (Kind, error) {
	name := strings.ToLower(strings.TrimSpace(arg))
	gvks, err := r.kindsFor(name)
	if err != nil || len(gvks) == 0 {
		return Kind{}, fmt.Errorf("%w %q: the host serves no such resource (federated kinds: %s)", ErrUnknownKind, arg, r.federatedKinds(strings.ToLower))
	}
	var found []*corev1beta1.FederatedTypeConfig
	for _, gvk := range gvks {
		for i := range r.Configs {
			ftc := &r.Configs[i]
			if (federates(ftc, gvk.GroupKind()) || targets(ftc, gvk.GroupKind())) && !slices.Contains(found, ftc) {
				found = append(found, ftc)
			}
		}
	}
	switch len(found) {
	case 0:
		return Kind{}, fmt.Errorf("%w %q: %s is not federated: no FederatedTypeConfig names it (federated kinds: %s)",
			ErrUnknownKind, arg, gvks[0].GroupKind(), r.federatedKinds(strings.ToLower))
	case 1:
		return Kind{Config: found[0], Type: propagation.TypeFromConfig(found[0])}, nil
	default:
		names := make([]string, 0, len(found))
		for _, ftc := range found {
			names = append(names, strings.ToLower(ftc.Spec.FederatedType.Kind)+"."+ftc.Spec.FederatedType.Group)
		}
		return Kind{}, fmt.Errorf("%w %q: it names several federated kinds (%s): add the group", ErrUnknownKind, arg, strings.Join(names, ", "))
	}
}

// ByFederatedKind returns the federated kind gk is, as a manifest's
// apiVersion and kind name it: the one a FederatedTypeConfig federates as
// gk exactly. Unlike Resolve, it takes no other spelling and no target
// kind, since a manifest's kind is exact. When no FederatedTypeConfig
// federates gk, the error wraps ErrUnknownKind.
func (r *Resolver) ByFederatedKind(gk schema.GroupKind) (Kind, error) {
	for i := range r.Configs {
		if ftc := &r.Configs[i]; federates(ftc, gk) {
			return Kind{Config: ftc, Type: propagation.TypeFromConfig(ftc)}, nil
		}
	}
	return Kind{}, fmt.Errorf("%w %s.%s: no FederatedTypeConfig federates it (federated kinds: %s)",
		ErrUnknownKind, gk.Kind, gk.Group, r.federatedKinds(func(kind string) string { return kind }))
}

// kindsFor maps name, resource[.version][.group], to kinds as kubectl
// does: resource.version.group first, then resource.group.
func (r *Resolver) kindsFor(name string) ([]schema.GroupVersionKind, error) {
	gvr, gr := schema.ParseResourceArg(name)
	if gvr != nil {
		if gvks, err := r.Mapper.KindsFor(*gvr); err == nil && len(gvks) > 0 {
			return gvks, nil
		}
	}
	return r.Mapper.KindsFor(gr.WithVersion(""))
}

// federatedKinds lists the federated kinds for error messages, sorted,
// each as spell spells it: lower case for a name the user types, as is
// for a manifest's kind.
func (r *Resolver) federatedKinds(spell func(kind string) string) string {
	var kinds []string
	for _, ftc := range r.Configs {
		kinds = append(kinds, spell(ftc.Spec.FederatedType.Kind))
	}
	if len(kinds) == 0 {
		return "none; `fedwarden enable` federates one"
	}
	slices.Sort(kinds)
	return strings.Join(slices.Compact(kinds), ", ")
}

func federates(ftc *corev1beta1.FederatedTypeConfig, gk schema.GroupKind) bool {
	return ftc.Spec.FederatedType.Group == gk.Group && ftc.Spec.FederatedType.Kind == gk.Kind
}

func targets(ftc *corev1beta1.FederatedTypeConfig, gk schema.GroupKind) bool {
	return ftc.Spec.TargetType.Group == gk.Group && ftc.Spec.TargetType.Kind == gk.Kind
}
