package bulk

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/test/fedtest"
)

// kubefedSyncWorkers is KubeFed's sync workers in the benchmark, set in
// its KubeFedConfig (KubeFed has no flag for them); its chart's default
// is 1.
const kubefedSyncWorkers = 8

// runKubeFed, on a bed without Fedwarden's CRDs, installs KubeFed
// (fedtest.KubeFedSetup: its CRDs, KubeFedConfig, the FederatedTypeConfigs
// of namespaces and Deployments, a KubeFedCluster and token Secret per
// member) with kubefedSyncWorkers, runs its controller-manager and
// measures it. The bed is stopped before it returns.
func runKubeFed(b *testing.B, p params, bd *bed) result {
	ctx := context.Background()
	defer bd.stop(b)
	logf("KubeFed's bed is up: a host without Fedwarden's CRDs and %d members", p.members)
	if _, err := fedtest.KubeFedSetup(ctx, p.binDir, bd.fed, "namespaces", "deployments.apps"); err != nil {
		b.Fatal(err)
	}
	config := &unstructured.Unstructured{}
	config.SetGroupVersionKind(schema.GroupVersionKind{Group: "core.kubefed.io", Version: "v1beta1", Kind: "KubeFedConfig"})
	patch := fmt.Appendf(nil, `{"spec":{"syncController":{"maxConcurrentReconciles":%d}}}`, kubefedSyncWorkers)
	config.SetNamespace(fedtest.KubeFedNamespace)
	config.SetName("kubefed")
	if err := bd.host.Patch(ctx, config, client.RawPatch(types.MergePatchType, patch)); err != nil {
		b.Fatal(err)
	}
	logf("KubeFed's CRDs, KubeFedConfig (%d sync workers), FederatedTypeConfigs and KubeFedClusters are in", kubefedSyncWorkers)
	kf, err := fedtest.StartKubeFed(p.binDir, bd.fed.Host.Kubeconfig, bd.dir)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if n := kf.Stop(); n > 0 {
			logf("KubeFed's controller-manager logged %d errors (%s)", n, kf.LogPath)
		}
	}()
	if err := fedtest.WaitKubeFedClustersReady(ctx, bd.fed, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	logf("KubeFed runs, its clusters are Ready")
	// KubeFed propagates a namespaced resource only into a namespace that
	// is federated.
	var placement []any
	for _, c := range bd.clusters {
		placement = append(placement, map[string]any{"name": c})
	}
	fns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedNamespace",
		"metadata": map[string]any{"name": namespace, "namespace": namespace},
		"spec":     map[string]any{"placement": map[string]any{"clusters": placement}},
	}}
	if err := bd.host.Create(ctx, fns); err != nil {
		b.Fatal(err)
	}
	s := &system{name: "KubeFed", bd: bd, pid: kf.PID(),
		afterBulk: func() { logQueueMetrics(b, "KubeFed, the moment the bulk's last copy appeared", kf.MetricsURL) }}
	r := s.measure(b, p)
	logQueueMetrics(b, "KubeFed, after the latency right after the bulk", kf.MetricsURL)
	return r
}
