package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Kind is the kind of a drift transition; each is a CloudEvents type.
type Kind string

const (
	// Detected: a copy drifted, and is not healed in this sync (a new
	// drift, or new changed paths, outside of Alert).
	Detected Kind = "io.fedwarden.drift.detected"
	// Healed: a copy drifted and Fedwarden wrote it back (Enforce, a new
	// version, a resync).
	Healed Kind = "io.fedwarden.drift.healed"
	// Alerted: a copy drifted and is left as it is (remediation Alert).
	Alerted Kind = "io.fedwarden.drift.alerted"
	// Waived: a copy drifted, and a waiver of spec.driftPolicy.waivers
	// keeps its edit until it expires (state Waived); Message names the
	// waiver's reason, owner and expiry.
	Waived Kind = "io.fedwarden.drift.waived"
	// WaiverExpired: the waiver that kept a copy's edit expired, and the
	// policy applies again; the copy's next transition (healed under
	// Enforce, alerted under Alert) follows it.
	WaiverExpired Kind = "io.fedwarden.drift.waiver.expired"
	// Resolved: a drifted copy is in sync again by other means (the member
	// reverted it, a new version or a resync overwrote it).
	Resolved Kind = "io.fedwarden.drift.resolved"
	// RolloutHalted: a rollout in waves stopped (a cluster Degraded at the
	// new revision, or a wave past its deadline); Message says why.
	RolloutHalted Kind = "io.fedwarden.rollout.halted"
	// FailedOver: a placed cluster failed under the resource's failover
	// policy; Cluster names it, Message the replicas moved.
	FailedOver Kind = "io.fedwarden.failover.failed-over"
	// FailedBack: a failed-over cluster's replicas returned.
	FailedBack Kind = "io.fedwarden.failover.failed-back"
)

const (
	// SpecVersion is the CloudEvents version of the envelope.
	SpecVersion = "1.0"
	// ContentType is the HTTP Content-Type of a structured-mode CloudEvent.
	ContentType = "application/cloudevents+json"
	// dataContentType is the media type of the envelope's data.
	dataContentType = "application/json"
)

// Transition is one drift transition of one cluster's copy of a federated
// resource. It names fields and managers, never values.
type Transition struct {
	Kind Kind
	// Federated is the federated resource's kind and Resource its plural.
	Federated schema.GroupVersionKind
	Resource  string
	// Target is the kind of the member's copy.
	Target          schema.GroupVersionKind
	Namespace, Name string
	Cluster         string
	// State is the drift state: for Resolved, the state that ended.
	State    typesv1beta1.DriftState
	Paths    []string
	Managers []string
	// TemplateVersion and OverrideVersion are the versions the sync
	// propagated.
	TemplateVersion, OverrideVersion typesv1beta1.Version
	Remediation                      typesv1beta1.Remediation
	// ResolvedBy is what ended the drift, for Healed and Resolved (as the
	// drift ledger records it); Resync the kubefed.io/resync value acted on.
	ResolvedBy typesv1beta1.Resolution
	Resync     string
	// Message says more, for RolloutHalted, FailedOver, FailedBack, Waived
	// and WaiverExpired.
	Message string
}

// CloudEvent is a CloudEvents 1.0 event in structured JSON mode.
type CloudEvent struct {
	SpecVersion     string    `json:"specversion"`
	ID              string    `json:"id"`
	Source          string    `json:"source"`
	Type            Kind      `json:"type"`
	Subject         string    `json:"subject"`
	Time            time.Time `json:"time"`
	DataContentType string    `json:"datacontenttype"`
	Data            Data      `json:"data"`
}

// Data is the event's payload.
type Data struct {
	Resource        ResourceRef              `json:"resource"`
	Federated       ResourceRef              `json:"federated"`
	Cluster         string                   `json:"cluster"`
	State           typesv1beta1.DriftState  `json:"state"`
	Paths           []string                 `json:"paths"`
	Managers        []string                 `json:"managers"`
	TemplateVersion typesv1beta1.Version     `json:"templateVersion,omitempty"`
	OverrideVersion typesv1beta1.Version     `json:"overrideVersion,omitempty"`
	Remediation     typesv1beta1.Remediation `json:"remediation,omitempty"`
	ResolvedBy      typesv1beta1.Resolution  `json:"resolvedBy,omitempty"`
	Resync          string                   `json:"resync,omitempty"`
	Message         string                   `json:"message,omitempty"`
	ConsoleURL      string                   `json:"consoleURL,omitempty"`
}

// ResourceRef names an object.
type ResourceRef struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// NewEvent is the CloudEvent of t at now; consoleBase, when not nil, is
// the base of the console link.
func NewEvent(t Transition, now time.Time, consoleBase *url.URL) CloudEvent {
	return CloudEvent{
		SpecVersion:     SpecVersion,
		ID:              string(uuid.NewUUID()),
		Source:          source(t),
		Type:            t.Kind,
		Subject:         t.Cluster,
		Time:            now.UTC(),
		DataContentType: dataContentType,
		Data:            data(t, consoleBase),
	}
}

// Encode is the event's structured-mode JSON body, with the console
// link's & and the like as they are (not escaped for HTML).
func (e CloudEvent) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("encoding CloudEvent %s: %w", e.ID, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func data(t Transition, consoleBase *url.URL) Data {
	return Data{
		Resource:        ref(t.Target, t.Namespace, t.Name),
		Federated:       ref(t.Federated, t.Namespace, t.Name),
		Cluster:         t.Cluster,
		State:           t.State,
		Paths:           nonNil(t.Paths),
		Managers:        nonNil(t.Managers),
		TemplateVersion: t.TemplateVersion,
		OverrideVersion: t.OverrideVersion,
		Remediation:     t.Remediation,
		ResolvedBy:      t.ResolvedBy,
		Resync:          t.Resync,
		Message:         t.Message,
		ConsoleURL:      consoleLink(consoleBase, t),
	}
}

func ref(gvk schema.GroupVersionKind, namespace, name string) ResourceRef {
	return ResourceRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: namespace, Name: name}
}

// nonNil makes an empty list a JSON [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// source is the API path of the federated resource, as the host's API
// server serves it: /apis/<group>/<version>[/namespaces/<ns>]/<plural>/<name>.
func source(t Transition) string {
	parts := []string{"/apis", t.Federated.Group, t.Federated.Version}
	if t.Namespace != "" {
		parts = append(parts, "namespaces", t.Namespace)
	}
	return path.Join(append(parts, t.Resource, t.Name)...)
}

// consoleLink is base/resource?kind=…&namespace=…&name=…&cluster=…, or ""
// without a base.
func consoleLink(base *url.URL, t Transition) string {
	if base == nil {
		return ""
	}
	q := url.Values{}
	q.Set("kind", t.Federated.GroupKind().String())
	if t.Namespace != "" {
		q.Set("namespace", t.Namespace)
	}
	q.Set("name", t.Name)
	q.Set("cluster", t.Cluster)
	link := base.JoinPath(consolePath)
	link.RawQuery = q.Encode()
	return link.String()
}

// consolePath is the console's page of one federated resource.
const consolePath = "resource"
