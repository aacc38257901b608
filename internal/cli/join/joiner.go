package join

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// Poll intervals of the waits.
const (
	tokenPollInterval = 250 * time.Millisecond
	readyPollInterval = time.Second
)

// joiner joins one cluster.
type joiner struct {
	spec    registration.Spec
	member  *applier
	host    *applier
	out     io.Writer // progress
	stdout  io.Writer // the member's manifest, with --print-agent-manifest
	wait    bool
	timeout time.Duration
	agent   agentSettings // Pull only
}

func newJoiner(s streams.IO, o *options, spec registration.Spec, member, host *kubeconfig.Cluster) (*joiner, error) {
	memberClient, err := member.Client(o.timeout)
	if err != nil {
		return nil, err
	}
	hostClient, err := host.Client(o.timeout)
	if err != nil {
		return nil, err
	}
	return &joiner{
		spec:    spec,
		member:  &applier{Applier: manifest.Applier{Client: memberClient, Side: "member"}, cluster: spec.Name, out: s.ErrOut},
		host:    &applier{Applier: manifest.Applier{Client: hostClient, Side: "host"}, cluster: spec.Name, out: s.ErrOut},
		out:     s.ErrOut,
		stdout:  s.Out,
		wait:    o.wait,
		timeout: o.timeout,
		agent: agentSettings{
			kubeconfig:    o.agentKubeconfig,
			image:         o.agentImage,
			printManifest: o.printAgentManifest,
			host:          registration.HostEndpoint{Server: cmp.Or(o.agentHostServer, host.Server), CAData: host.CAData, TLSServerName: host.TLSServerName},
		},
	}, nil
}

func (j *joiner) join(ctx context.Context) error {
	if err := j.refuseSecondName(ctx); err != nil {
		return err
	}
	if j.spec.SyncMode == v1beta1.SyncModePull {
		return j.joinPull(ctx)
	}
	if err := j.applyMember(ctx); err != nil {
		return err
	}
	creds, err := j.waitForToken(ctx)
	if err != nil {
		return err
	}
	if err := j.applyHost(ctx, creds); err != nil {
		return err
	}
	return j.finish(ctx)
}

// finish waits for the cluster to be Ready, if asked to.
func (j *joiner) finish(ctx context.Context) error {
	if !j.wait {
		fmt.Fprintf(j.out, "%s: joined; not waiting for it to be Ready\n", j.spec.Name)
		return nil
	}
	return j.waitForReady(ctx)
}

// applyMember applies the member's objects, in order.
func (j *joiner) applyMember(ctx context.Context) error {
	for _, obj := range registration.NewMember(j.spec).Objects() {
		if _, err := j.member.apply(ctx, obj, fieldOwner); err != nil {
			return err
		}
	}
	return nil
}

// waitForToken waits until the member's token controller has filled in the
// token Secret, and returns what the host needs of it.
func (j *joiner) waitForToken(ctx context.Context) (registration.Credentials, error) {
	key := client.ObjectKey{Namespace: j.spec.Namespace, Name: registration.TokenSecretName(j.spec.Name)}
	token, err := j.member.waitForToken(ctx, key, j.timeout)
	// The CA the host trusts is the one of the member's kubeconfig (none:
	// the system roots), not the token Secret's ca.crt, which is the
	// cluster's internal root CA and need not sign its serving certificate.
	return registration.Credentials{Token: token, CA: j.spec.CABundle}, err
}

// waitForToken waits until the token controller of a's cluster has filled
// in the ServiceAccount token Secret key, and returns the token. A failed
// read is tried again until the timeout, like an empty token.
func (a *applier) waitForToken(ctx context.Context, key client.ObjectKey, timeout time.Duration) ([]byte, error) {
	var (
		token   []byte
		read    bool
		lastErr error
	)
	err := wait.PollUntilContextTimeout(ctx, tokenPollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		secret := &corev1.Secret{}
		if lastErr = a.Client.Get(ctx, key, secret); lastErr != nil {
			return false, nil
		}
		read = true
		token = secret.Data[corev1.ServiceAccountTokenKey]
		return len(token) > 0, nil
	})
	switch {
	case err == nil:
		return token, nil
	case lastErr != nil && !read:
		return nil, fmt.Errorf("reading Secret %s on the %s: %w", key, a.Side, lastErr)
	default:
		return nil, fmt.Errorf("the %s's token controller did not fill in Secret %s within %s: is kube-controller-manager running in the %s?",
			a.Side, key, timeout, a.Side)
	}
}

// applyHost applies the host's objects, in order, then makes the
// FederatedCluster own the credentials Secret.
func (j *joiner) applyHost(ctx context.Context, creds registration.Credentials) error {
	h := registration.NewHost(j.spec, creds)
	for _, obj := range []client.Object{h.Namespace, h.Credentials} {
		if _, err := j.host.apply(ctx, obj, fieldOwner); err != nil {
			return err
		}
	}
	applied, err := j.host.apply(ctx, h.Cluster, fieldOwner)
	if err != nil {
		return err
	}
	cluster := &v1beta1.FederatedCluster{}
	cluster.Name, cluster.UID = applied.GetName(), applied.GetUID()
	_, err = j.host.apply(ctx, registration.CredentialsOwner(j.spec, cluster), ownerFieldOwner)
	return err
}

// waitForReady waits until the FederatedCluster is Ready, reporting each
// new state of its Ready condition. A failed read is tried again until the
// timeout.
func (j *joiner) waitForReady(ctx context.Context) error {
	fmt.Fprintf(j.out, "%s: waiting up to %s for FederatedCluster %s to be Ready\n", j.spec.Name, j.timeout, j.spec.Name)
	var (
		last    *readyState
		lastErr error
	)
	err := wait.PollUntilContextTimeout(ctx, readyPollInterval, j.timeout, true, func(ctx context.Context) (bool, error) {
		cluster := &v1beta1.FederatedCluster{}
		if lastErr = j.host.Client.Get(ctx, client.ObjectKey{Name: j.spec.Name}, cluster); lastErr != nil {
			return false, nil
		}
		now := newReadyState(cluster)
		if last == nil || *now != *last {
			fmt.Fprintf(j.out, "%s: %s\n", j.spec.Name, now)
		}
		last = now
		if now.reason == v1beta1.ReasonDuplicateCluster {
			// Joined under two names at once: waiting changes nothing.
			return false, fmt.Errorf("FederatedCluster %s: %s", j.spec.Name, now.message)
		}
		return now.ready(), nil
	})
	switch {
	case err == nil:
		fmt.Fprintf(j.out, "%s: joined and Ready\n", j.spec.Name)
		return nil
	case lastErr != nil && last == nil:
		return fmt.Errorf("reading FederatedCluster %s on the host: %w", j.spec.Name, lastErr)
	case last != nil && last.reason == v1beta1.ReasonDuplicateCluster:
		return err
	default:
		hint := "is `fedwarden controller-manager` running against this host?"
		if j.spec.SyncMode == v1beta1.SyncModePull {
			hint = fmt.Sprintf("is `fedwarden controller-manager` running against this host, and the agent in the member "+
				"(kubectl -n %s get deployment %s)?", j.spec.Namespace, registration.AgentDeploymentName)
		}
		return fmt.Errorf("FederatedCluster %s is not Ready after %s: %s; %s", j.spec.Name, j.timeout, last, hint)
	}
}

// readyState is what a FederatedCluster's Ready condition says.
type readyState struct {
	found                   bool
	status, reason, message string
}

func newReadyState(cluster *v1beta1.FederatedCluster) *readyState {
	c := meta.FindStatusCondition(cluster.Status.Conditions, v1beta1.ClusterReady)
	if c == nil {
		return &readyState{}
	}
	return &readyState{found: true, status: string(c.Status), reason: c.Reason, message: c.Message}
}

func (r *readyState) ready() bool { return r.status == "True" }

func (r *readyState) String() string {
	switch {
	case r == nil || !r.found:
		return "it has no Ready condition yet"
	case r.message == "":
		return fmt.Sprintf("Ready is %s (%s)", r.status, r.reason)
	default:
		return fmt.Sprintf("Ready is %s (%s): %s", r.status, r.reason, r.message)
	}
}
