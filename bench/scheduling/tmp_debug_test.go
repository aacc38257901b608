package scheduling

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

func BenchmarkTmpDebug(b *testing.B) {
	bd := startBed(b)
	ctx := context.Background()
	n := 300
	for i := range n {
		if hasPreference(i) {
			if err := bd.host.Create(ctx, preferenceOf(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range n {
		fed, _ := federatedDeployment(i)
		if err := bd.host.Create(ctx, fed); err != nil {
			b.Fatal(err)
		}
	}
	bd.waitScheduled(b, n)
	for k := range 4 {
		h0, _ := scrapeHistogram(ctx, bd.cm.MetricsURL, "fedwarden_scheduling_duration_seconds")
		w0, _, _ := bd.cm.Sum(ctx, "fedwarden_member_writes_total", `verb="apply"`)
		time.Sleep(10 * time.Second)
		h1, _ := scrapeHistogram(ctx, bd.cm.MetricsURL, "fedwarden_scheduling_duration_seconds")
		w1, _, _ := bd.cm.Sum(ctx, "fedwarden_member_writes_total", `verb="apply"`)
		fmt.Fprintf(os.Stderr, "period %d: decisions %v applies %v\n", k, h1.count-h0.count, w1-w0)
	}
	var list typesv1beta1.ClusterPropagatedVersionList
	if err := bd.host.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		b.Fatal(err)
	}
	states := map[string]int{}
	for _, cpv := range list.Items {
		for _, c := range cpv.Status.Conditions {
			states[c.Type+"="+string(c.Status)+"/"+c.Reason]++
		}
	}
	fmt.Fprintf(os.Stderr, "cpv conditions: %v\n", states)
	for _, cpv := range list.Items[:3] {
		fmt.Fprintf(os.Stderr, "%s: %+v\n", cpv.Name, cpv.Status)
	}
	data, _ := os.ReadFile(bd.cm.LogPath)
	os.WriteFile("/tmp/schedbench/cm.log", data, 0o644)
}
