package memberdiff

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

// Find reads from host the federated resource ref names in namespace, its
// ClusterPropagatedVersion (in controlPlane for a cluster-scoped one) and
// its drift policy: what comparing its copies, or changing what they are
// to be, starts from. `fedwarden diff` and `fedwarden drift codify` read
// it so. A resource the control plane has not placed yet, with no CPV, is
// an error that says so.
func Find(ctx context.Context, host client.Reader, disco discovery.DiscoveryInterface, ref kindref.Ref, namespace, controlPlane string) (kindref.Kind, *Resource, error) {
	resolver, err := kindref.NewResolver(ctx, host, disco)
	if err != nil {
		return kindref.Kind{}, nil, err
	}
	kind, err := resolver.Resolve(ref.Kind)
	if err != nil {
		return kindref.Kind{}, nil, err
	}
	fed, err := kind.Get(ctx, host, kind.Key(ref.Name, namespace))
	if err != nil {
		return kind, nil, err
	}
	describe := kind.Type.Federated.Kind + " " + cache.NewObjectName(fed.GetNamespace(), fed.GetName()).String()
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	cpvKey := propagation.CPVKey(kind.Type, fed, controlPlane)
	err = host.Get(ctx, cpvKey, cpv)
	switch {
	case apierrors.IsNotFound(err):
		return kind, nil, fmt.Errorf("%s has no ClusterPropagatedVersion %s yet: the control plane has not placed it (is `fedwarden controller-manager` running?)",
			describe, cache.ObjectName(cpvKey))
	case err != nil:
		return kind, nil, fmt.Errorf("reading ClusterPropagatedVersion %s: %w", cache.ObjectName(cpvKey), err)
	}
	res, err := NewResource(kind.Type, fed, cpv)
	if err != nil {
		return kind, nil, fmt.Errorf("%s: %w", describe, err)
	}
	return kind, res, nil
}
