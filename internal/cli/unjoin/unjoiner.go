package unjoin

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/cli/manifest"
	"github.com/fedwarden/fedwarden/internal/cli/streams"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// unjoiner removes one cluster.
type unjoiner struct {
	spec    registration.Spec // only the name and namespace
	member  client.Client
	host    client.Client
	out     io.Writer
	timeout time.Duration
}

func newUnjoiner(s streams.IO, o *options, member, host *kubeconfig.Cluster) (*unjoiner, error) {
	host.Config.Timeout = o.timeout
	hostClient, err := host.Client()
	if err != nil {
		return nil, err
	}
	memberClient, err := member.Client()
	if err != nil {
		return nil, err
	}
	return &unjoiner{
		spec:    registration.Spec{Name: o.name, Namespace: o.namespace},
		member:  memberClient,
		host:    hostClient,
		out:     s.ErrOut,
		timeout: o.timeout,
	}, nil
}

// unjoin removes the host side, then the member side, so that the control
// plane stops writing to the member before its credentials go.
func (u *unjoiner) unjoin(ctx context.Context) error {
	if err := u.removeHost(ctx); err != nil {
		return err
	}
	memberCtx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	left, err := u.removeMember(memberCtx)
	if err != nil {
		fmt.Fprintf(u.out, "%s: left on the member:\n", u.spec.Name)
		for _, obj := range left {
			fmt.Fprintf(u.out, "  %s\n", manifest.Describe(obj))
		}
		return &streams.ExitError{Code: exitMemberLeft, Err: fmt.Errorf(
			"the host side of %s was removed, but the member side could not be cleaned up: %w; "+
				"run `fedwarden unjoin %s` again, with the same flags, once the member is reachable", u.spec.Name, err, u.spec.Name)}
	}
	fmt.Fprintf(u.out, "%s: unjoined\n", u.spec.Name)
	return nil
}

// removeHost deletes the FederatedCluster and its credentials Secrets.
func (u *unjoiner) removeHost(ctx context.Context) error {
	host := registration.NewHost(u.spec, registration.Credentials{})
	secrets, err := u.credentialSecrets(ctx, host.Credentials)
	if err != nil {
		return err
	}
	for _, obj := range append([]client.Object{host.Cluster}, secrets...) {
		if err := u.delete(ctx, u.host, "host", obj); err != nil {
			return err
		}
	}
	return nil
}

// credentialSecrets returns the Secret the FederatedCluster names, if any,
// and the one join creates, once each.
func (u *unjoiner) credentialSecrets(ctx context.Context, ours *corev1.Secret) ([]client.Object, error) {
	cluster := &v1beta1.FederatedCluster{}
	err := u.host.Get(ctx, client.ObjectKey{Name: u.spec.Name}, cluster)
	switch {
	case apierrors.IsNotFound(err):
		return []client.Object{ours}, nil
	case err != nil:
		return nil, fmt.Errorf("reading FederatedCluster %s on the host: %w", u.spec.Name, err)
	}
	ref := cluster.Spec.SecretRef
	if ref == nil || ref.Name == ours.Name {
		return []client.Object{ours}, nil
	}
	// A Secret that join did not make for this cluster may be shared: it
	// is left alone.
	named := &corev1.Secret{}
	err = u.host.Get(ctx, client.ObjectKey{Namespace: ours.Namespace, Name: ref.Name}, named)
	if err != nil || named.Labels[v1beta1.LabelCluster] != u.spec.Name {
		return []client.Object{ours}, nil
	}
	return []client.Object{named, ours}, nil
}

// removeMember deletes the member's objects, those that refer to others
// first. On error it returns the objects it could not delete.
func (u *unjoiner) removeMember(ctx context.Context) ([]client.Object, error) {
	m := registration.NewMember(u.spec)
	objects := []client.Object{m.ClusterRoleBinding, m.ClusterRole, m.TokenSecret, m.ServiceAccount}
	for i, obj := range objects {
		if err := u.delete(ctx, u.member, "member", obj); err != nil {
			return objects[i:], err
		}
	}
	return nil, nil
}

// delete deletes obj from the side c, reporting whether it was there.
func (u *unjoiner) delete(ctx context.Context, c client.Client, side string, obj client.Object) error {
	err := c.Delete(ctx, obj)
	switch {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(u.out, "%s: %s was not found on the %s\n", u.spec.Name, manifest.Describe(obj), side)
	case err != nil:
		return fmt.Errorf("deleting %s on the %s: %w", manifest.Describe(obj), side, err)
	default:
		fmt.Fprintf(u.out, "%s: deleted %s on the %s\n", u.spec.Name, manifest.Describe(obj), side)
	}
	return nil
}
