package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// A kind the host serves but a member does not (its CRD is installed only on
// the host) is reported for that member at once, as KindNotServed (state
// ApplyFailed: the member answers, it is not Unreachable), instead of
// waiting for a list that never comes. The member answers "forbidden" (it
// checks RBAC before it looks the kind up, and join granted only the kinds
// it served); its discovery tells that the kind is not served.
func TestKindNotServedByMember(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	joinedMembers(t)
	host := hostClient(t)
	crd := decode(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`)
	if err := host.Create(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Delete(context.Background(), crd) })
	poll.Eventually(t, 30*time.Second, "the Widget CRD to be served", func(ctx context.Context) (bool, string) {
		r := runFedwarden(t, "enable", "widgets.example.com", "--host-kubeconfig", fed.Host.Kubeconfig)
		return r.code == 0, r.String()
	})
	t.Cleanup(func() {
		runFedwardenContext(context.Background(), t, "disable", "widgets.example.com", "--delete-crd", "--force", "--host-kubeconfig", fed.Host.Kubeconfig)
	})
	ns := testNamespace(t, host)
	m1 := fed.Members[0].Name
	fw := decode(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedWidget
metadata: {name: gadget, namespace: %s}
spec:
  template: {spec: {size: 3}}
  placement: {clusters: [{name: %s}]}
`, ns, m1))
	if err := host.Create(t.Context(), fw); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Delete(context.Background(), fw) })
	start := time.Now()
	// At once: well before the list of widgets in the member, which never
	// comes, times out.
	poll.Eventually(t, memberListTimeout/2, "the member's refusal in the CPV", func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, host, ns, "widget-gadget")
		if err != nil {
			return false, err.Error()
		}
		for _, cv := range cpv.Status.ClusterVersions {
			if string(cv.ClusterName) == m1 && cv.State == typesv1beta1.ApplyFailed && strings.Contains(cv.Message, "cluster "+m1+" does not serve widgets.example.com") {
				t.Logf("%s: %s", m1, cv.Message)
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", cpv.Status.ClusterVersions)
	})
	t.Logf("reported %s after the FederatedWidget was created", time.Since(start).Round(100*time.Millisecond))

	// With no copy possible there, deleting it does not wait for the member.
	if err := host.Delete(t.Context(), fw); err != nil {
		t.Fatal(err)
	}
	waitForAbsent(t, host, fw, "the host", memberListTimeout/2)
}
