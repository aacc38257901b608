package kindref

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// Target is a federated resource a command names: the host's client, the
// resource's kind and its key.
type Target struct {
	Client client.Client
	Kind   Kind
	Key    client.ObjectKey
}

// Open connects to the host src names, each request bounded by timeout,
// and resolves ref there, namespaced by namespace (the -n flag; the
// context's namespace when empty). A kubeconfig, namespace or kind that
// cannot be used is a usage error (exit 2); the host failing is not.
func Open(ctx context.Context, src kubeconfig.Source, ref Ref, namespace string, timeout time.Duration) (*Target, error) {
	host, err := kubeconfig.Load(src)
	if err != nil {
		return nil, streams.UsageError(err)
	}
	ns, err := kubeconfig.Namespace(namespace, src)
	if err != nil {
		return nil, streams.UsageError(err)
	}
	c, disco, err := host.Clients(timeout)
	if err != nil {
		return nil, err
	}
	resolver, err := NewResolver(ctx, c, disco)
	if err != nil {
		return nil, err
	}
	kind, err := resolver.Resolve(ref.Kind)
	switch {
	case errors.Is(err, ErrUnknownKind):
		return nil, streams.UsageError(err)
	case err != nil:
		return nil, err
	}
	return &Target{Client: c, Kind: kind, Key: kind.Key(ref.Name, ns)}, nil
}
