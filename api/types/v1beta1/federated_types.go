package v1beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// The parts every Federated<Kind> shares: placement, overrides and status.

// Placement says which member clusters receive the resource. Clusters, when
// present, wins; an empty list means no cluster, as in KubeFed (so the field
// is omitted only when nil, never when empty). Without clusters,
// ClusterSelector selects FederatedClusters by label.
type Placement struct {
	// Clusters names the member clusters, each once.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Clusters []PlacementCluster `json:"clusters,omitzero"`

	// ClusterSelector selects FederatedClusters by label when clusters is
	// absent.
	// +optional
	ClusterSelector *ClusterSelector `json:"clusterSelector,omitempty"`

	// ExcludeClusters names clusters the resource never goes to, whatever
	// clusters or clusterSelector select.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	ExcludeClusters []PlacementCluster `json:"excludeClusters,omitempty"`

	// SpreadConstraints spread the selected clusters over regions or
	// zones, applied in order, for example one cluster in each of at least
	// two regions. Clusters are kept where they already are when the
	// constraints allow it.
	// +listType=map
	// +listMapKey=spreadBy
	// +kubebuilder:validation:MaxItems=2
	// +optional
	SpreadConstraints []SpreadConstraint `json:"spreadConstraints,omitempty"`

	// Failover moves the replicas a ReplicaSchedulingPreference divides
	// away from a placed cluster that stays not Ready, to the other Ready
	// clusters, and returns them once it is back. The failed cluster's copy
	// is neither written nor deleted. Unset: an outage moves nothing.
	// +optional
	Failover *FailoverPolicy `json:"failover,omitempty"`
}

// Failback says how a failed cluster's replicas return.
// +kubebuilder:validation:Enum=Automatic;Manual
type Failback string

const (
	// FailbackAutomatic returns them once the cluster has been Ready, and
	// its copy InSync and Healthy, for failbackAfterSeconds.
	FailbackAutomatic Failback = "Automatic"
	// FailbackManual waits, besides, for `fedwarden failback`.
	FailbackManual Failback = "Manual"
)

// Default failover timings.
const (
	DefaultFailoverTolerationSeconds = 60
	DefaultFailbackAfterSeconds      = 300
)

// FailoverPolicy is when a placed cluster counts as failed, and how its
// replicas come back.
type FailoverPolicy struct {
	// TolerationSeconds is how long a placed cluster may be not Ready
	// before its replicas move. Default 60.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	TolerationSeconds *int32 `json:"tolerationSeconds,omitempty"`

	// Failback is Automatic (the default) or Manual.
	// +optional
	Failback Failback `json:"failback,omitempty"`

	// FailbackAfterSeconds is how long a failed cluster must have been
	// Ready again, with its copy InSync and Healthy, before its replicas
	// return; a cluster that fails again meanwhile starts its count again.
	// Default 300.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	FailbackAfterSeconds *int32 `json:"failbackAfterSeconds,omitempty"`

	// MaxFailoversPerMinute bounds how many of the resource's clusters
	// fail over in any minute, so that a wave of outages moves replicas a
	// few clusters at a time; unset or 0 means no bound.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxFailoversPerMinute *int32 `json:"maxFailoversPerMinute,omitempty"`
}

// SpreadBy is the topology a spread constraint groups clusters by.
// +kubebuilder:validation:Enum=region;zone
type SpreadBy string

const (
	// SpreadByRegion groups clusters by spec.region.
	SpreadByRegion SpreadBy = "region"
	// SpreadByZone groups clusters by their first zone in spec.zones.
	SpreadByZone SpreadBy = "zone"
)

// SpreadConstraint bounds how many topology groups (regions or zones) the
// resource goes to, and how many clusters in each.
// +kubebuilder:validation:XValidation:rule="!has(self.maxGroups) || self.maxGroups >= (has(self.minGroups) ? self.minGroups : 1)",message="maxGroups must not be less than minGroups"
type SpreadConstraint struct {
	// SpreadBy is region or zone.
	SpreadBy SpreadBy `json:"spreadBy"`

	// MinGroups is the fewest groups the resource must reach; with fewer
	// available it is not scheduled (and stays where it was). Default 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MinGroups *int32 `json:"minGroups,omitempty"`

	// MaxGroups is the most groups the resource goes to; unset means no limit.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxGroups *int32 `json:"maxGroups,omitempty"`

	// MaxClustersPerGroup is the most clusters chosen in one group; unset
	// means no limit.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxClustersPerGroup *int32 `json:"maxClustersPerGroup,omitempty"`
}

// ClusterSelector selects FederatedClusters by their labels. It has the
// shape of a Kubernetes label selector (AsSelector converts it), with bounds
// that let admission check it.
type ClusterSelector struct {
	// MatchLabels selects clusters that have every one of these labels.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// MatchExpressions selects clusters that satisfy every expression.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	MatchExpressions []ClusterSelectorRequirement `json:"matchExpressions,omitempty"`
}

// ClusterSelectorRequirement is one expression of a ClusterSelector.
// +kubebuilder:validation:XValidation:rule="(self.operator in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",fieldPath=".values",message="values must be non-empty for operator In and NotIn, and empty for Exists and DoesNotExist"
type ClusterSelectorRequirement struct {
	// Key is the label key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`

	// Operator relates the key to the values.
	Operator SelectorOperator `json:"operator"`

	// Values for In and NotIn.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// SelectorOperator relates a label key to values.
// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
type SelectorOperator string

// PlacementCluster names one member cluster.
type PlacementCluster struct {
	// Name of a FederatedCluster.
	Name ClusterName `json:"name"`
}

// ClusterName is the name of a FederatedCluster: a DNS-1123 label.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
type ClusterName string

// ClusterOverride is the list of changes made to the template for one cluster.
type ClusterOverride struct {
	// ClusterName is the cluster the changes apply to, each cluster once.
	ClusterName ClusterName `json:"clusterName"`

	// ClusterOverrides are applied in order, as a JSON Patch (RFC 6902).
	// +kubebuilder:validation:MaxItems=50
	// +optional
	ClusterOverrides []Override `json:"clusterOverrides,omitempty"`
}

// OverrideOp is a JSON Patch operation an override may use.
// +kubebuilder:validation:Enum=add;replace;remove
type OverrideOp string

const (
	// OverrideAdd adds a value (or replaces an existing member of an object).
	OverrideAdd OverrideOp = "add"
	// OverrideReplace replaces a value; it is the operation when op is empty.
	OverrideReplace OverrideOp = "replace"
	// OverrideRemove removes a value.
	OverrideRemove OverrideOp = "remove"
)

// Override is one JSON Patch operation on the rendered object.
// +kubebuilder:validation:XValidation:rule="!(self.path in ['/metadata', '/kind', '/apiVersion']) && !['/metadata/name', '/metadata/namespace', '/metadata/generateName', '/metadata/uid', '/metadata/resourceVersion', '/metadata/generation', '/metadata/creationTimestamp', '/metadata/deletionTimestamp', '/metadata/deletionGracePeriodSeconds', '/metadata/managedFields', '/metadata/selfLink'].exists(p, self.path == p || self.path.startsWith(p + '/'))",fieldPath=".path",message="path must not change the object's identity or the metadata its API server sets: /metadata/name, /metadata/namespace, /metadata/generateName, /kind, /apiVersion, /metadata as a whole, and uid, resourceVersion, generation, creationTimestamp, deletionTimestamp, managedFields cannot be overridden"
// +kubebuilder:validation:XValidation:rule="self.path != '/status' && !self.path.startsWith('/status/')",fieldPath=".path",message="path must not be under /status: status belongs to the member cluster and is never propagated"
type Override struct {
	// Op is add, replace or remove; empty means replace.
	// +optional
	Op OverrideOp `json:"op,omitempty"`

	// Path is a JSON pointer into the rendered object, for example
	// /spec/replicas.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(/([^~]|~[01])*)+$`
	Path string `json:"path"`

	// Value is the JSON value to add or replace with. Admission cannot check
	// that add and replace have one (CEL does not see schemaless fields):
	// an override without one fails for its cluster when it is rendered.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
}

// Remediation is what Fedwarden does when a member's copy drifts out of
// band.
// +kubebuilder:validation:Enum=Enforce;Alert
type Remediation string

const (
	// RemediationEnforce re-applies the desired object at once.
	RemediationEnforce Remediation = "Enforce"
	// RemediationAlert leaves the member's copy alone and reports the drift.
	RemediationAlert Remediation = "Alert"
)

// JSONPointer points into a member object, for example
// /spec/template/spec/containers/0/image; it covers everything under it.
// +kubebuilder:validation:MaxLength=256
// +kubebuilder:validation:Pattern=`^(/([^~]|~[01])*)+$`
type JSONPointer string

// FieldManager names a field manager of a member object as its
// metadata.managedFields show it, for example kubectl-edit or
// kube-controller-manager.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=128
type FieldManager string

// DriftPolicy says what Fedwarden does when a member's copy drifts: edited
// or deleted in the member by someone else. Updates from the control plane
// (a new template or override version) are always propagated.
type DriftPolicy struct {
	// Remediation is Enforce (re-apply at once) or Alert (report only);
	// empty means the controller's default (--default-remediation).
	// +optional
	Remediation Remediation `json:"remediation,omitempty"`

	// IgnorePaths are never treated as drift, in any cluster.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	IgnorePaths []JSONPointer `json:"ignorePaths,omitempty"`

	// IgnoreManagers are field managers whose writes are never treated as
	// drift, in any cluster: a field whose value one of them wrote in the
	// member, through the object or a subresource such as scale, is left as
	// it is and not reported. For example kube-controller-manager, the
	// manager of a HorizontalPodAutoscaler's writes to replicas. A new
	// template or override version is still written over it.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	IgnoreManagers []FieldManager `json:"ignoreManagers,omitempty"`

	// Clusters are per-cluster exceptions, each cluster once.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Clusters []ClusterDriftPolicy `json:"clusters,omitempty"`

	// Waivers keep out-of-band edits of some paths in some clusters until
	// they expire: such a drift is left as it is, even under Enforce, and
	// its CPV entry says Waived; a drift of any other path is handled as
	// always. An expired waiver counts for nothing: the policy applies
	// again at once.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Waivers []DriftWaiver `json:"waivers,omitempty"`
}

// DriftWaiver lets the drift of paths in clusters stay until it expires.
// Its paths obey the rule of an override's path: a write keeps the
// member's values there, so the object's identity, the metadata its API
// server sets and status cannot be waived.
// +kubebuilder:validation:XValidation:rule="has(self.clusters) != has(self.clusterSelector)",message="a waiver names its clusters in clusters or selects them with clusterSelector: exactly one of the two"
// +kubebuilder:validation:XValidation:rule="self.paths.all(p, !(p in ['/metadata', '/kind', '/apiVersion', '/status']) && !['/metadata/name', '/metadata/namespace', '/metadata/generateName', '/metadata/uid', '/metadata/resourceVersion', '/metadata/generation', '/metadata/creationTimestamp', '/metadata/deletionTimestamp', '/metadata/deletionGracePeriodSeconds', '/metadata/managedFields', '/metadata/selfLink', '/status'].exists(q, p.startsWith(q + '/') || p == q))",fieldPath=".paths",message="paths must not be the object's identity, the metadata its API server sets or status, as an override's path: /metadata as a whole, /kind, /apiVersion, /status, and name, namespace, generateName, uid, resourceVersion, generation, creationTimestamp, deletionTimestamp, managedFields cannot be waived"
type DriftWaiver struct {
	// Clusters the waiver applies in, by name; or clusterSelector, not
	// both.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +listType=set
	// +optional
	Clusters []ClusterName `json:"clusters,omitempty"`

	// ClusterSelector selects the clusters the waiver applies in by their
	// FederatedClusters' labels, as they are when a sync judges the copy;
	// or clusters, not both. An empty selector selects every cluster.
	// +optional
	ClusterSelector *ClusterSelector `json:"clusterSelector,omitempty"`

	// Paths waived, as JSON pointers (as ignorePaths); each covers
	// everything under it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	Paths []JSONPointer `json:"paths"`

	// Expires is when the waiver ends. The controller honours a waiver
	// only while it expires at most --max-waiver-duration (30 days by
	// default) ahead.
	Expires metav1.Time `json:"expires"`

	// Reason says why the drift may stay, for whoever reads the CPV.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason"`

	// Owner is who answers for the waiver, such as an e-mail address.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Owner string `json:"owner,omitempty"`
}

// ClusterDriftPolicy is the drift policy of one cluster.
type ClusterDriftPolicy struct {
	// Name of the cluster.
	Name ClusterName `json:"name"`

	// Remediation in this cluster; empty means the resource's.
	// +optional
	Remediation Remediation `json:"remediation,omitempty"`

	// IgnorePaths in this cluster, besides the resource's.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	IgnorePaths []JSONPointer `json:"ignorePaths,omitempty"`

	// IgnoreManagers in this cluster, besides the resource's.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	IgnoreManagers []FieldManager `json:"ignoreManagers,omitempty"`
}

// FederatedStatus is the propagation status every Federated<Kind> reports.
type FederatedStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Scheduled and Propagated.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ClusterCount counts the clusters the resource is placed on.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ClusterCount *int32 `json:"clusterCount,omitempty"`

	// DriftedClusters counts the clusters whose copy is not InSync.
	// +kubebuilder:validation:Minimum=0
	// +optional
	DriftedClusters *int32 `json:"driftedClusters,omitempty"`

	// Healthy is "healthy/placed": how many of the placed clusters' copies
	// their kind's health rules judge Healthy (docs/health.md), of how many
	// clusters the resource is placed on.
	// +kubebuilder:validation:MaxLength=24
	// +optional
	Healthy string `json:"healthy,omitempty"`

	// Clusters the resource is placed on, with how propagation went there.
	// +listType=map
	// +listMapKey=name
	// +optional
	Clusters []PropagationStatus `json:"clusters,omitempty"`

	// Rollout is where the rollout of the latest revision is, under
	// spec.rollout.strategy Waves.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`

	// Dependencies are the objects the pod template names, under
	// spec.propagateDependencies, with how each goes with the workload.
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Dependencies []DependencyStatus `json:"dependencies,omitempty"`
}

// DependencyState is how a dependency goes with its workload.
// +kubebuilder:validation:Enum=Propagated;Explicit;Missing;KindNotEnabled;Failed
type DependencyState string

const (
	// DependencyPropagated: a derived federated resource of the same name
	// places the object where the workload is (its own CPV says how each
	// copy is).
	DependencyPropagated DependencyState = "Propagated"
	// DependencyExplicit: a Federated<Kind> of the same name that the user
	// wrote places the object; it wins, and its placement is the user's.
	DependencyExplicit DependencyState = "Explicit"
	// DependencyMissing: the object does not exist in the host's
	// namespace. The workload is propagated all the same, and its Pods
	// wait for it, as Kubernetes would have them.
	DependencyMissing DependencyState = "Missing"
	// DependencyKindNotEnabled: the object's kind is not federated
	// (fedwarden enable KIND).
	DependencyKindNotEnabled DependencyState = "KindNotEnabled"
	// DependencyFailed: writing its derived federated resource failed;
	// the message says why, and the sync is retried.
	DependencyFailed DependencyState = "Failed"
)

// DependencyStatus is one object the pod template names.
type DependencyStatus struct {
	// Kind: ConfigMap, Secret, ServiceAccount or PersistentVolumeClaim.
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name of the object, in the workload's namespace.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// State says how it goes with the workload.
	State DependencyState `json:"state"`
	// Optional: every place that names it marks it optional, so that
	// Pods start without it; missing, it does not make the condition
	// False.
	// +optional
	Optional bool `json:"optional,omitempty"`
	// Message says more when it does not go.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// PropagationStatus is how propagation went in one cluster.
type PropagationStatus struct {
	// Name of the cluster.
	Name ClusterName `json:"name"`

	// Reason is a one-word outcome, for example Propagated or AlreadyExists.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message says more when something went wrong.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`

	// Health of the cluster's copy, as the CPV's entry records it.
	// +optional
	Health corev1beta1.HealthState `json:"health,omitempty"`

	// RemoteStatus is the status of the member's copy, collected when the
	// type's FederatedTypeConfig enables status collection (for a
	// Deployment: replicas, updatedReplicas, readyReplicas,
	// availableReplicas, observedGeneration).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	RemoteStatus *apiextensionsv1.JSON `json:"remoteStatus,omitempty"`
}

// Condition types and reasons of a Federated<Kind>.
const (
	// FederatedDependencies is True when every dependency the pod
	// template names goes with the workload, under
	// spec.propagateDependencies (status.dependencies lists them).
	FederatedDependencies = "DependenciesPropagated"
	// ReasonDependenciesPropagated: each goes with it, by a derived
	// resource or by the user's own Federated<Kind>.
	ReasonDependenciesPropagated = "DependenciesPropagated"
	// ReasonDependencyMissing: one does not exist on the host.
	ReasonDependencyMissing = "DependencyMissing"
	// ReasonDependencyKindNotEnabled: the kind of one is not federated.
	ReasonDependencyKindNotEnabled = "DependencyKindNotEnabled"
	// ReasonDependencyFailed: writing one's derived resource failed.
	ReasonDependencyFailed = "DependencyFailed"
	// ReasonDependenciesNotEnabled: the controller-manager does not run
	// the dependencies stage (--propagate-dependencies).
	ReasonDependenciesNotEnabled = "DependenciesNotEnabled"

	// FederatedScheduled is True when the scheduler found clusters for the
	// resource; its message names the clusters each plugin ruled out, and
	// why.
	FederatedScheduled = "Scheduled"

	// ReasonScheduled: the scheduler's decision is in the CPV's
	// spec.clusters.
	ReasonScheduled = "Scheduled"
	// ReasonCopiesKept: the decision is in the CPV's spec.clusters, and
	// keeps copies in clusters a plugin would drop for their state (not
	// Ready, too small, a spread decided again): only the user's intent
	// removes a copy. The message names each and why.
	ReasonCopiesKept = "CopiesKept"
	// ReasonUnschedulable: no decision satisfies the placement (for
	// example too few regions for a spread constraint); the resource stays
	// where it was.
	ReasonUnschedulable = "Unschedulable"

	// FederatedPropagated is True when every placed cluster has the
	// current template and overrides.
	FederatedPropagated = "Propagated"

	// ReasonPropagated: every placed cluster has the current version.
	ReasonPropagated = "Propagated"
	// ReasonPropagationFailed: at least one placed cluster does not have
	// the current version; status.clusters says which and why.
	ReasonPropagationFailed = "PropagationFailed"
	// ReasonNoClusters: the placement selects no Ready cluster.
	ReasonNoClusters = "NoClusters"
	// ReasonDeletionPending: the resource is being deleted and waits for
	// clusters that cannot be reached to delete its copies there.
	ReasonDeletionPending = "DeletionPending"
	// ReasonDeletionFailed: the resource is being deleted, and its last
	// deletion attempt stopped on an error (reading the clusters or its
	// ClusterPropagatedVersion, or removing its finalizer); the message
	// quotes it. The deletion is retried; no copy is kept or deleted
	// because of the error.
	ReasonDeletionFailed = "DeletionFailed"
	// EventDriftDetected: a member's copy drifted; the message names the
	// cluster, the state and the changed paths.
	EventDriftDetected = "DriftDetected"
	// EventDriftResolved: a drifted copy is in sync again.
	EventDriftResolved = "DriftResolved"
	// EventDriftWaived: a waiver keeps a member copy's drift; the message
	// names the cluster, the paths and the waiver.
	EventDriftWaived = "DriftWaived"
	// EventWaiverExpired: the waiver that kept a copy's drift expired, and
	// the drift policy applies again.
	EventWaiverExpired = "WaiverExpired"
	// FederatedFailedOver is True while a placed cluster's replicas run
	// elsewhere under spec.placement.failover; the message names each such
	// cluster, since when, and what its failback waits for.
	FederatedFailedOver = "FailedOver"
	// ReasonFailedOver: at least one placed cluster failed over.
	ReasonFailedOver = "FailedOver"
	// ReasonFailedBack: every failed cluster's replicas have returned.
	ReasonFailedBack = "FailedBack"
	// EventFailedOver: a placed cluster failed; the message names it and
	// the replicas moved.
	EventFailedOver = "FailedOver"
	// EventFailedBack: a failed cluster's replicas returned.
	EventFailedBack = "FailedBack"
	// ReasonNamespaceNotFederated: a namespaced resource whose namespace
	// has no FederatedNamespace (while namespaces are federated) goes to no
	// cluster, as in KubeFed.
	ReasonNamespaceNotFederated = "NamespaceNotFederated"
	// ReasonNameNotNamespace: a FederatedNamespace is named after a
	// namespace other than the one it lives in. It federates only its own
	// namespace, so it is not synced at all: nothing is written to or
	// deleted from any cluster (a tenant cannot reach another namespace).
	ReasonNameNotNamespace = "NameNotNamespace"
	// ReasonSystemNamespace: a FederatedNamespace of a kube-* namespace
	// (kube-system, kube-public, kube-node-lease...). Fedwarden never
	// adopts, writes or deletes such a namespace in a member; the
	// FederatedNamespace still restricts where the namespace's resources go.
	ReasonSystemNamespace = "SystemNamespace"
)

// Outcomes of propagation in one cluster, used in status.clusters[].reason.
const (
	// ClusterPropagated: the member has the current version.
	ClusterPropagated = "Propagated"
	// ClusterApplyFailed: rendering or writing failed; the message says why.
	ClusterApplyFailed = "ApplyFailed"
	// ClusterAlreadyExists: the member has an object of that name that
	// Fedwarden does not manage, and the resource does not opt in to
	// adopting it.
	ClusterAlreadyExists = "AlreadyExists"
	// ClusterUnreachable: the cluster is not Ready, or not joined.
	ClusterUnreachable = "Unreachable"
	// ClusterForbidden: the cluster answers, but refuses Fedwarden's
	// identity there the kind: its ClusterRole grants the kinds the cluster
	// served when it joined, or those of --resources, and not this one (a
	// kind installed there since, say). The message quotes the cluster's
	// answer and says to run fedwarden join again. The CPV entry's state is
	// ApplyFailed; nothing is written or deleted there meanwhile.
	ClusterForbidden = "Forbidden"
	// ClusterKindNotServed: the cluster does not serve the kind: its
	// CustomResourceDefinition is not installed there, was removed, or is
	// being deleted. The CPV entry's state is ApplyFailed; nothing is
	// written or deleted there until the kind is served again, and then the
	// copy is written again.
	ClusterKindNotServed = "KindNotServed"
	// ClusterWaitingForAgent: a Pull cluster whose agent has not reported
	// the current versions yet (or has stopped renewing its Lease).
	ClusterWaitingForAgent = "WaitingForAgent"
	// ClusterWaitingForDependencies: the workload's copy is not written
	// in a cluster yet, under spec.propagateDependencies, until the
	// copies of its dependencies are there.
	ClusterWaitingForDependencies = "WaitingForDependencies"
	// ClusterCPVMismatch: a Pull cluster's agent found that what the
	// ClusterPropagatedVersion tells it to apply disagrees with the
	// federated resource it can read: the resource's spec.placement.clusters
	// does not name the cluster (or excludeClusters does), or a held
	// revision's content does not have the key recorded for it. The agent
	// writes nothing; its CPV entry's state is ApplyFailed and its message
	// starts with this reason and says what disagreed.
	ClusterCPVMismatch = "CPVMismatch"
)

// Labels and annotations of federated resources and their member copies.
const (
	// LabelManaged marks a member object that Fedwarden manages.
	LabelManaged = "kubefed.io/managed"
	// AnnotationOrphan "true" on a federated resource keeps its member
	// copies when it is deleted.
	AnnotationOrphan = "kubefed.io/orphan"
	// AnnotationConflictResolution "adopt" on a federated resource lets it
	// take over member objects of the same name that it does not manage.
	AnnotationConflictResolution = "kubefed.io/conflict-resolution"
	// ConflictResolutionAdopt is the value of AnnotationConflictResolution
	// that opts in to adoption.
	ConflictResolutionAdopt = "adopt"
	// LabelDependency "true" marks a federated resource that Fedwarden
	// derived from a workload's dependency (spec.propagateDependencies):
	// it writes and removes such a resource, and never one without it.
	LabelDependency = "fedwarden.io/dependency"
	// AnnotationDependencyOf on a derived resource: its owners, the
	// workloads that need it, as JSON, each with the clusters it is placed
	// on there. Its placement is their union.
	AnnotationDependencyOf = "fedwarden.io/dependency-of"
	// AnnotationDependencySource on a derived resource: the
	// resourceVersion of the host object its template was copied from.
	AnnotationDependencySource = "fedwarden.io/dependency-source-version"
	// AnnotationTemplateVersion on a member copy: the template version it carries.
	AnnotationTemplateVersion = "fedwarden.io/template-version"
	// AnnotationFailbackRequested, on a federated resource, is when
	// `fedwarden failback` asked (RFC 3339) for the replicas of its failed
	// clusters to return under failback Manual: of those
	// AnnotationFailbackClusters names (comma-separated), or of all.
	AnnotationFailbackRequested = "fedwarden.io/failback-requested"
	// AnnotationFailbackClusters: see AnnotationFailbackRequested.
	AnnotationFailbackClusters = "fedwarden.io/failback-clusters"
	// AnnotationOverrideVersion on a member copy: the override version it carries.
	AnnotationOverrideVersion = "fedwarden.io/override-version"
	// AnnotationDesiredHash on a member copy: the content hash of what was
	// written, so that unchanged content is never written again.
	AnnotationDesiredHash = "fedwarden.io/desired-hash"
	// AnnotationOwnerUID on a member copy: the UID of the federated
	// resource that wrote it, so that a copy an earlier resource of the
	// same name left behind (orphaned) is told apart from this one's: a
	// resource's deletion or removal deletes only its own copies. Every
	// write sets it; it is not part of the desired hash, and a template or
	// override cannot set it. Copies written before it existed carry none.
	AnnotationOwnerUID = "fedwarden.io/owner-uid"
	// AnnotationCreatedNamespace marks a member Namespace that Fedwarden
	// created: for a namespaced resource, or for a FederatedNamespace. It
	// is set once, when the namespace is created, and never by an apply. A
	// FederatedNamespace may take such a namespace over without opting in
	// to adoption, and only such a namespace is deleted when its
	// FederatedNamespace leaves the cluster; any other (adopted) namespace
	// is released: its managed label and Fedwarden's annotations are
	// removed, and it stays with what it holds.
	AnnotationCreatedNamespace = "fedwarden.io/created-for-propagation"
	// FinalizerSync is set on federated resources so that their member
	// copies are deleted with them.
	FinalizerSync = "kubefed.io/sync-controller"
	// AnnotationResync on a federated resource: a new value re-applies it
	// to every cluster it is placed on, even when the versions match
	// (`fedwarden resync` and Kyverno policies set it).
	AnnotationResync = "kubefed.io/resync"
	// LabelPlacedPrefix starts a label of a ClusterPropagatedVersion per
	// cluster in its spec.clusters or spec.removals
	// (placed.fedwarden.io/<cluster>), so that a Pull cluster's agent
	// watches only the CPVs placed on it or telling it to remove its copy.
	LabelPlacedPrefix = "placed.fedwarden.io/"
)
