package e2e

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// The test bed's controller-manager runs with --member-networks set to
// loopback: a FederatedCluster whose endpoint is elsewhere is refused before
// any packet is sent, reported in its condition and metric, and logged, so
// that fedtest's Stop fails the run of any test that stores such an
// endpoint by mistake. This test stores one on purpose.
func TestMemberOutsideLoopbackIsNotContacted(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	joinedMembers(t) // the good members it checks at the end
	host := hostClient(t)
	const name = "outside-loopback"
	cm.ExpectRefusals(name)
	m := fed.Members[0]
	// TEST-NET-1 (RFC 5737): never routed; the guard refuses it before dialing.
	const endpoint = "https://192.0.2.1:6443" // loopback-check: not dialed
	createCluster(t, host, name, endpoint, m.CAData, map[string][]byte{corev1beta1.SecretTokenKey: []byte("never-sent")})
	ready := waitForCondition(t, host, name, corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonClusterUnreachable, cm.probes.failedWithin())
	for _, want := range []string{"not contacted", "192.0.2.1 is outside 127.0.0.0/8", "--member-networks"} { // loopback-check: not dialed
		if !strings.Contains(ready.message, want) {
			t.Errorf("Ready message %q does not say %q", ready.message, want)
		}
	}
	if v, ok := cm.metric(t, fmt.Sprintf("fedwarden_member_dials_refused_total{cluster=%q}", name)); !ok || v < 1 {
		t.Errorf("fedwarden_member_dials_refused_total{cluster=%q} = %v (exported: %v), want at least 1", name, v, ok)
	}
	// The good members are still reached.
	for _, mem := range fed.Members {
		if got, err := clusterCondition(t.Context(), host, mem.Name, corev1beta1.ClusterReady); err != nil || got.status != metav1.ConditionTrue {
			t.Errorf("cluster %s: Ready = %+v (%v)", mem.Name, got, err)
		}
	}
}
