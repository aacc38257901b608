// Package pull_test runs the differential test of plan
// (test/plandiff) on a bed whose member-2 is a Pull cluster: the host has
// no credentials for it, and its agent, running in this process with the
// identities `fedwarden join --sync-mode Pull` made, writes its copies.
// The bed of internal/cli/plan has two Push members, which its tests count.
package pull_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/test/poll"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/agent"
	"github.com/fedwarden/fedwarden/internal/cli/enable"
	"github.com/fedwarden/fedwarden/internal/cli/join"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/inprocess"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/notify"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/plandiff"
)

// startTimeout bounds the start of the bed, its joins and its agent.
const startTimeout = 5 * time.Minute

// TestPlanAgreesWithTheControllerOnAPullMember: for 27 generated cases,
// plan's prediction for the Push member-1 and the Pull member-2 is what
// the host's controller and member-2's agent then do. Hand edits are made
// in member-2 when it has a copy.
func TestPlanAgreesWithTheControllerOnAPullMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real etcd and kube-apiserver processes")
	}
	b := startPullBed(t)
	plandiff.Run(t, b, plandiff.Options{
		// Seed 3 has hand edits under Alert that the change lets the agent
		// heal or leaves, which plan mispredicts for a Pull cluster.
		Seed: plandiff.Seed(t, 3), Cases: 27, Batches: 3, Pull: []string{plandiff.Member2}, EditIn: plandiff.Member2,
		Require: []string{plandiff.PullPredicted, plandiff.AlertEdit, plandiff.EnforceEdit, plandiff.Waves, plandiff.Created, plandiff.Updated, plandiff.Deleted, plandiff.Held, plandiff.OverDrift},
	})
}

// startPullBed starts a federation of member-1, joined in Push mode, and
// member-2, joined in Pull mode with its agent running; the host's
// propagation controller of Deployments runs. All of it stops when t ends.
func startPullBed(t *testing.T) *inprocess.Bed {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	begin := time.Now()
	b, err := inprocess.Start(ctx, "plan-pull", localfed.WithMemberNames(plandiff.Member1, plandiff.Member2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(t.Failed()); err != nil {
			t.Error(err)
		}
	})
	if err := startControllers(ctx, b); err != nil {
		t.Fatal(err)
	}
	host := b.Fed.Host.Kubeconfig
	if _, stderr, code := clitest.Execute(join.NewCommand, plandiff.Member1, "--host-kubeconfig", host, "--cluster-kubeconfig", b.Fed.Members[0].Kubeconfig, "--timeout", "2m"); code != 0 {
		t.Fatalf("joining %s: exit code %d:\n%s", plandiff.Member1, code, stderr)
	}
	agentHost := filepath.Join(t.TempDir(), "agent-host.kubeconfig")
	if _, stderr, code := clitest.Execute(join.NewCommand, plandiff.Member2, "--host-kubeconfig", host, "--cluster-kubeconfig", b.Fed.Members[1].Kubeconfig,
		"--sync-mode", "Pull", "--agent-kubeconfig", agentHost, "--wait=false"); code != 0 {
		t.Fatalf("joining %s in Pull mode: exit code %d:\n%s", plandiff.Member2, code, stderr)
	}
	startAgent(ctx, t, b, agentHost)
	poll.Eventually(t, startTimeout, plandiff.Member2+" to be Ready from its agent's Lease", func(ctx context.Context) (bool, string) {
		fc := &corev1beta1.FederatedCluster{}
		if err := b.Host.Get(ctx, client.ObjectKey{Name: plandiff.Member2}, fc); err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(fc.Status.Conditions, corev1beta1.ClusterReady), fmt.Sprintf("%+v", fc.Status.Conditions)
	})
	t.Logf("the bed started in %s", time.Since(begin).Round(time.Millisecond))
	return b
}

// startControllers enables Deployments and runs their propagation
// controller on the host.
func startControllers(ctx context.Context, b *inprocess.Bed) error {
	if _, stderr, code := clitest.Execute(enable.NewCommand, "deployments.apps", "--host-kubeconfig", b.Fed.Host.Kubeconfig); code != 0 {
		return fmt.Errorf("enabling deployments.apps: exit code %d:\n%s", code, stderr)
	}
	ftc := &corev1beta1.FederatedTypeConfig{}
	if err := b.Host.Get(ctx, client.ObjectKey{Name: "deployments.apps"}, ftc); err != nil {
		return err
	}
	return b.StartManager(func(mgr ctrl.Manager, members *clustercache.Cache) error {
		opts := propagation.DefaultOptions()
		opts.Namespace = inprocess.ControlPlaneNamespace
		c, err := propagation.New(mgr, propagation.TypeFromConfig(ftc), members, nil, nil, opts)
		if err != nil {
			return err
		}
		return mgr.Add(c)
	})
}

// startAgent runs member-2's agent in this process, as `fedwarden agent`
// runs it: on the host as the identity join made (agentHost), in the
// member as the agent's ServiceAccount there. It stops when t ends, before
// the bed.
func startAgent(ctx context.Context, t *testing.T, b *inprocess.Bed, agentHost string) {
	t.Helper()
	hostConfig, err := clientcmd.BuildConfigFromFlags("", agentHost)
	if err != nil {
		t.Fatal(err)
	}
	agentMember := filepath.Join(t.TempDir(), "agent-member.kubeconfig")
	if err := fedtest.WriteAgentMemberKubeconfig(ctx, b.Fed.Members[1], agentMember); err != nil {
		t.Fatal(err)
	}
	memberConfig, err := clientcmd.BuildConfigFromFlags("", agentMember)
	if err != nil {
		t.Fatal(err)
	}
	opts := agent.Options{
		Cluster: plandiff.Member2, Namespace: inprocess.ControlPlaneNamespace, Holder: "plan-pull-test",
		LeaseDuration: 20 * time.Second, RenewInterval: 2 * time.Second,
		Metrics: metricsserver.Options{BindAddress: "0"}, ProbeAddr: "0",
		Propagation: propagation.DefaultOptions(), Notify: notify.DefaultOptions(),
	}
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	agentCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.Run(agentCtx, hostConfig, memberConfig, opts) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("the agent: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("the agent did not stop within a minute")
		}
	})
}
