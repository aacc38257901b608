// Package health measures how long a federated Deployment takes, from its
// create call, until every member's copy runs and the controller-manager
// records it Healthy in the ClusterPropagatedVersion, with members whose
// Pods really run: each member has a KWOK Node (fedtest.RunKWOK) that makes
// the Pods bound to it Running and Ready, and the Deployments available, as
// kubelets would. The baseline is a direct client writing the same
// Deployments to the members and waiting until they are available
// (`kubectl rollout status`), measured in the same run. Results and the
// command that reproduces them are in bench/RESULTS.md.
package health

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

const (
	// namespace holds the FederatedDeployments in the host, and their
	// copies in the members.
	namespace = "bench"
	// directNamespace holds the baseline's Deployments in the members.
	directNamespace = "direct"
	// members is how many member clusters the bed has.
	members = 3
	// bulkQPS is how many objects per second the bulk benchmark creates,
	// each way: the baseline writes each of them to the three members.
	bulkQPS = 20
	// maxWait bounds each wait: for one object to get everywhere, or for
	// every object of a bulk part.
	maxWait = 10 * time.Minute
)

// nodeRoom is the KWOK Node's allocatable in each member: room for the
// Pods of both parts (the Capacity plugin measures it, and rules out a
// member without room).
var nodeRoom = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("32"),
	corev1.ResourceMemory: resource.MustParse("256Gi"),
	corev1.ResourcePods:   resource.MustParse("1000"),
}

// bed is a host with three joined members, each with a KWOK Node, and a
// controller-manager run as `fedwarden controller-manager`, with every
// scheduler plugin.
type bed struct {
	fed  *localfed.Federation
	cm   *fedtest.ControllerManager
	host client.WithWatch
	// members are admin clients of the members, in fed.Members' order.
	members []kubernetes.Interface
	names   []string
}

func startBed(b *testing.B) *bed {
	b.Helper()
	// The host client is controller-runtime's, which otherwise complains,
	// with a stack trace, that nothing took its logs.
	ctrllog.SetLogger(logr.Discard())
	s := fedtest.SteadySettings
	fb := fedtest.StartBed(b, fedtest.Options{ControllerManager: &s, Join: true,
		KWOK: true, KWOKOptions: []fedtest.KWOKOption{fedtest.WithKWOKAllocatable(nodeRoom)},
		Federation: []localfed.Option{localfed.WithMembers(members)}})
	bd := &bed{fed: fb.Fed, cm: fb.CM}
	for _, m := range fb.Fed.Members {
		bd.members = append(bd.members, fedtest.MustKube(b, m.Config))
		bd.names = append(bd.names, m.Name)
	}
	bd.connectHost(b)
	bd.createNamespaces(b)
	fedtest.EnableDeployments(b, bd.host)
	return bd
}

// connectHost makes the host client, which watches the CPVs.
func (bd *bed) connectHost(b *testing.B) {
	b.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, corev1beta1.AddToScheme, typesv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			b.Fatal(err)
		}
	}
	var err error
	if bd.host, err = client.NewWithWatch(fedtest.Unthrottled(bd.fed.Host.Config), client.Options{Scheme: scheme}); err != nil {
		b.Fatal(err)
	}
}

// createNamespaces creates the namespaces beforehand, so that neither part
// waits for one.
func (bd *bed) createNamespaces(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	if err := bd.host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		b.Fatal(err)
	}
	for _, m := range bd.members {
		for _, ns := range []string{namespace, directNamespace} {
			if _, err := m.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkTimeToHealthy creates 50 objects one at a time and measures the
// time from the create call until the object runs everywhere: for
// Fedwarden, a FederatedDeployment placed on the three members until its
// CPV records the copy Healthy in all three; for the baseline, the same
// Deployment created by a direct client in the three members at once until
// it is available in all three. It fails unless every object got there
// within ten minutes, each member runs one Pod per object of each part,
// and the controller-manager wrote each member copy once (health changes
// write nothing to the members).
//
// With FEDWARDEN_BENCH_SMOKE=1 (fedtest.Smoke) it creates 5 objects of each.
//
//	go test ./bench/health/ -run '^$' -bench BenchmarkTimeToHealthy -benchtime 1x -timeout 60m
func BenchmarkTimeToHealthy(b *testing.B) {
	n := fedtest.BenchN(b, 50, 5)
	bd := startBed(b)
	b.ResetTimer()
	for round := range b.N {
		direct := bd.runDirect(b, names("direct", round, n), oneAtATime)
		federated := bd.runFederated(b, names("fed", round, n), oneAtATime)
		bd.check(b, n*(round+1))
		direct.report(b, "direct")
		federated.report(b, "fedwarden")
	}
}

// BenchmarkBulkToHealthy creates 300 objects at 20 per second and
// measures, per object, the time from the create call until the object
// runs everywhere (as BenchmarkTimeToHealthy), and the time from the first
// create until the last object does. The baseline writes each Deployment
// to the three members, 60 writes per second in all; Fedwarden gets 20
// FederatedDeployments per second. It fails as BenchmarkTimeToHealthy does.
//
// With FEDWARDEN_BENCH_SMOKE=1 (fedtest.Smoke) it creates 10 objects of
// each.
//
//	go test ./bench/health/ -run '^$' -bench BenchmarkBulkToHealthy -benchtime 1x -timeout 60m
func BenchmarkBulkToHealthy(b *testing.B) {
	n := fedtest.BenchN(b, 300, 10)
	bd := startBed(b)
	b.ResetTimer()
	for round := range b.N {
		direct := bd.runDirect(b, names("direct", round, n), paced)
		federated := bd.runFederated(b, names("fed", round, n), paced)
		bd.check(b, n*(round+1))
		direct.report(b, "direct")
		federated.report(b, "fedwarden")
		b.ReportMetric(direct.total.Seconds(), "direct-all-s")
		b.ReportMetric(federated.total.Seconds(), "fedwarden-all-s")
	}
}

// names are the n object names of one part and round.
func names(prefix string, round, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d-%d", prefix, round, i)
	}
	return out
}

// creator creates the objects of names with create, as one benchmark
// does: one at a time, or paced.
type creator func(b *testing.B, names []string, tr *tracker, create func(name string) error)

// oneAtATime creates each object once the one before has got everywhere.
func oneAtATime(b *testing.B, names []string, tr *tracker, create func(string) error) {
	b.Helper()
	for _, name := range names {
		done := tr.start(name)
		if err := create(name); err != nil {
			b.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(maxWait):
			b.Fatalf("%s did not get everywhere within %s: %s", name, maxWait, tr.progress(name))
		}
	}
}

// paced creates the objects at bulkQPS, then waits for them all.
func paced(b *testing.B, names []string, tr *tracker, create func(string) error) {
	b.Helper()
	err := fedtest.Paced(context.Background(), bulkQPS, len(names), func(i int) error {
		tr.start(names[i])
		return create(names[i])
	})
	if err != nil {
		b.Fatal(err)
	}
	tr.waitAll(b, names, maxWait)
}

// runDirect is the baseline: each Deployment written by a direct client to
// the three members at once, until it is available in all three.
func (bd *bed) runDirect(b *testing.B, names []string, create creator) *result {
	b.Helper()
	tr := newTracker(bd.names)
	tr.describe = bd.describeDirect
	stop := bd.watchRollouts(b, tr)
	defer stop()
	create(b, names, tr, func(name string) error {
		var wg sync.WaitGroup
		errs := make([]error, len(bd.members))
		for i, m := range bd.members {
			wg.Go(func() {
				_, errs[i] = m.AppsV1().Deployments(directNamespace).Create(context.Background(), deployment(directNamespace, name), metav1.CreateOptions{})
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	})
	return tr.result(names)
}

// runFederated creates the FederatedDeployments, placed on the three
// members, and waits until their CPVs record every copy Healthy.
func (bd *bed) runFederated(b *testing.B, names []string, create creator) *result {
	b.Helper()
	tr := newTracker([]string{"host"})
	tr.describe = bd.describeFederated
	stop := bd.watchCPVs(b, tr)
	defer stop()
	create(b, names, tr, func(name string) error {
		return bd.host.Create(context.Background(), federatedDeployment(namespace, name, bd.names))
	})
	return tr.result(names)
}

// podTemplate is the Pod of every Deployment: one container with small
// requests, on the KWOK Node (there is no kube-scheduler).
func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			NodeName: fedtest.KWOKNodeName,
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx:1.27",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("10m"),
					corev1.ResourceMemory: resource.MustParse("16Mi"),
				}},
			}},
		},
	}
}

// podLabels select the Pods of Deployment name alone, and mark them as
// the benchmark's, by part.
func podLabels(part, name string) map[string]string {
	return map[string]string{"app": name, "part": part}
}

// deployment is the baseline's Deployment name: one replica.
func deployment(namespace, name string) *appsv1.Deployment {
	labels := podLabels(directNamespace, name)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}
}

// federatedDeployment is a FederatedDeployment of the same Deployment,
// placed on clusters.
func federatedDeployment(namespace, name string, clusters []string) *typesv1beta1.FederatedDeployment {
	labels := podLabels(namespace, name)
	fd := &typesv1beta1.FederatedDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: typesv1beta1.FederatedDeploymentSpec{Template: typesv1beta1.DeploymentTemplate{Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		}}},
	}
	for _, c := range clusters {
		fd.Spec.Placement.Clusters = append(fd.Spec.Placement.Clusters, typesv1beta1.PlacementCluster{Name: typesv1beta1.ClusterName(c)})
	}
	return fd
}
