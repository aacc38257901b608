package agent

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// recordingSink remembers the namespaces of what it was given.
type recordingSink struct{ namespaces []string }

func (s *recordingSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.namespaces = append(s.namespaces, e.Namespace)
	return e, nil
}

func (s *recordingSink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.namespaces = append(s.namespaces, e.Namespace)
	return e, nil
}

func (s *recordingSink) Patch(_ context.Context, e *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	s.namespaces = append(s.namespaces, e.Namespace)
	return e, nil
}

func TestControlPlaneSinkWritesToTheControlPlaneNamespace(t *testing.T) {
	t.Parallel()
	rec := &recordingSink{}
	sink := controlPlaneSink{namespace: "kube-federation-system", sink: rec}
	e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "web.1"}}
	ctx := t.Context()
	_, _ = sink.Create(ctx, e)
	_, _ = sink.Update(ctx, e)
	_, _ = sink.Patch(ctx, e, nil)
	for i, ns := range rec.namespaces {
		if ns != "kube-federation-system" {
			t.Errorf("write %d went to namespace %q", i, ns)
		}
	}
	if e.Namespace != "tenant" {
		t.Errorf("the broadcaster's Event was changed: namespace %q", e.Namespace)
	}
}

func TestLeaseRecorderAbout(t *testing.T) {
	t.Parallel()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-federation-system", Name: "fedwarden-agent-edge"}}
	l := leaseRecorder{lease: lease}
	namespaced := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "web"}}
	clusterScoped := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}
	tests := []struct {
		name                       string
		regarding                  runtime.Object
		wantRegarding, wantRelated runtime.Object
	}{
		{"a namespaced object: about it", namespaced, namespaced, nil},
		{"a cluster-scoped object: about the Lease, the object related", clusterScoped, lease, clusterScoped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			regarding, related := l.about(tt.regarding, nil)
			if regarding != tt.wantRegarding || related != tt.wantRelated {
				t.Errorf("about = %v, %v; want %v, %v", regarding, related, tt.wantRegarding, tt.wantRelated)
			}
		})
	}
}
