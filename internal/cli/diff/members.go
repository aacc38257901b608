package diff

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

// errPullCluster: the host keeps no credentials for a Pull cluster; its
// agent reports in the CPV instead.
var errPullCluster = errors.New("a Pull cluster: the host keeps no credentials to read it")

// members reaches member clusters with the credentials the host keeps for
// them, read with the user's identity in the host, as the controller reads
// them with its own.
type members struct {
	host client.Reader
	// namespace is the control-plane namespace, which holds the Secrets.
	namespace string
	cache     *clustercache.Cache
}

func newMembers(host client.Reader, namespace string, networks egress.Networks) *members {
	return &members{host: host, namespace: namespace, cache: clustercache.New(clustercache.Options{UserAgent: "fedwarden-diff", Networks: networks, Log: logr.Discard()})}
}

// get returns the clients of the named cluster. Their TLS configuration
// verifies the member's certificate: with the cluster's CA bundle, else
// the system roots. Like the controller's, they exist only when the
// credentials Secret is bound to the cluster, its endpoint and CA bundle
// (clustercache.Load refuses otherwise), so diff never sends a token where
// an edited FederatedCluster points.
func (m *members) get(ctx context.Context, name string) (*clustercache.Member, error) {
	fc := &corev1beta1.FederatedCluster{}
	err := m.host.Get(ctx, client.ObjectKey{Name: name}, fc)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("cluster %s is not joined: there is no FederatedCluster %s in the host", name, name)
	case err != nil:
		return nil, fmt.Errorf("reading FederatedCluster %s: %w", name, err)
	}
	if fc.Spec.SyncMode == corev1beta1.SyncModePull {
		return nil, fmt.Errorf("cluster %s: %w", name, errPullCluster)
	}
	conn, err := clustercache.Load(ctx, m.host, m.namespace, fc)
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("reading the credentials of cluster %s: %w; diff reads members with the credentials the host keeps for them: "+
			"your identity in the host needs get on Secrets in namespace %s", name, err, m.namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the credentials of cluster %s: %w", name, err)
	}
	member, _, err := m.cache.Set(name, conn)
	return member, err
}
