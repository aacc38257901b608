package memberdiff

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/egress"
)

// ErrPullCluster: the host keeps no credentials for a Pull cluster; its
// agent reports in the CPV instead.
var ErrPullCluster = errors.New("a Pull cluster: the host keeps no credentials to read it")

// Members reaches member clusters with the credentials the host keeps for
// them, read with the caller's identity in the host, as the controller
// reads them with its own.
type Members struct {
	// namespace is the control-plane namespace, which holds the Secrets.
	namespace string
	cache     *clustercache.Cache
}

// NewMembers returns the members of a host whose control-plane namespace
// is namespace. Members are reached only at networks (any address when
// empty), with userAgent.
func NewMembers(namespace string, networks egress.Networks, userAgent string) *Members {
	return &Members{namespace: namespace, cache: clustercache.New(clustercache.Options{UserAgent: userAgent, Networks: networks, Log: logr.Discard()})}
}

// Get returns the clients of the named cluster, reading its
// FederatedCluster and credentials from host. Their TLS configuration
// verifies the member's certificate: with the cluster's CA bundle, else
// the system roots. Like the controller's, they exist only when the
// credentials Secret is bound to the cluster, its endpoint and CA bundle
// (clustercache.Load refuses otherwise), so a token is never sent where an
// edited FederatedCluster points. Clients are kept for the next call with
// the same credentials, which must be read from host again each time.
func (m *Members) Get(ctx context.Context, host client.Reader, name string) (*clustercache.Member, error) {
	fc := &corev1beta1.FederatedCluster{}
	err := host.Get(ctx, client.ObjectKey{Name: name}, fc)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("cluster %s is not joined: there is no FederatedCluster %s in the host", name, name)
	case err != nil:
		return nil, fmt.Errorf("reading FederatedCluster %s: %w", name, err)
	}
	if fc.Spec.SyncMode == corev1beta1.SyncModePull {
		return nil, fmt.Errorf("cluster %s: %w", name, ErrPullCluster)
	}
	conn, err := clustercache.Load(ctx, host, m.namespace, fc)
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("reading the credentials of cluster %s: %w; members are read with the credentials the host keeps for them: "+
			"your identity in the host needs get on Secrets in namespace %s", name, err, m.namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the credentials of cluster %s: %w", name, err)
	}
	member, _, err := m.cache.Set(name, conn)
	return member, err
}
