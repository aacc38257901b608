package agent

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/fedwarden/fedwarden/internal/registration"
)

// controlPlaneSink writes every Event to the host's control-plane
// namespace, whatever the namespace of the object it is about: the host's
// isolation policy refuses an agent's Events anywhere else, so that an
// agent cannot write into the namespaces of the host's tenants.
type controlPlaneSink struct {
	namespace string
	sink      events.EventSink
}

var _ events.EventSink = controlPlaneSink{}

func (s controlPlaneSink) moved(e *eventsv1.Event) *eventsv1.Event {
	e = e.DeepCopy()
	e.Namespace = s.namespace
	return e
}

func (s controlPlaneSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.sink.Create(ctx, s.moved(e))
	return out, retriable(err)
}

func (s controlPlaneSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.sink.Update(ctx, s.moved(e))
	return out, retriable(err)
}

func (s controlPlaneSink) Patch(ctx context.Context, e *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	out, err := s.sink.Patch(ctx, s.moved(e), data)
	return out, retriable(err)
}

// retriable makes the answers of a host that is starting retriable. The
// events library retries an Event only on errors that are not API status
// errors (it takes those for a malformed Event), so an Event the agent
// recorded while the host was down (a drift healed meanwhile) would be
// dropped at the first answer of a kube-apiserver still starting: 401 or
// 403 until its authenticator and RBAC caches have synced, 429, 5xx. Those
// become plain errors, which the library retries (at most 12 tries, 10 s
// apart): an Event the host really refuses costs those tries, no more.
func retriable(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err):
		return fmt.Errorf("the host is not ready to record Events: %s", err.Error())
	}
	return err
}

// controlPlaneEvents makes the agent's Event recorders: their Events go to
// the control-plane namespace. An Event there may be about an object of
// another namespace (events.k8s.io/v1), not about a cluster-scoped one:
// those are recorded about the agent's Lease, the object related.
type controlPlaneEvents struct {
	broadcaster events.EventBroadcaster
	scheme      *runtime.Scheme
	lease       *coordinationv1.Lease
}

func newControlPlaneEvents(host *rest.Config, scheme *runtime.Scheme, o Options) (*controlPlaneEvents, error) {
	c, err := typedeventsv1.NewForConfig(host)
	if err != nil {
		return nil, fmt.Errorf("building the Events client of the host: %w", err)
	}
	sink := controlPlaneSink{namespace: o.Namespace, sink: &events.EventSinkImpl{Interface: c}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: registration.AgentLeaseName(o.Cluster)}}
	return &controlPlaneEvents{broadcaster: events.NewBroadcaster(sink), scheme: scheme, lease: lease}, nil
}

// start sends the recorded Events to the host until ctx ends; the returned
// function stops it.
func (e *controlPlaneEvents) start(ctx context.Context) (func(), error) {
	if err := e.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("starting the Event recorder: %w", err)
	}
	return e.broadcaster.Shutdown, nil
}

// recorder returns the recorder of the reporting controller name.
func (e *controlPlaneEvents) recorder(name string) recorder.EventRecorder {
	rec := e.broadcaster.NewRecorder(e.scheme, name)
	annotated, _ := rec.(events.AnnotatedEventRecorder)
	return leaseRecorder{rec: rec, annotated: annotated, lease: e.lease}
}

// leaseRecorder records Events about cluster-scoped objects about the
// agent's Lease instead, with the object related.
type leaseRecorder struct {
	rec events.EventRecorder
	// annotated is rec, when it records annotations.
	annotated events.AnnotatedEventRecorder
	lease     *coordinationv1.Lease
}

var _ recorder.EventRecorder = leaseRecorder{}

func (l leaseRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	regarding, related = l.about(regarding, related)
	l.rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func (l leaseRecorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	regarding, related = l.about(regarding, related)
	if l.annotated == nil {
		l.rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
		return
	}
	l.annotated.AnnotatedEventf(regarding, related, annotations, eventtype, reason, action, note, args...)
}

func (l leaseRecorder) about(regarding, related runtime.Object) (runtime.Object, runtime.Object) {
	if m, ok := regarding.(metav1.Object); ok && m.GetNamespace() == "" {
		return l.lease, regarding
	}
	return regarding, related
}

// eventsManager is the agent's manager, whose Event recorders write to the
// control-plane namespace (controlPlaneEvents).
type eventsManager struct {
	manager.Manager
	events *controlPlaneEvents
}

// GetEventRecorder returns a recorder whose Events go to the control-plane
// namespace.
func (m eventsManager) GetEventRecorder(name string) recorder.EventRecorder {
	return m.events.recorder(name)
}
