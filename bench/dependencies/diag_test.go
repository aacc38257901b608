//go:build depdiag

package dependencies

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Temporary diagnosis (not kept): (c) the same 9N copies from explicit
// FederatedConfigMaps/Secrets and plain workloads, and a CPU profile of the
// controller-manager over (b). FEDWARDEN_BENCH_ARGS must set
// --pprof-bind-address to DEPDIAG_PPROF.
func BenchmarkDependenciesDiag(b *testing.B) {
	n := fedtest.BenchN(b, 1000, 20)
	bd := startBed(b)
	for _, c := range append([]string{""}, bd.clusters...) {
		cfg := bd.fb.Fed.Host.Config
		if c != "" {
			cfg = bd.fb.Fed.Member(c).Config
		}
		if _, err := fedtest.MustKube(b, cfg).CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "explicit"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	bd.warmUp(b)
	if os.Getenv("DEPDIAG_ORDER") != "deps-first" {
		bd.measureExplicit(b, n)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Get("http://" + os.Getenv("DEPDIAG_PPROF") + "/debug/pprof/profile?seconds=" + os.Getenv("DEPDIAG_SECONDS"))
		if err != nil {
			logf("profile: %v", err)
			return
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		_ = os.WriteFile("/tmp/depdiag-cm.pprof", data, 0o600)
	}()
	bd.measure(b, depsNamespace, n, true)
	<-done
	if os.Getenv("DEPDIAG_ORDER") == "deps-first" {
		bd.measureExplicit(b, n)
	}
}

func (bd *bed) measureExplicit(b *testing.B, n int) {
	ctx := b.Context()
	ns := "explicit"
	gvrs := []schema.GroupVersionResource{deployments, configMaps, secrets}
	want := n * len(bd.members)
	w, err := watchCreated(ctx, bd.members, ns, gvrs, want)
	if err != nil {
		b.Fatal(err)
	}
	defer w.stop()
	placement := []any{}
	for _, c := range bd.clusters {
		placement = append(placement, map[string]any{"name": c})
	}
	fed := func(kind, name string, template map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "types.kubefed.io/v1beta1", "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"template": template, "placement": map[string]any{"clusters": placement}},
		}}
	}
	start := time.Now()
	if err := fedtest.Paced(ctx, qps, n, func(i int) error {
		name := name(i)
		if err := bd.fb.Host.Create(ctx, fed("FederatedConfigMap", name+"-config", map[string]any{"data": map[string]any{"mode": "blue"}})); err != nil {
			return err
		}
		if err := bd.fb.Host.Create(ctx, fed("FederatedSecret", name+"-secret", map[string]any{"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("bench-" + name))}})); err != nil {
			return err
		}
		return bd.fb.Host.Create(ctx, workload(ns, name, false, bd.clusters))
	}); err != nil {
		b.Fatal(err)
	}
	select {
	case <-w.all:
	case <-time.After(deadline(n, 3)):
		b.Fatalf("explicit: %s", w)
	}
	logf("explicit: %d workloads + %d FederatedConfigMaps + %d FederatedSecrets, %d copies in %.1f s (Deployments %.1f s)",
		n, n, n, want*3, time.Since(start).Seconds(), w.lastOf(deployments).Sub(start).Seconds())
	bd.checkCopies(b, ns, gvrs, n)
	_ = fmt.Sprint()
}

// BenchmarkDependenciesBin is BenchmarkDependencies with the fedwarden
// binary DEPDIAG_BIN.
func BenchmarkDependenciesBin(b *testing.B) {
	n := fedtest.BenchN(b, 1000, 20)
	ctrllog.SetLogger(logr.Discard())
	s := fedtest.SteadySettings
	s.Args = []string{"--propagate-dependencies"}
	fb := fedtest.StartBed(b, fedtest.Options{Bin: os.Getenv("DEPDIAG_BIN"),
		ControllerManager: &s, Join: true, Unthrottled: true,
		Enable:     []string{"deployments.apps", "configmaps", "secrets"},
		Federation: []localfed.Option{localfed.WithMembers(3), localfed.WithControllers(memberControllers()...)},
	})
	bd := &bed{fb: fb}
	kubes := []kubernetes.Interface{fedtest.MustKube(b, fb.Fed.Host.Config)}
	for _, m := range fb.Fed.Members {
		kubes = append(kubes, fedtest.MustKube(b, m.Config))
		mc, _ := metadata.NewForConfig(fedtest.Unthrottled(m.Config))
		bd.members = append(bd.members, mc)
		bd.clusters = append(bd.clusters, m.Name)
	}
	for _, c := range kubes {
		for _, ns := range []string{plainNamespace, depsNamespace, warmNamespace} {
			if _, err := c.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	bd.warmUp(b)
	plain := bd.measure(b, plainNamespace, n, false)
	deps := bd.measure(b, depsNamespace, n, true)
	logf("RESULT bin=%s plain %.1f s deps %.1f s ratio %.2f", os.Getenv("DEPDIAG_BIN"), plain.converge.Seconds(), deps.converge.Seconds(), deps.converge.Seconds()/plain.converge.Seconds())
}
