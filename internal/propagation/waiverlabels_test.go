package propagation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// ownClusterReader answers the agent's get of its FederatedCluster with
// labels, or err; it counts the gets.
type ownClusterReader struct {
	client.Reader
	labels map[string]string
	err    error
	gets   int
}

func (r *ownClusterReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.gets++
	if r.err != nil {
		return r.err
	}
	obj.(*corev1beta1.FederatedCluster).Labels = r.labels
	return nil
}

// The agent reads its labels at most once per labelsTTL, whatever the
// number of syncs; once read, they serve while the host cannot be read; a
// first read that fails is the error, naming the fix when it is a refusal.
func TestAgentOwnLabels(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	r := &ownClusterReader{labels: map[string]string{"env": "lab"}}
	s := &agentSide{cluster: "edge", host: r, own: &ownLabels{now: func() time.Time { return now }}}
	for range 5 {
		if got, err := s.labels(t.Context()); err != nil || got["env"] != "lab" {
			t.Fatalf("labels = %v, %v", got, err)
		}
	}
	if r.gets != 1 {
		t.Errorf("5 syncs within the TTL read the host %d times, want once", r.gets)
	}
	now = now.Add(labelsTTL)
	r.labels = map[string]string{"env": "prod"}
	if got, _ := s.labels(t.Context()); got["env"] != "prod" || r.gets != 2 {
		t.Errorf("after the TTL: labels %v after %d reads; want the new ones, read again", got, r.gets)
	}
	now = now.Add(labelsTTL)
	r.err = errors.New("connection refused")
	if got, err := s.labels(t.Context()); err != nil || got["env"] != "prod" {
		t.Errorf("host down: labels %v, %v; want the last ones read", got, err)
	}

	forbidden := &agentSide{cluster: "edge", host: &ownClusterReader{err: apierrors.NewForbidden(schema.GroupResource{Group: "core.kubefed.io", Resource: "federatedclusters"}, "edge", errors.New("no"))}, own: &ownLabels{}}
	if _, err := forbidden.labels(t.Context()); err == nil || !strings.Contains(err.Error(), "joined again") {
		t.Errorf("never read, forbidden: %v; want an error saying to join again", err)
	}
}
