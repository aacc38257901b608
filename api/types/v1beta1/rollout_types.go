package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RolloutStrategy says how a new revision of a federated resource (its
// template and overrides) reaches the clusters it is placed on.
// +kubebuilder:validation:Enum=All;Waves
type RolloutStrategy string

const (
	// RolloutAll writes a new revision to every placed cluster at once.
	RolloutAll RolloutStrategy = "All"
	// RolloutWaves writes it wave by wave: the next wave starts when every
	// cluster of the current one is Healthy at the new revision and free
	// of drift for the wave's bakeSeconds.
	RolloutWaves RolloutStrategy = "Waves"
)

// Rollout is how new revisions reach the placed clusters (docs/rollout.md).
// +kubebuilder:validation:XValidation:rule="!has(self.strategy) || self.strategy != 'Waves' || (has(self.waves) && size(self.waves) > 0)",message="strategy Waves needs at least one wave"
type Rollout struct {
	// Strategy: All (the default) or Waves.
	// +kubebuilder:default=All
	// +optional
	Strategy RolloutStrategy `json:"strategy,omitempty"`

	// Waves, in order. A placed cluster that no wave chooses is in an
	// implicit last wave. A cluster chosen by two waves is in the first.
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	Waves []Wave `json:"waves,omitempty"`

	// Paused stops the rollout where it is: no cluster gets a new target
	// revision until it is unset (fedwarden rollout pause / resume).
	// Clusters keep being synced to their own target revision.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// ProgressDeadlineSeconds is how long a wave may take from its start
	// to every cluster Healthy at the new revision; past it the rollout
	// halts (condition RolloutHalted). Default 600.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// RevisionHistoryLimit is how many earlier revisions are kept as
	// ControllerRevisions, for clusters not reached yet and for undo.
	// Default 10.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// Wave is one step of a rollout.
type Wave struct {
	// Name of the wave, shown by fedwarden rollout status; default
	// wave-<index>.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Name string `json:"name,omitempty"`

	// Clusters chosen by name.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=set
	// +optional
	Clusters []ClusterName `json:"clusters,omitempty"`

	// ClusterSelector chooses clusters by their FederatedCluster's labels,
	// besides Clusters.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`

	// MaxUnavailable is how many of the wave's clusters are updated at
	// once; default all of them.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`

	// BakeSeconds is how long every cluster of the wave must stay Healthy
	// and in sync at the new revision before the next wave starts.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BakeSeconds int32 `json:"bakeSeconds,omitempty"`

	// Pause: the wave waits for a manual approval (fedwarden rollout
	// resume) before it starts.
	// +optional
	Pause bool `json:"pause,omitempty"`
}

// Revision numbers count the revisions of one federated resource: 1 is its
// first template and overrides.
type Revision int64

// WavePhase is where a wave of the current rollout is.
// +kubebuilder:validation:Enum=Pending;AwaitingApproval;Progressing;Baking;Complete;Halted
type WavePhase string

const (
	// WavePending: an earlier wave is not complete.
	WavePending WavePhase = "Pending"
	// WaveAwaitingApproval: the wave has pause set; fedwarden rollout resume starts it.
	WaveAwaitingApproval WavePhase = "AwaitingApproval"
	// WaveProgressing: its clusters are being updated.
	WaveProgressing WavePhase = "Progressing"
	// WaveBaking: every cluster is Healthy at the revision; bakeSeconds run.
	WaveBaking WavePhase = "Baking"
	// WaveComplete: done.
	WaveComplete WavePhase = "Complete"
	// WaveHalted: a cluster Degraded, or the deadline passed.
	WaveHalted WavePhase = "Halted"
)

// RolloutStatus is where the rollout of the latest revision is.
type RolloutStatus struct {
	// Revision is the latest revision: the one being rolled out.
	// +optional
	Revision Revision `json:"revision,omitempty"`

	// FromRevision is the revision the clusters not reached yet stay at.
	// +optional
	FromRevision Revision `json:"fromRevision,omitempty"`

	// Waves of this rollout, in order, the implicit last one included.
	// +kubebuilder:validation:MaxItems=11
	// +listType=atomic
	// +optional
	Waves []WaveStatus `json:"waves,omitempty"`

	// Approved is the wave index (0-based) of this revision whose pause a
	// user approved; -1 or unset for none.
	// +optional
	Approved *int32 `json:"approved,omitempty"`
}

// WaveStatus is one wave of the current rollout.
type WaveStatus struct {
	// Name of the wave.
	Name string `json:"name"`

	// Clusters of the wave, as they were when the rollout reached it.
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	// +optional
	Clusters []ClusterName `json:"clusters,omitempty"`

	// Phase of the wave.
	Phase WavePhase `json:"phase"`

	// StartedAt is when the wave started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// HealthySince is when every cluster of the wave was last found
	// Healthy and in sync at the revision: its bake started then.
	// +optional
	HealthySince *metav1.Time `json:"healthySince,omitempty"`

	// Message says why the wave waits or halted.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// Annotations and conditions of rollouts.
const (
	// AnnotationApproveWave on a federated resource approves the paused
	// wave of a revision: "<revision>/<wave index>" (fedwarden rollout
	// resume sets it).
	AnnotationApproveWave = "fedwarden.io/approve-wave"
	// AnnotationAllAtOnce on a federated resource makes the rollout of the
	// revision it names skip the waves (fedwarden rollout undo
	// --all-at-once).
	AnnotationAllAtOnce = "fedwarden.io/rollout-all-at-once"
	// AnnotationChangeCause on a federated resource is kept with its
	// revision, as kubectl rollout history shows it.
	AnnotationChangeCause = "kubernetes.io/change-cause"

	// LabelRevisionOf labels a ControllerRevision with the name of the
	// federated resource it is a revision of (a name over 63 characters,
	// longer than a label value may be, as its first 52 and a hash of the
	// whole), and LabelRevisionKind with its kind, lower-case
	// (federateddeployment). A revision's data is
	// {"template": spec.template, "overrides": spec.overrides}; its
	// annotations AnnotationTemplateVersion and AnnotationOverrideVersion
	// hold the versions the CPV gave that content, and
	// AnnotationChangeCause the resource's, when it had one.
	LabelRevisionOf   = "fedwarden.io/revision-of"
	LabelRevisionKind = "fedwarden.io/revision-kind"

	// FederatedRolledOut is True when every placed cluster has the latest
	// revision as its target, False while a rollout goes on or halted.
	FederatedRolledOut = "RolledOut"
	// FederatedRolloutHalted is True when the rollout stopped: a cluster
	// Degraded, or a wave past its progress deadline.
	FederatedRolloutHalted = "RolloutHalted"

	ReasonRolloutComplete    = "RolloutComplete"
	ReasonRolloutProgressing = "RolloutProgressing"
	ReasonRolloutPaused      = "RolloutPaused"
	ReasonAwaitingApproval   = "AwaitingApproval"
	ReasonClusterDegraded    = "ClusterDegraded"
	ReasonDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonRolloutNotHalted   = "NotHalted"

	// EventRolloutHalted is the reason of the Warning Event of a halt.
	EventRolloutHalted = "RolloutHalted"
	// EventWaveStarted is the reason of the Event of a wave's start.
	EventWaveStarted = "WaveStarted"
)
