package kyverno

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fedwarden/fedwarden/test/kyverno/kyvernotest"
)

// dumpKyvernoState logs, for a failed test, Kyverno's webhook
// configurations, the ephemeral reports of namespace ns and the update
// requests the background controller works on.
func dumpKyvernoState(t *testing.T, bed *kyvernotest.Bed, ns string) {
	dyn, _ := dynamic.NewForConfig(bed.Fed.Host.Config)
	for _, g := range []struct {
		gvr schema.GroupVersionResource
		ns  string
	}{
		{schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, ""},
		{schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}, ""},
		{schema.GroupVersionResource{Group: "reports.kyverno.io", Version: "v1", Resource: "ephemeralreports"}, ns},
		{schema.GroupVersionResource{Group: "kyverno.io", Version: "v2", Resource: "updaterequests"}, "kyverno"},
	} {
		l, err := dyn.Resource(g.gvr).Namespace(g.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Logf("%s: %v", g.gvr, err)
			continue
		}
		for _, o := range l.Items {
			o.SetManagedFields(nil)
			delete(o.Object, "metadata")
			b, _ := json.Marshal(o.Object)
			t.Logf("%s: %s", g.gvr.Resource, b)
		}
	}
}
