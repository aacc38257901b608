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
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// unjoiner removes one cluster.
type unjoiner struct {
	spec   registration.Spec // only the name and namespace
	member client.Client     // nil when its kubeconfig could not be loaded
	// memberErr says why the member's kubeconfig could not be loaded.
	memberErr error
	host      client.Client
	out       io.Writer
	timeout   time.Duration
	// memberGiven tells whether the command line named the member's
	// kubeconfig or context; without, a Pull cluster's member is left.
	memberGiven bool
}

func newUnjoiner(s streams.IO, o *options, member *kubeconfig.Cluster, memberErr error, host *kubeconfig.Cluster) (*unjoiner, error) {
	hostClient, err := host.Client(o.timeout)
	if err != nil {
		return nil, err
	}
	var memberClient client.Client
	if member != nil {
		if memberClient, err = member.Client(0); err != nil {
			return nil, err
		}
	}
	return &unjoiner{
		spec:      registration.Spec{Name: o.name, Namespace: o.namespace},
		member:    memberClient,
		memberErr: memberErr,
		host:      hostClient,
		out:       s.ErrOut,
		timeout:   o.timeout,

		memberGiven: o.memberGiven(),
	}, nil
}

// unjoin removes the host side, then the member side, so that the control
// plane stops writing to the member before its credentials go, and a Pull
// cluster's agent loses its rights on the host before it stops.
func (u *unjoiner) unjoin(ctx context.Context) error {
	cluster, err := u.cluster(ctx)
	if err != nil {
		return err
	}
	mode := syncModeOf(cluster)
	if u.member == nil && (mode != v1beta1.SyncModePull || u.memberGiven) {
		return streams.UsageError(u.memberErr) // nothing was changed
	}
	if err := u.removeHost(ctx, cluster, mode); err != nil {
		return err
	}
	if mode == v1beta1.SyncModePull && !u.memberGiven {
		fmt.Fprintf(u.out, "%s: the agent's objects in the member were left, as no --cluster-kubeconfig or --cluster-context was given; "+
			"it can no longer reach the host. Remove them with unjoin and the member's kubeconfig, or with:\n", u.spec.Name)
		fmt.Fprintf(u.out, "  kubectl -n %[1]s delete deployment/%[2]s secret/%[3]s serviceaccount/%[2]s && kubectl delete clusterrolebinding/%[2]s clusterrole/%[2]s\n",
			u.spec.Namespace, registration.AgentMemberServiceAccountName, registration.AgentHostKubeconfigSecretName)
		fmt.Fprintf(u.out, "%s: unjoined\n", u.spec.Name)
		return nil
	}
	memberCtx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	left, err := u.removeMember(memberCtx, mode)
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

// cluster reads the FederatedCluster; nil when it is gone.
func (u *unjoiner) cluster(ctx context.Context) (*v1beta1.FederatedCluster, error) {
	cluster := &v1beta1.FederatedCluster{}
	err := u.host.Get(ctx, client.ObjectKey{Name: u.spec.Name}, cluster)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading FederatedCluster %s on the host: %w", u.spec.Name, err)
	}
	return cluster, nil
}

// syncModeOf returns the sync mode of cluster, or "" when it is gone and
// the objects of both modes are to be removed.
func syncModeOf(cluster *v1beta1.FederatedCluster) v1beta1.SyncMode {
	switch {
	case cluster == nil:
		return ""
	case cluster.Spec.SyncMode == v1beta1.SyncModePull:
		return v1beta1.SyncModePull
	default:
		return v1beta1.SyncModePush
	}
}

// removeHost deletes the FederatedCluster, then, for a Push cluster, its
// credentials Secrets, for a Pull cluster, its agent's identity, rights and
// Lease; both when the FederatedCluster is gone. What every agent shares
// (the ClusterRole fedwarden:agent, the isolation policy) stays.
func (u *unjoiner) removeHost(ctx context.Context, cluster *v1beta1.FederatedCluster, mode v1beta1.SyncMode) error {
	host := registration.NewHost(u.spec, registration.Credentials{})
	objects := []client.Object{host.Cluster}
	if mode != v1beta1.SyncModePull {
		objects = append(objects, u.credentialSecrets(ctx, cluster, host.Credentials)...)
	}
	if mode != v1beta1.SyncModePush {
		objects = append(objects, registration.NewAgentHost(u.spec).Own()...)
	}
	for _, obj := range objects {
		if err := u.delete(ctx, u.host, "host", obj); err != nil {
			return err
		}
	}
	return nil
}

// credentialSecrets returns the Secret the FederatedCluster names, if any,
// and the one join creates, once each.
func (u *unjoiner) credentialSecrets(ctx context.Context, cluster *v1beta1.FederatedCluster, ours *corev1.Secret) []client.Object {
	if cluster == nil || cluster.Spec.SecretRef == nil || cluster.Spec.SecretRef.Name == ours.Name {
		return []client.Object{ours}
	}
	// A Secret that join did not make for this cluster may be shared: it
	// is left alone.
	named := &corev1.Secret{}
	err := u.host.Get(ctx, client.ObjectKey{Namespace: ours.Namespace, Name: cluster.Spec.SecretRef.Name}, named)
	if err != nil || named.Labels[v1beta1.LabelCluster] != u.spec.Name {
		return []client.Object{ours}
	}
	return []client.Object{named, ours}
}

// removeMember deletes the member's objects of mode (both when ""), those
// that refer to others first: for a Pull cluster, the agent's Deployment
// first. On error it returns the objects it could not delete.
func (u *unjoiner) removeMember(ctx context.Context, mode v1beta1.SyncMode) ([]client.Object, error) {
	var objects []client.Object
	if mode != v1beta1.SyncModePull {
		m := registration.NewMember(u.spec)
		objects = append(objects, m.ClusterRoleBinding, m.ClusterRole, m.TokenSecret, m.ServiceAccount)
	}
	if mode != v1beta1.SyncModePush {
		objects = append(objects, registration.NewAgentMember(u.spec, "", nil).Own()...)
	}
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
