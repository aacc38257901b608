// Package kyverno measures how fast a member copy changed out of band is
// healed through Kyverno — Fedwarden under remediation Alert reports the
// drift in the ClusterPropagatedVersion, Kyverno's resync policy
// (deploy/kyverno/cel) sets kubefed.io/resync on the federated resource,
// Fedwarden re-applies — beside Fedwarden's own heal under remediation
// Enforce, on the same bed in the same run. Results and the command that
// reproduces them are in bench/kyverno/RESULTS.md.
package kyverno

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/kyverno/kyvernotest"
)

const (
	namespace = "bench"
	// edits is how many out-of-band edits each part makes, one at a time,
	// each to another object; smokeEdits in a smoke test (fedtest.Smoke).
	edits, smokeEdits = 20, 3
	// desiredImage is the image of every federated Deployment.
	desiredImage = "nginx:1.27"
	// editor is the field manager of the out-of-band edits.
	editor = "kubectl-edit"
	// waitLimit bounds every wait for one heal or one status.
	waitLimit = 2 * time.Minute
)

var (
	cpvResource        = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "clusterpropagatedversions"}
	fdResource         = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federateddeployments"}
	deploymentResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// bench is the bed and the watches the benchmark reads.
type bench struct {
	bed         *kyvernotest.Bed
	cluster     string
	member      kubernetes.Interface
	deployments *kyvernotest.Recorder // the member's, in namespace
	cpvs        *kyvernotest.Recorder // the host's, in namespace
	fds         *kyvernotest.Recorder // the host's, in namespace
}

// BenchmarkKyvernoHeal edits member copies out of band, 20 times for each
// part, alternating, one edit at a time, and measures the time from the
// edit's response until the member's watch sees the desired image back:
// "kyverno" for FederatedDeployments under remediation Alert (the
// controller-manager's default here), healed through Kyverno's resync
// policy; "enforce" for FederatedDeployments whose driftPolicy says
// Enforce, healed by Fedwarden alone. After each heal it waits until the
// CPV records it, so that every edit meets idle controllers. It fails
// unless every edit was healed and recorded, and Kyverno resynced none of
// the Enforce resources (Fedwarden heals them before the CPV could show a
// drift).
//
// With FEDWARDEN_BENCH_SMOKE=1 (fedtest.Smoke) each part makes 3 edits.
//
//	FEDWARDEN_BIN_DIR=$PWD/bin go test ./bench/kyverno/ -run '^$' -bench . -benchtime 1x -timeout 30m
func BenchmarkKyvernoHeal(b *testing.B) {
	edits := fedtest.BenchN(b, edits, smokeEdits)
	bn := start(b)
	kyverno := bn.federate(b, "kyverno", "", edits)
	enforce := bn.federate(b, "enforce", "Enforce", edits)
	for range b.N {
		var healedKyverno, healedEnforce []time.Duration
		for k := range edits {
			image := fmt.Sprintf("nginx:edit-%d", k)
			d, err := bn.heal(b.Context(), kyverno[k], image, true)
			if err != nil {
				b.Fatalf("kyverno, edit %d: %v\n%s", k, err, bn.bed.Logs())
			}
			healedKyverno = append(healedKyverno, d)
			if d, err = bn.heal(b.Context(), enforce[k], image, false); err != nil {
				b.Fatalf("enforce, edit %d: %v\n%s", k, err, bn.bed.Logs())
			}
			healedEnforce = append(healedEnforce, d)
		}
		report(b, "kyverno", healedKyverno)
		report(b, "enforce", healedEnforce)
		resynced := bn.resynced(enforce)
		b.ReportMetric(float64(resynced), "enforce-resynced-by-kyverno")
		if resynced != 0 {
			b.Fatalf("Kyverno resynced %d of the %d Enforce resources, want none", resynced, len(enforce))
		}
	}
}

// resynced counts the federated resources among names on which Kyverno
// has set kubefed.io/resync.
func (bn *bench) resynced(names []string) int {
	n := 0
	for _, name := range names {
		if fd, ok := bn.fds.Latest(name); ok && strings.HasPrefix(fd.GetAnnotations()["kubefed.io/resync"], "kyverno-") {
			n++
		}
	}
	return n
}

// start starts the bed with the CEL policies and the watches.
func start(b *testing.B) *bench {
	b.Helper()
	if testing.Short() {
		b.Skip("needs real API servers and Kyverno's controllers")
	}
	ctrllog.SetLogger(logr.Discard())
	dir, err := kyvernotest.LogDir(b)
	if err != nil {
		b.Fatal(err)
	}
	bed, err := kyvernotest.StartBed(b.Context(), dir, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bed.Stop() })
	deploy, err := kyvernotest.DeployDir()
	if err != nil {
		b.Fatal(err)
	}
	policies, err := kyvernotest.Read(filepath.Join(deploy, "cel", "report-drift.yaml"), filepath.Join(deploy, "cel", "resync-drift.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	if err := bed.Host.Create(b.Context(), policies); err != nil {
		b.Fatal(err)
	}
	if err := bed.Host.WaitReady(b.Context(), policies, waitLimit); err != nil {
		b.Fatal(err)
	}
	bn := &bench{bed: bed, cluster: bed.Clusters[0]}
	member := bed.Fed.Members[0].Config
	if bn.member, err = kubernetes.NewForConfig(fast(member)); err != nil {
		b.Fatal(err)
	}
	for _, cfg := range []*rest.Config{bed.Fed.Host.Config, member} {
		kc, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := kc.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	for _, w := range []struct {
		r   **kyvernotest.Recorder
		cfg *rest.Config
		gvr schema.GroupVersionResource
	}{{&bn.deployments, member, deploymentResource}, {&bn.cpvs, bed.Fed.Host.Config, cpvResource}, {&bn.fds, bed.Fed.Host.Config, fdResource}} {
		if *w.r, err = kyvernotest.Record(ctx, w.cfg, w.gvr, namespace); err != nil {
			b.Fatal(err)
		}
	}
	return bn
}

// fast lifts client-side rate limits: the benchmark paces itself.
func fast(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 5000, 10000
	return c
}

// federate creates prefix-0…n-1, FederatedDeployments on the member with
// the given remediation ("" for the default, Alert), and waits until the
// member has every copy and every CPV is InSync.
func (bn *bench) federate(b *testing.B, prefix, remediation string, n int) []string {
	b.Helper()
	var names []string
	var objs kyvernotest.Manifests
	for j := range n {
		name := fmt.Sprintf("%s-%d", prefix, j)
		names = append(names, name)
		objs = append(objs, federatedDeployment(name, bn.cluster, remediation))
	}
	if err := bn.bed.Host.Create(b.Context(), objs); err != nil {
		b.Fatal(err)
	}
	for _, name := range names {
		if _, _, err := bn.deployments.Wait(b.Context(), name, 0, waitLimit, func(d *unstructured.Unstructured) bool { return image(d) == desiredImage }); err != nil {
			b.Fatal(err)
		}
		if _, _, err := bn.cpvs.Wait(b.Context(), "deployment-"+name, 0, waitLimit, func(cpv *unstructured.Unstructured) bool { return state(cpv, bn.cluster) == "InSync" }); err != nil {
			b.Fatal(err)
		}
	}
	return names
}

func federatedDeployment(name, cluster, remediation string) *unstructured.Unstructured {
	labels := map[string]any{"app": "bench"}
	spec := map[string]any{
		"template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{
				"replicas": int64(1),
				"selector": map[string]any{"matchLabels": labels},
				"template": map[string]any{
					"metadata": map[string]any{"labels": labels},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": desiredImage}}},
				},
			},
		},
		"placement": map[string]any{"clusters": []any{map[string]any{"name": cluster}}},
	}
	if remediation != "" {
		spec["driftPolicy"] = map[string]any{"remediation": remediation}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     spec,
	}}
}

// heal edits the member's copy of name to img and returns the time from
// the edit's response until the member's watch saw the desired image back.
// Then it waits until the CPV is InSync at the healed copy (and, through
// Kyverno, has recorded the resync value set on the federated resource).
func (bn *bench) heal(ctx context.Context, name, img string, throughKyverno bool) (time.Duration, error) {
	generation, at, err := bn.edit(ctx, name, img)
	if err != nil {
		return 0, err
	}
	healed, _, err := bn.deployments.Wait(ctx, name, 0, waitLimit, func(d *unstructured.Unstructured) bool {
		return d.GetGeneration() > generation && image(d) == desiredImage
	})
	if err != nil {
		return 0, fmt.Errorf("not healed: %w", err)
	}
	_, _, err = bn.cpvs.Wait(ctx, "deployment-"+name, 0, waitLimit, func(cpv *unstructured.Unstructured) bool {
		return state(cpv, bn.cluster) == "InSync" && version(cpv, bn.cluster) == healed.Obj.GetResourceVersion() &&
			(!throughKyverno || bn.resyncRecorded(name, cpv))
	})
	if err != nil {
		return 0, fmt.Errorf("the heal was not recorded: %w", err)
	}
	return healed.At.Sub(at), nil
}

// resyncRecorded tells whether the CPV has recorded the resync value that
// Kyverno set on the federated resource name.
func (bn *bench) resyncRecorded(name string, cpv *unstructured.Unstructured) bool {
	fd, ok := bn.fds.Latest(name)
	if !ok {
		return false
	}
	want := fd.GetAnnotations()["kubefed.io/resync"]
	got, _, _ := unstructured.NestedString(cpv.Object, "status", "resync")
	return want != "" && got == want
}

// edit sets the image of the member's copy of name as kubectl edit would,
// and returns the edited generation and when the response came.
func (bn *bench) edit(ctx context.Context, name, img string) (int64, time.Time, error) {
	deployments := bn.member.AppsV1().Deployments(namespace)
	for {
		d, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return 0, time.Time{}, err
		}
		d.Spec.Template.Spec.Containers[0].Image = img
		edited, err := deployments.Update(ctx, d, metav1.UpdateOptions{FieldManager: editor})
		at := time.Now()
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return 0, at, err
		}
		return edited.Generation, at, nil
	}
}

func image(d *unstructured.Unstructured) string {
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return ""
	}
	c, _ := containers[0].(map[string]any)
	s, _ := c["image"].(string)
	return s
}

// entry returns the CPV's status.clusterVersions entry of cluster.
func entry(cpv *unstructured.Unstructured, cluster string) map[string]any {
	cvs, _, _ := unstructured.NestedSlice(cpv.Object, "status", "clusterVersions")
	for _, cv := range cvs {
		if m, ok := cv.(map[string]any); ok && m["clusterName"] == cluster {
			return m
		}
	}
	return map[string]any{}
}

func state(cpv *unstructured.Unstructured, cluster string) string {
	s, _ := entry(cpv, cluster)["state"].(string)
	return s
}

func version(cpv *unstructured.Unstructured, cluster string) string {
	s, _ := entry(cpv, cluster)["version"].(string)
	return s
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// report reports the p50, p99 and max of part's heal times, and logs them
// all.
func report(b *testing.B, part string, d []time.Duration) {
	b.ReportMetric(ms(percentile(d, .5)), part+"-healed-p50-ms")
	b.ReportMetric(ms(percentile(d, .99)), part+"-healed-p99-ms")
	b.ReportMetric(ms(slices.Max(d)), part+"-healed-max-ms")
	all := make([]string, 0, len(d))
	for _, x := range d {
		all = append(all, strconv.FormatFloat(ms(x), 'f', 0, 64))
	}
	b.Logf("%s: healed in (ms, in edit order) %v", part, all)
}
