package agent

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// failingSink answers every write with err.
type failingSink struct{ err error }

func (s failingSink) Create(context.Context, *eventsv1.Event) (*eventsv1.Event, error) {
	return nil, s.err
}

func (s failingSink) Update(context.Context, *eventsv1.Event) (*eventsv1.Event, error) {
	return nil, s.err
}

func (s failingSink) Patch(context.Context, *eventsv1.Event, []byte) (*eventsv1.Event, error) {
	return nil, s.err
}

// The events library retries an Event only on errors that are not API
// status errors: the answers of a host still starting must reach it as
// such, and those about the Event itself must not.
func TestControlPlaneSinkMakesAStartingHostRetriable(t *testing.T) {
	t.Parallel()
	gr := schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
	tests := []struct {
		err       error
		retriable bool
	}{
		{apierrors.NewForbidden(gr, "web.1", errors.New("RBAC: clusterrole not found")), true},
		{apierrors.NewUnauthorized("token not validated yet"), true},
		{apierrors.NewTooManyRequests("starting", 1), true},
		{apierrors.NewServiceUnavailable("etcd not ready"), true},
		{apierrors.NewInternalError(errors.New("storage not ready")), true},
		{apierrors.NewTimeoutError("slow", 1), true},
		{apierrors.NewAlreadyExists(gr, "web.1"), false},
		{apierrors.NewNotFound(gr, "web.1"), false},
		{apierrors.NewInvalid(schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, "web.1", nil), false},
	}
	e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "web.1"}}
	for _, tt := range tests {
		sink := controlPlaneSink{namespace: "kube-federation-system", sink: failingSink{err: tt.err}}
		for op, write := range map[string]func() error{
			"create": func() error { _, err := sink.Create(t.Context(), e); return err },
			"update": func() error { _, err := sink.Update(t.Context(), e); return err },
			"patch":  func() error { _, err := sink.Patch(t.Context(), e, nil); return err },
		} {
			err := write()
			var status *apierrors.StatusError
			if got := err != nil && !errors.As(err, &status); got != tt.retriable {
				t.Errorf("%s answered %q: retriable %v, want %v", op, tt.err, got, tt.retriable)
			}
		}
	}
}
