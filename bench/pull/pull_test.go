// Package pull measures how fast a resource reaches a Pull member through
// its agent, beside a Push member written by the host's controller-manager
// and a direct client, on the same clusters in the same run. Results and
// the command that reproduces them are in bench/RESULTS.md.
package pull

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

const namespace = "bench"

// bed is a host with a Push member (push-1) and a Pull member (pull-1) whose
// agent runs as a process with the identities join created.
type bed struct {
	fed        *localfed.Federation
	host       client.Client
	push, pull kubernetes.Interface
	// cm is the host's controller-manager, agent pull-1's agent.
	cm, agent *fedtest.ControllerManager
}

func startBed(b *testing.B) *bed {
	b.Helper()
	ctrllog.SetLogger(logr.Discard())
	s := fedtest.SteadySettings
	// Both joins wait until their cluster is Ready: pull-1 once its agent
	// renews its Lease.
	fb := fedtest.StartBed(b, fedtest.Options{ControllerManager: &s, Join: true, Pull: []string{"pull-1"}, Unthrottled: true,
		Federation: []localfed.Option{localfed.WithMemberNames("push-1", "pull-1")}})
	f, ctx := fb.Fed, context.Background()
	bd := &bed{fed: f, host: fb.Host, push: fedtest.MustKube(b, f.Members[0].Config), pull: fedtest.MustKube(b, f.Members[1].Config), cm: fb.CM, agent: fb.Agents["pull-1"]}
	fedtest.EnableDeployments(b, bd.host)
	for _, kc := range []kubernetes.Interface{fedtest.MustKube(b, f.Host.Config), bd.push, bd.pull} {
		if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	return bd
}

// writes is the apply writes p (the controller-manager or the agent) has
// made to cluster, once the count has stopped moving for a second: a
// member's watch may show an object before the writer has counted it.
func (bd *bed) writes(b *testing.B, p *fedtest.ControllerManager, cluster string) float64 {
	return p.SettledSum(b, "fedwarden_member_writes_total", `cluster="`+cluster+`"`, `verb="apply"`)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkCreateLatency creates 200 objects of each kind one at a time,
// taking turns, and measures from the create call until the member's watch
// shows the Deployment: a FederatedDeployment placed on the Push member
// (the host's controller-manager writes it), one placed on the Pull member
// (its agent writes it), and, as the baseline, a Deployment created directly
// in the Pull member. It fails unless every object arrived, each Push copy
// was written once by the controller-manager and each Pull copy once by the
// agent, and the controller-manager wrote nothing to the Pull member.
//
// With FEDWARDEN_BENCH_SMOKE=1 (fedtest.Smoke) it creates 5 of each.
//
//	go test ./bench/pull/ -run '^$' -bench BenchmarkCreateLatency -benchtime 1x -timeout 30m
func BenchmarkCreateLatency(b *testing.B) {
	n := fedtest.BenchN(b, 200, 5)
	bd := startBed(b)
	ctx := context.Background()
	for range b.N {
		pushBefore, pullBefore := bd.writes(b, bd.cm, "push-1"), bd.writes(b, bd.agent, "pull-1")
		// One watch per member: a name arrives in one of them.
		inPush, stopPush, err := fedtest.WatchArrivals(ctx, namespace, []kubernetes.Interface{bd.push}, -1)
		if err != nil {
			b.Fatal(err)
		}
		inPull, stopPull, err := fedtest.WatchArrivals(ctx, namespace, []kubernetes.Interface{bd.pull}, -1)
		if err != nil {
			b.Fatal(err)
		}
		var push, pull, direct []time.Duration
		measure := func(name string, create func() error) time.Duration {
			a := inPull
			if strings.HasPrefix(name, "push-") || name == "warm-push" {
				a = inPush
			}
			arrived := a.Expect(name)
			start := time.Now()
			if err := create(); err != nil {
				b.Fatal(err)
			}
			select {
			case <-arrived:
			case <-time.After(time.Minute):
				b.Fatalf("%s did not arrive within a minute", name)
			}
			return time.Since(start)
		}
		// A first object through each path, not measured: informers start.
		measure("warm-push", func() error {
			return bd.host.Create(ctx, fedtest.BenchFederatedDeployment(namespace, "warm-push", "push-1"))
		})
		measure("warm-pull", func() error {
			return bd.host.Create(ctx, fedtest.BenchFederatedDeployment(namespace, "warm-pull", "pull-1"))
		})
		for i := range n {
			name := fmt.Sprintf("push-%d", i)
			push = append(push, measure(name, func() error { return bd.host.Create(ctx, fedtest.BenchFederatedDeployment(namespace, name, "push-1")) }))
			name = fmt.Sprintf("pull-%d", i)
			pull = append(pull, measure(name, func() error { return bd.host.Create(ctx, fedtest.BenchFederatedDeployment(namespace, name, "pull-1")) }))
			name = fmt.Sprintf("direct-%d", i)
			direct = append(direct, measure(name, func() error {
				_, err := bd.pull.AppsV1().Deployments(namespace).Create(ctx, fedtest.BenchDeployment(namespace, name), metav1.CreateOptions{})
				return err
			}))
		}
		stopPush()
		stopPull()
		// n objects of each path and one to warm it up.
		if pushed, pulled, fromHost := bd.writes(b, bd.cm, "push-1")-pushBefore, bd.writes(b, bd.agent, "pull-1")-pullBefore, bd.writes(b, bd.cm, "pull-1"); pushed != float64(n+1) || pulled != float64(n+1) || fromHost != 0 {
			b.Fatalf("member writes for %d new copies in each member: %v to push-1 by the controller-manager and %v to pull-1 by its agent, want one each; %v to pull-1 by the controller-manager, want 0", n+1, pushed, pulled, fromHost)
		}
		b.ReportMetric(ms(fedtest.Percentile(direct, .5)), "direct-p50-ms")
		b.ReportMetric(ms(fedtest.Percentile(direct, .99)), "direct-p99-ms")
		b.ReportMetric(ms(fedtest.Percentile(push, .5)), "push-p50-ms")
		b.ReportMetric(ms(fedtest.Percentile(push, .99)), "push-p99-ms")
		b.ReportMetric(ms(fedtest.Percentile(pull, .5)), "pull-p50-ms")
		b.ReportMetric(ms(fedtest.Percentile(pull, .99)), "pull-p99-ms")
	}
}
