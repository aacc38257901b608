package v1beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// DriftState classifies how a member's copy differs from what the control
// plane wants.
// +kubebuilder:validation:Enum=InSync;OutdatedTemplate;OutdatedOverrides;ModifiedOutOfBand;Missing;Unreachable;ApplyFailed;AlreadyExists;RolloutPending;Waived
type DriftState string

const (
	// InSync: the member has the current template and overrides, unchanged.
	InSync DriftState = "InSync"
	// OutdatedTemplate: the member missed a template update.
	OutdatedTemplate DriftState = "OutdatedTemplate"
	// OutdatedOverrides: the member missed an override update.
	OutdatedOverrides DriftState = "OutdatedOverrides"
	// ModifiedOutOfBand: someone edited the member's copy in the member.
	ModifiedOutOfBand DriftState = "ModifiedOutOfBand"
	// Missing: the member's copy was deleted in the member.
	Missing DriftState = "Missing"
	// Unreachable: the member cluster cannot be reached.
	Unreachable DriftState = "Unreachable"
	// ApplyFailed: rendering failed, or the member's API server refused the
	// write, or the kind (the federated resource's status.clusters reason
	// then says Forbidden or KindNotServed).
	ApplyFailed DriftState = "ApplyFailed"
	// AlreadyExists: the member has an object of that name that Fedwarden
	// does not manage, and the federated resource does not opt in to adopt it.
	AlreadyExists DriftState = "AlreadyExists"
	// RolloutPending: the member has, unchanged, the revision a rollout in
	// waves holds it at (targetRevision), not the latest one yet. It is
	// not drift.
	RolloutPending DriftState = "RolloutPending"
	// Waived: someone edited the member's copy at paths a waiver of the
	// resource's drift policy covers (spec.driftPolicy.waivers): the edit is
	// kept, even under Enforce, until the waiver expires (waivedUntil).
	Waived DriftState = "Waived"
)

// Version is a change counter: "3" means the third version.
// +kubebuilder:validation:MaxLength=20
// +kubebuilder:validation:Pattern=`^[0-9]+$`
type Version string

// ClusterPropagatedVersionSpec names the federated resource and the clusters
// it is scheduled to.
type ClusterPropagatedVersionSpec struct {
	// Template is the name of the federated resource this CPV tracks.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Template string `json:"template"`

	// TemplateKind is the kind of the federated resource, for example
	// FederatedDeployment; with TemplateAPIVersion it tells two federated
	// resources of the same name apart.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	TemplateKind string `json:"templateKind,omitempty"`

	// TemplateAPIVersion is the apiVersion of the federated resource.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	TemplateAPIVersion string `json:"templateAPIVersion,omitempty"`

	// TemplateResource is the federated resource's plural resource name,
	// for example federateddeployments: what a client that addresses it by
	// resource (a Kyverno CEL policy's resource.get) needs.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	TemplateResource string `json:"templateResource,omitempty"`

	// Clusters the scheduler placed the resource on, each once.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Clusters []PlacedCluster `json:"clusters,omitempty"`

	// Removals are the host's instructions to Pull clusters' agents to
	// delete their copies: each names a Pull cluster the resource left that
	// still reports an entry in status.clusterVersions. The CPV keeps the
	// cluster's label placed.fedwarden.io/<cluster> while its removal is
	// pending, so that the agent still sees the CPV; the agent deletes its
	// copy, then its entry, and the host then drops the removal and the
	// label. An agent deletes its copy only when told so here, or when the
	// federated resource is deleted and this CPV, its own, places it on or
	// records the agent's cluster: never because a CPV is missing, and
	// never a copy another resource wrote (fedwarden.io/owner-uid).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Removals []Removal `json:"removals,omitempty"`

	// Spread records the spec.placement.spreadConstraints that clusters
	// was decided under. A cluster that holds a copy and that a spread
	// constraint leaves out loses the copy only when the user changed the
	// constraints since; otherwise (a re-decision after an outage, for
	// example) it keeps it. Unset means not recorded, which counts as
	// unchanged.
	// +optional
	Spread *RecordedSpread `json:"spread,omitempty"`

	// DependencyOf names, for the CPV of a dependency that goes with its
	// workloads (spec.propagateDependencies), the workloads that need it,
	// as Kind/name in its namespace.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=320
	// +listType=set
	// +optional
	DependencyOf []string `json:"dependencyOf,omitempty"`

	// Rollout is, for a resource rolled out in waves that is placed on
	// Pull clusters, what their agents apply: the latest revision's key,
	// and the content of each earlier revision a Pull cluster is held at.
	// An agent applies the revision its spec.clusters[].revision names,
	// and, under strategy Waves, nothing the host has not decided yet.
	// Unset under strategy All.
	// +optional
	Rollout *PullRollout `json:"rollout,omitempty"`
}

// PullRollout tells Pull clusters' agents which revisions to apply under a
// rollout in waves: their agents may not read ControllerRevisions.
type PullRollout struct {
	// Latest is the resource's latest revision: the one whose content the
	// federated resource holds when its content key is this one.
	Latest RevisionKey `json:"latest"`

	// Held are the earlier revisions some Pull cluster is held at, with
	// their content. Never a revision of Secrets: those are not rolled out
	// in waves.
	// +listType=map
	// +listMapKey=number
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Held []HeldRevision `json:"held,omitempty"`
}

// RevisionKey names a revision and its content: the hashes of
// spec.template and spec.overrides it was made of.
type RevisionKey struct {
	// +kubebuilder:validation:Minimum=1
	Number Revision `json:"number"`
	// +kubebuilder:validation:MaxLength=128
	TemplateHash string `json:"templateHash"`
	// +kubebuilder:validation:MaxLength=128
	OverridesHash string `json:"overridesHash"`
}

// HeldRevision is an earlier revision of the resource, as its
// ControllerRevision holds it.
type HeldRevision struct {
	// +kubebuilder:validation:Minimum=1
	Number Revision `json:"number"`
	// TemplateVersion and OverrideVersion are the versions the copies of
	// this revision carry.
	TemplateVersion Version `json:"templateVersion"`
	OverrideVersion Version `json:"overrideVersion"`
	// Template is the revision's spec.template.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Template *apiextensionsv1.JSON `json:"template,omitempty"`
	// Overrides are the revision's spec.overrides.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Overrides *apiextensionsv1.JSON `json:"overrides,omitempty"`
	// TemplateHash and OverridesHash are the revision's key, as its
	// ControllerRevision records it: the content hashes of the template
	// and overrides it was made of. An agent applies the revision only if
	// its content has this key. Unset in a CPV written before the key was
	// recorded there, which is not checked.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	TemplateHash string `json:"templateHash,omitempty"`
	// OverridesHash: see TemplateHash.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	OverridesHash string `json:"overridesHash,omitempty"`
}

// RecordedSpread is the spread constraints a decision was made under.
type RecordedSpread struct {
	// Constraints as they were in spec.placement.spreadConstraints; empty
	// when it had none.
	// +listType=map
	// +listMapKey=spreadBy
	// +kubebuilder:validation:MaxItems=2
	// +optional
	Constraints []SpreadConstraint `json:"constraints,omitempty"`
}

// PlacedCluster is one scheduled cluster.
type PlacedCluster struct {
	// Name of the FederatedCluster.
	Name ClusterName `json:"name"`

	// Replicas the cluster runs, when a ReplicaSchedulingPreference
	// divides the workload's replicas; unset means the template's.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Revision is, for a Pull cluster of a resource rolled out in waves,
	// the revision its agent is to apply: spec.rollout.latest's number or
	// one of spec.rollout.held. Unset for Push clusters, and under
	// strategy All.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Revision *Revision `json:"revision,omitempty"`

	// FailedOverAt is when the cluster's replicas moved away under the
	// resource's failover policy: its Replicas are what it ran then, and
	// the other clusters run them meanwhile. Unset when it has not failed
	// over, or has failed back.
	// +optional
	FailedOverAt *metav1.Time `json:"failedOverAt,omitempty"`

	// Surge tells that the cluster was chosen while another placed cluster
	// was failed over, standing in for it. Once no cluster is failed over,
	// a surge cluster the placement no longer chooses loses its copy: the
	// failover policy is the intent that removes it.
	// +optional
	Surge bool `json:"surge,omitempty"`
}

// Removal tells a Pull cluster's agent to delete its copy of the resource.
type Removal struct {
	// Name of the Pull cluster's FederatedCluster.
	Name ClusterName `json:"name"`
}

// ClusterVersion is what one member cluster really has.
type ClusterVersion struct {
	// ClusterName of the member.
	ClusterName ClusterName `json:"clusterName"`

	// Version is the member object's resourceVersion.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Version string `json:"version,omitempty"`

	// TemplateVersion the member's copy carries.
	// +optional
	TemplateVersion Version `json:"templateVersion,omitempty"`

	// OverrideVersion the member's copy carries.
	// +optional
	OverrideVersion Version `json:"overrideVersion,omitempty"`

	// ObservedGeneration is the member object's generation.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// State classifies the member's drift.
	// +optional
	State DriftState `json:"state,omitempty"`

	// Message says more about the state, for example the API server's
	// error for ApplyFailed.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`

	// ChangedPaths are the JSON pointers of fields changed out of band
	// (at most 20).
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=1024
	// +optional
	ChangedPaths []string `json:"changedPaths,omitempty"`

	// ChangedBy are the field managers that made those changes.
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	ChangedBy []string `json:"changedBy,omitempty"`

	// ChangedByOperations says, of each field manager of changedBy, how
	// it wrote (Apply or Update) and which of changedPaths it changed.
	// +kubebuilder:validation:MaxItems=10
	// +optional
	ChangedByOperations []ManagerOperation `json:"changedByOperations,omitempty"`

	// DriftedSince is when the member left InSync.
	// +optional
	DriftedSince *metav1.Time `json:"driftedSince,omitempty"`

	// Remediation in effect for this cluster: Enforce or Alert.
	// +optional
	Remediation Remediation `json:"remediation,omitempty"`

	// WaivedUntil is, for a Waived copy, when the waiver that keeps its
	// edit expires; its reason is in the message.
	// +optional
	WaivedUntil *metav1.Time `json:"waivedUntil,omitempty"`

	// Waiver is the waiver that kept the edit of the drift episode under
	// way, if one did: recorded when it first kept it, kept after it
	// expires, until the episode ends and the ledger records it.
	// +optional
	Waiver *EpisodeWaiver `json:"waiver,omitempty"`

	// Resync is the value of the federated resource's kubefed.io/resync
	// annotation this cluster last acted on; set by a Pull cluster's agent,
	// which writes only its own entry.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Resync string `json:"resync,omitempty"`

	// TargetRevision is the revision of the template and overrides the
	// cluster is to have: the latest, or, during a rollout in waves, the
	// one it stays at until its wave starts.
	// +optional
	TargetRevision Revision `json:"targetRevision,omitempty"`

	// Health of the member's copy: Healthy, Progressing, Degraded or
	// Unknown, as its kind's health rules judge it (docs/health.md); unset
	// while there is no copy to judge.
	// +kubebuilder:validation:Enum=Healthy;Progressing;Degraded;Unknown
	// +optional
	Health corev1beta1.HealthState `json:"health,omitempty"`

	// HealthReason is the rule's one-word reason the copy became this
	// health, for example ProgressDeadlineExceeded; it is not rewritten
	// while the health stays the same.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	HealthReason string `json:"healthReason,omitempty"`

	// HealthMessage says more, for people, as of the same moment.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	HealthMessage string `json:"healthMessage,omitempty"`

	// DriftHistory is the drift ledger of this cluster's copy: its last
	// episodes out of InSync that have ended, oldest first (at most
	// MaxDriftEpisodes). The episode going on, if any, is the entry's own
	// state, changedPaths, changedBy and driftedSince.
	// +kubebuilder:validation:MaxItems=10
	// +optional
	DriftHistory []DriftEpisode `json:"driftHistory,omitempty"`
}

// MaxDriftEpisodes is how many ended episodes an entry's driftHistory keeps.
const MaxDriftEpisodes = 10

// Resolution is what ended a drift episode.
// +kubebuilder:validation:Enum=Enforce;Resync;TemplateChange;Returned
type Resolution string

const (
	// ResolvedByEnforce: Fedwarden re-applied the copy, under the Enforce
	// remediation or because it was behind (a missed update, an outage).
	ResolvedByEnforce Resolution = "Enforce"
	// ResolvedByResync: a new value of the federated resource's
	// kubefed.io/resync annotation had the copy re-applied; the episode's
	// resync holds that value.
	ResolvedByResync Resolution = "Resync"
	// ResolvedByTemplateChange: the template or overrides changed so that
	// the copy, unwritten, matches them again (the drift was accepted).
	ResolvedByTemplateChange Resolution = "TemplateChange"
	// ResolvedByReturn: the copy came back to what the control plane wants
	// by itself (an edit undone in the member, a cluster back from an
	// outage with its copy current), with no write of Fedwarden's.
	ResolvedByReturn Resolution = "Returned"
)

// DriftEpisode is one period a cluster's copy spent out of InSync.
type DriftEpisode struct {
	// Start is when the copy left InSync, or when the member event that
	// revealed the drift arrived.
	Start metav1.Time `json:"start"`

	// End is when the copy was InSync again.
	End metav1.Time `json:"end"`

	// State is the state the copy was in when the episode ended.
	State DriftState `json:"state"`

	// ChangedPaths are the JSON pointers of the fields changed out of band
	// (at most 20).
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=1024
	// +optional
	ChangedPaths []string `json:"changedPaths,omitempty"`

	// ChangedBy are the field managers that made those changes.
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	ChangedBy []string `json:"changedBy,omitempty"`

	// ChangedByOperations says, of each field manager of changedBy, how
	// it wrote (Apply or Update) and which of changedPaths it changed.
	// +kubebuilder:validation:MaxItems=10
	// +optional
	ChangedByOperations []ManagerOperation `json:"changedByOperations,omitempty"`

	// Before are the versions the copy carried while it was out of InSync.
	// +optional
	Before EpisodeVersions `json:"before,omitempty"`

	// After are the versions the copy was in sync with at the end.
	// +optional
	After EpisodeVersions `json:"after,omitempty"`

	// ResolvedBy is what ended the episode.
	ResolvedBy Resolution `json:"resolvedBy"`

	// Waiver is the waiver that kept the episode's edit for a while, if
	// one did. An until before end says it expired before the episode
	// ended (and the policy then applied); one after end, that the edit
	// ended first, or the waiver was removed.
	// +optional
	Waiver *EpisodeWaiver `json:"waiver,omitempty"`

	// Resync is the kubefed.io/resync value acted on, for ResolvedBy
	// Resync: the value a person or a policy (a Kyverno mutation, say) set.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Resync string `json:"resync,omitempty"`
}

// EpisodeWaiver is a waiver of spec.driftPolicy.waivers as a drift episode
// it kept records it.
type EpisodeWaiver struct {
	// Since is when the waiver first kept the episode's edit.
	Since metav1.Time `json:"since"`

	// Until is the waiver's expiry, as last honoured.
	Until metav1.Time `json:"until"`

	// Reason is the waiver's.
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason"`

	// Owner is the waiver's.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Owner string `json:"owner,omitempty"`
}

// ManagerOperation is one writer of fields changed out of band in a
// member's copy: a field manager and the operation its entry of the copy's
// metadata.managedFields records, with the fields it changed. A manager
// that both applied and updated changed fields is listed once for each.
// It extends changedBy, which names the managers alone and is kept as it
// was, so that readers of changedBy need no change.
type ManagerOperation struct {
	// Manager is the field manager, as changedBy names it.
	// +kubebuilder:validation:MaxLength=256
	Manager string `json:"manager"`

	// Operation is how the manager wrote: Apply (server-side apply) or
	// Update (any other write: kubectl edit, kubectl scale, a
	// controller's update or patch).
	// +kubebuilder:validation:Enum=Apply;Update
	Operation metav1.ManagedFieldsOperationType `json:"operation"`

	// Paths are the JSON pointers of the fields it changed, among
	// changedPaths.
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=1024
	// +optional
	Paths []string `json:"paths,omitempty"`
}

// EpisodeVersions are a copy's template and override versions.
type EpisodeVersions struct {
	// TemplateVersion of the copy.
	// +optional
	TemplateVersion Version `json:"templateVersion,omitempty"`

	// OverrideVersion of the copy.
	// +optional
	OverrideVersion Version `json:"overrideVersion,omitempty"`
}

// ClusterPropagatedVersionStatus is the control plane's version and each
// member's.
type ClusterPropagatedVersionStatus struct {
	// TemplateVersion counts the changes of the template.
	// +optional
	TemplateVersion Version `json:"templateVersion,omitempty"`

	// OverrideVersion counts the changes of the overrides.
	// +optional
	OverrideVersion Version `json:"overrideVersion,omitempty"`

	// TemplateHash is the content hash of the template at TemplateVersion;
	// a counter moves only when the hash does.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	TemplateHash string `json:"templateHash,omitempty"`

	// OverrideHash is the content hash of the overrides at OverrideVersion.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	OverrideHash string `json:"overrideHash,omitempty"`

	// ClusterVersions are the members' versions, each cluster once. Each
	// entry may be written by a different field manager (one per agent).
	// +listType=map
	// +listMapKey=clusterName
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	ClusterVersions []ClusterVersion `json:"clusterVersions,omitempty"`

	// Resync is the value of the federated resource's kubefed.io/resync
	// annotation last acted on.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Resync string `json:"resync,omitempty"`

	// ClusterCount counts the clusters in spec.clusters.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ClusterCount *int32 `json:"clusterCount,omitempty"`

	// DriftedClusters counts the clusters whose state is not InSync.
	// +kubebuilder:validation:Minimum=0
	// +optional
	DriftedClusters *int32 `json:"driftedClusters,omitempty"`

	// HealthyClusters counts the clusters whose copy is Healthy.
	// +kubebuilder:validation:Minimum=0
	// +optional
	HealthyClusters *int32 `json:"healthyClusters,omitempty"`

	// Conditions: Propagated and Drifted.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// FailoverHistory is the resource's failover ledger: each time a
	// placed cluster failed over under spec.placement.failover, oldest
	// first, the last MaxFailoverHistory; an episode without an end is
	// going on.
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	FailoverHistory []FailoverEpisode `json:"failoverHistory,omitempty"`
}

// MaxFailoverHistory bounds status.failoverHistory.
const MaxFailoverHistory = 20

// FailoverEpisode is one failover of one cluster: when its replicas moved
// away, where surge copies stood in for it, and when they returned.
type FailoverEpisode struct {
	// Cluster that failed over.
	Cluster ClusterName `json:"cluster"`
	// Start is when it failed over (its spec.clusters[].failedOverAt).
	Start metav1.Time `json:"start"`
	// End is when it failed back; unset while the episode goes on.
	// +optional
	End *metav1.Time `json:"end,omitempty"`
	// Replicas it ran, which the other clusters ran meanwhile; unset when
	// its copies are not divided.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Surge are the clusters chosen to stand in for it with a copy.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	Surge []ClusterName `json:"surge,omitempty"`
	// EndedBy says how it ended: Automatic (failbackAfterSeconds), Manual
	// (fedwarden failback), or Policy (the failover policy was removed,
	// or the cluster left the placement).
	// +kubebuilder:validation:Enum=Automatic;Manual;Policy
	// +optional
	EndedBy string `json:"endedBy,omitempty"`
}

// How a failover episode ended (FailoverEpisode.EndedBy).
const (
	FailoverEndedAutomatic = "Automatic"
	FailoverEndedManual    = "Manual"
	FailoverEndedPolicy    = "Policy"
)

// Condition types of a ClusterPropagatedVersion.
const (
	// CPVDrifted is True when at least one cluster is not InSync.
	CPVDrifted = "Drifted"
	// CPVPropagated is True when every cluster in spec.clusters has the
	// current template and override versions; its reasons are those of
	// the federated resource's Propagated condition.
	CPVPropagated = "Propagated"

	// ReasonClustersDrifted: at least one cluster is not InSync.
	ReasonClustersDrifted = "ClustersDrifted"
	// ReasonAllInSync: every cluster is InSync.
	ReasonAllInSync = "AllInSync"
)

// ClusterPropagatedVersion records, per member cluster, which template and
// override version of a federated resource is really there. It is named
// <lower-case target kind>-<name> and owned by its federated resource.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cpv,categories=fedwarden
// +kubebuilder:printcolumn:name="Template",type=string,JSONPath=`.status.templateVersion`
// +kubebuilder:printcolumn:name="Override",type=string,JSONPath=`.status.overrideVersion`
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.clusterCount`
// +kubebuilder:printcolumn:name="Drifted",type=integer,JSONPath=`.status.driftedClusters`
// +kubebuilder:printcolumn:name="Healthy",type=integer,JSONPath=`.status.healthyClusters`
// +kubebuilder:printcolumn:name="Dependency-Of",type=string,JSONPath=`.spec.dependencyOf`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterPropagatedVersion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterPropagatedVersionSpec   `json:"spec"`
	Status ClusterPropagatedVersionStatus `json:"status,omitempty"`
}

// ClusterPropagatedVersionList is a list of ClusterPropagatedVersion.
//
// +kubebuilder:object:root=true
type ClusterPropagatedVersionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPropagatedVersion `json:"items"`
}
