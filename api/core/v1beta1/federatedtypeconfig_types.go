package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceScope says whether objects of a kind live in a namespace.
// +kubebuilder:validation:Enum=Namespaced;Cluster
type ResourceScope string

const (
	// NamespaceScoped objects live in a namespace.
	NamespaceScoped ResourceScope = "Namespaced"
	// ClusterScoped objects live outside namespaces.
	ClusterScoped ResourceScope = "Cluster"
)

// Mode turns a feature on or off.
// +kubebuilder:validation:Enum=Enabled;Disabled
type Mode string

const (
	// Enabled turns the feature on.
	Enabled Mode = "Enabled"
	// Disabled turns the feature off.
	Disabled Mode = "Disabled"
)

// ControllerStatus says whether a controller for a type runs.
// +kubebuilder:validation:Enum=Running;NotRunning
type ControllerStatus string

const (
	// ControllerStatusRunning: the controller runs.
	ControllerStatusRunning ControllerStatus = "Running"
	// ControllerStatusNotRunning: the controller does not run.
	ControllerStatusNotRunning ControllerStatus = "NotRunning"
)

// APIResource names a kind and how the API server serves it.
type APIResource struct {
	// Group of the kind; empty for the core group.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`
	// +optional
	Group string `json:"group,omitempty"`

	// Version of the kind, for example v1.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+$`
	Version string `json:"version"`

	// Kind, for example Deployment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Kind string `json:"kind"`

	// PluralName is the resource name, for example deployments.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	PluralName string `json:"pluralName"`

	// Scope is Namespaced or Cluster.
	Scope ResourceScope `json:"scope"`
}

// FederatedTypeConfigSpec enables federation of one target kind.
// +kubebuilder:validation:XValidation:rule="!has(self.namespaced) || self.namespaced == (self.targetType.scope == 'Namespaced')",fieldPath=".namespaced",message="spec.namespaced must agree with spec.targetType.scope"
// +kubebuilder:validation:XValidation:rule="self.federatedType.scope == self.targetType.scope || self.targetType.kind == 'Namespace'",fieldPath=".federatedType.scope",message="spec.federatedType.scope must equal spec.targetType.scope (only FederatedNamespace, which lives in its own namespace, differs)"
type FederatedTypeConfigSpec struct {
	// TargetType is the kind written to member clusters.
	TargetType APIResource `json:"targetType"`

	// Namespaced repeats whether the target kind is namespaced, as the
	// specification names it; when set it must agree with targetType.scope.
	// +optional
	Namespaced *bool `json:"namespaced,omitempty"`

	// Propagation turns propagation of this type to member clusters on or off.
	// +kubebuilder:default=Enabled
	// +optional
	Propagation Mode `json:"propagation,omitempty"`

	// FederatedType is the Federated<Kind> that holds template, placement
	// and overrides on the host.
	FederatedType APIResource `json:"federatedType"`

	// StatusType is the kind that collects the member objects' status.
	// +optional
	StatusType *APIResource `json:"statusType,omitempty"`

	// StatusCollection turns collection of member status on or off.
	// +optional
	StatusCollection *Mode `json:"statusCollection,omitempty"`

	// HealthRules decide the health of the target kind's objects in member
	// clusters. They are tried in order and the first whose when holds
	// gives the health; if none holds, the built-in rules of the kind
	// (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, Service,
	// PersistentVolumeClaim) are tried next, and an object that no rule
	// matches is Unknown. A kind with neither is Healthy once it exists. To
	// replace the built-in rules, end the list with a rule whose when is
	// "true". See docs/health.md.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	HealthRules []HealthRule `json:"healthRules,omitempty"`
}

// HealthState is how a member cluster's copy of a federated resource is
// doing, as its kind's health rules judge it.
type HealthState string

const (
	// HealthHealthy: the copy does what its spec asks (a Deployment's
	// replicas are updated and available, a Job completed, a PVC is bound).
	HealthHealthy HealthState = "Healthy"
	// HealthProgressing: the copy is on its way (a rollout in progress, a
	// load balancer not assigned yet, the copy being deleted).
	HealthProgressing HealthState = "Progressing"
	// HealthDegraded: the copy failed and will not recover by itself (a
	// Deployment past its progress deadline, a failed Job, a lost PVC).
	HealthDegraded HealthState = "Degraded"
	// HealthUnknown: no rule tells; the reason says why.
	HealthUnknown HealthState = "Unknown"
)

// Health reasons that no rule gives: they describe how the rules applied.
const (
	// HealthReasonNoRules: the kind has neither healthRules nor built-in
	// rules, so an object that exists is Healthy.
	HealthReasonNoRules = "NoHealthRules"
	// HealthReasonNoRuleMatched: the kind has rules but none held (Unknown).
	HealthReasonNoRuleMatched = "NoRuleMatched"
	// HealthReasonRuleFailed: a rule's expression failed on this object: a
	// field it reads without has() or ?. is missing, a value has another
	// type, or it ran past its cost limit (Unknown; the message names the
	// rule and says why).
	HealthReasonRuleFailed = "RuleFailed"
	// HealthReasonInvalidRules: spec.healthRules do not compile, so no
	// object of the kind is judged until they are fixed (Unknown).
	HealthReasonInvalidRules = "InvalidHealthRules"
	// HealthReasonTerminating: the object has a deletionTimestamp
	// (Progressing), whatever its rules say.
	HealthReasonTerminating = "Terminating"
)

// HealthRule gives a health to the objects of a kind for which a CEL
// expression holds. Expressions see the member object as `object` (its
// fields as the API server serves them, status included) and may use the
// libraries of Kubernetes' CRD validation rules.
type HealthRule struct {
	// Health the object has when this rule is the first that holds.
	// +kubebuilder:validation:Enum=Healthy;Progressing;Degraded
	Health HealthState `json:"health"`

	// When is a CEL expression that gives a bool, for example
	// "object.?status.?phase.orValue('') == 'Failed'". A field that may
	// be missing must be read with has() or ?. (optional field
	// selection): reading a missing field fails the rule and the object
	// is Unknown.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	When string `json:"when"`

	// Reason is a short CamelCase word for machines, shown beside the
	// health; it defaults to the health.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message is a CEL expression that gives a string for people, for
	// example "'phase ' + object.status.phase"; evaluated only when the
	// rule holds.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// FederatedTypeConfigStatus is what the federation controller observed.
type FederatedTypeConfigStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// PropagationController says whether the propagation controller of
	// this type runs.
	// +optional
	PropagationController ControllerStatus `json:"propagationController,omitempty"`

	// StatusController says whether the status collector of this type runs.
	// +optional
	StatusController *ControllerStatus `json:"statusController,omitempty"`

	// Conditions: Established.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FederatedTypeConfig enables federation of a kind. Its name is
// <targetType.pluralName>.<targetType.group> (just the plural name for the
// core group), as in KubeFed.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ftc,categories=fedwarden
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetType.kind`
// +kubebuilder:printcolumn:name="Federated",type=string,JSONPath=`.spec.federatedType.kind`
// +kubebuilder:printcolumn:name="Propagation",type=string,JSONPath=`.spec.propagation`
// +kubebuilder:printcolumn:name="Controller",type=string,JSONPath=`.status.propagationController`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == (has(self.spec.targetType.group) && size(self.spec.targetType.group) > 0 ? self.spec.targetType.pluralName + '.' + self.spec.targetType.group : self.spec.targetType.pluralName)",message="metadata.name must be <spec.targetType.pluralName>.<spec.targetType.group> (just the plural name for the core group), for example deployments.apps"
type FederatedTypeConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FederatedTypeConfigSpec   `json:"spec"`
	Status FederatedTypeConfigStatus `json:"status,omitempty"`
}

// FederatedTypeConfigList is a list of FederatedTypeConfig.
//
// +kubebuilder:object:root=true
type FederatedTypeConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederatedTypeConfig `json:"items"`
}
