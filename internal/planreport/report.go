package planreport

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/fedwarden/fedwarden/internal/propagation"
)

// Report is the plan of one federated resource: what -o json prints
// (docs/plan.md documents its shape). Every key is always present; lists
// are empty rather than null.
type Report struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Source is "file" for -f, "host" for KIND/NAME.
	Source string `json:"source"`
	// New: the host does not have the resource yet.
	New bool `json:"new"`
	// Waiting says what the controller waits for before it writes
	// anything for the resource: the garbage collector, to delete the
	// ClusterPropagatedVersion of an earlier resource of its name; "" when
	// nothing.
	Waiting string `json:"waiting"`
	// Versions are those the controller would stamp the copies with.
	Versions  Versions  `json:"versions"`
	Placement Placement `json:"placement"`
	Rollout   Rollout   `json:"rollout"`
	// Dependencies are, under spec.propagateDependencies (before or
	// after the change), the objects the pod template names, and where
	// the change adds or removes their copies.
	Dependencies []Dependency `json:"dependencies"`
	// Clusters are every joined cluster and every cluster the resource is
	// or was placed on, sorted by name.
	Clusters []Cluster `json:"clusters"`
	Summary  Summary   `json:"summary"`
}

// Versions are a template and an override version.
type Versions struct {
	Template string `json:"template"`
	Override string `json:"override"`
}

// Placement is the scheduler's decision.
type Placement struct {
	// Scheduled is false when no decision could be made: the resource then
	// stays where it is.
	Scheduled bool `json:"scheduled"`
	// Message says it as the Scheduled condition would.
	Message string `json:"message"`
	// Clusters are the placed clusters.
	Clusters []string `json:"clusters"`
	// RuledOut are the clusters a plugin ruled out, with its reasons.
	RuledOut []Verdict `json:"ruledOut"`
	// CapacityConsidered is false: plan has no source of member capacity,
	// so the Capacity plugin passes every cluster.
	CapacityConsidered bool `json:"capacityConsidered"`
	// Failover says what the resource's failover policy does, as its
	// FailedOver condition would; empty when no policy applies.
	Failover string `json:"failover,omitempty"`
	// Down are the clusters planned as failed (--what-if-down).
	Down []string `json:"down,omitempty"`
}

// Verdict is what a scheduler plugin said of a cluster.
type Verdict struct {
	Cluster string   `json:"cluster"`
	Plugin  string   `json:"plugin"`
	Reasons []string `json:"reasons"`
}

// Rollout is spec.rollout's waves over the placed clusters and, under
// Waves, where the controller's rollout engine would take them.
type Rollout struct {
	// Strategy is All (one wave, "all") or Waves.
	Strategy string `json:"strategy"`
	Paused   bool   `json:"paused"`
	Waves    []Wave `json:"waves"`
	// Engine: the controller's rollout engine decided the waves' phases
	// and when each cluster gets the change. False under strategy All,
	// and when plan could not read the resource's revisions (Note says
	// why): then the timing is plan's approximation.
	Engine bool `json:"engine"`
	// Note says why the engine was not run under Waves; "" when it was.
	Note string `json:"note"`
	// Revision is the revision the planned content is rolled out as: the
	// newest ControllerRevision when the content is its, else a new one
	// (NewRevision); FromRevision is the one the clusters not reached yet
	// stay at. Both 0 when the engine was not run.
	Revision     int64 `json:"revision"`
	NewRevision  bool  `json:"newRevision"`
	FromRevision int64 `json:"fromRevision"`
	// Complete: every wave is complete (condition RolledOut would be True).
	Complete bool `json:"complete"`
	// Halted is why the rollout stopped; null when it did not.
	Halted *Halt `json:"halted"`
	// Progress is where the rollout is, as condition RolledOut's message
	// would say it; "" when the engine was not run.
	Progress string `json:"progress"`
}

// WaveOf returns the wave cluster falls in, numbered from 1; 0 when none.
func (r Rollout) WaveOf(cluster string) (string, int) {
	for i, w := range r.Waves {
		if slices.Contains(w.Clusters, cluster) {
			return w.Name, i + 1
		}
	}
	return "", 0
}

// Dependency is one object a workload's pod template names, and what the
// change does to its copies.
type Dependency struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// State: Propagated (a derived resource sends it), Explicit (the
	// user's own Federated<Kind> does), Missing (not on the host) or
	// KindNotEnabled.
	State    string `json:"state"`
	Optional bool   `json:"optional"`
	// Adds and Removes are the clusters that gain or lose its copy.
	Adds    []string `json:"adds"`
	Removes []string `json:"removes"`
}

// Halt is why a rollout stopped: condition RolloutHalted's reason and
// message.
type Halt struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Wave is one wave with the placed clusters it chose.
type Wave struct {
	Name           string   `json:"name"`
	Clusters       []string `json:"clusters"`
	Pause          bool     `json:"pause"`
	BakeSeconds    int32    `json:"bakeSeconds"`
	MaxUnavailable *int32   `json:"maxUnavailable"`
	// Phase and Message are the wave's in the engine's decision, as
	// status.rollout would have them; "" when the engine was not run.
	Phase   string `json:"phase"`
	Message string `json:"message"`
}

// Action is what the controller would do in a cluster: the write
// decision's actions (propagation.Action), and two of the report's own.
type Action string

const (
	ActionCreate    = Action(propagation.ActionCreate)
	ActionUpdate    = Action(propagation.ActionUpdate)
	ActionDelete    = Action(propagation.ActionDelete)
	ActionUnchanged = Action(propagation.ActionUnchanged)
	ActionConflict  = Action(propagation.ActionConflict)
	// ActionNotPlaced: the resource does not go there, and has no copy.
	ActionNotPlaced Action = "NotPlaced"
	// ActionUnknown: the cluster could not be planned (see error).
	ActionUnknown Action = "Unknown"
)

// Writes tells whether the action writes to the member.
func (a Action) Writes() bool { return propagation.Action(a).Writes() }

// Cluster is the plan of one cluster.
type Cluster struct {
	Name   string `json:"name"`
	Placed bool   `json:"placed"`
	// Replicas are the scheduler's, when it divides them.
	Replicas *int32 `json:"replicas"`
	// Wave is the wave the cluster falls in, WaveNumber its place from 1;
	// "" and 0 for a cluster that is not placed.
	Wave       string `json:"wave"`
	WaveNumber int    `json:"waveNumber"`
	Action     Action `json:"action"`
	// Now: the controller makes the write at its next sync; false for a
	// write a rollout in waves holds back until the cluster's wave starts,
	// and when nothing is written.
	Now bool `json:"now"`
	// TargetRevision is the revision the rollout engine gives the cluster:
	// the latest, or an earlier one it holds the cluster at (Held); 0 when
	// the engine was not run or the cluster is not placed.
	TargetRevision int64 `json:"targetRevision"`
	Held           bool  `json:"held"`
	// Reason says why.
	Reason string `json:"reason"`
	// Pull: the cluster's agent applies the change; the host cannot read
	// or dry-run it.
	Pull bool `json:"pull"`
	// DryRun is the member's answer to the write; null when nothing is
	// written.
	DryRun *DryRun `json:"dryRun"`
	// Diff is the unified diff of the live copy (---) against the planned
	// one (+++), as YAML, pruned to the fields Fedwarden sets; "" when
	// nothing would change or the live copy could not be read.
	Diff string `json:"diff"`
	// Rendered is the copy the controller would write (a Secret's values
	// redacted); null for a cluster that is not placed.
	Rendered map[string]any `json:"rendered"`
	// OverwritesDrift is the drift the ClusterPropagatedVersion records in
	// the cluster and the write would overwrite; null when none.
	OverwritesDrift *Drift `json:"overwritesDrift"`
	// Error says why the cluster could not be planned; "" when it was.
	Error string `json:"error"`
}

// DryRunStatus is how a member answered the dry run.
type DryRunStatus string

const (
	// DryRunAllowed: the member would take the write.
	DryRunAllowed DryRunStatus = "Allowed"
	// DryRunRefused: the member refuses it: admission, quota, schema or
	// rights.
	DryRunRefused DryRunStatus = "Refused"
	// DryRunSkipped: no dry run could tell (see message).
	DryRunSkipped DryRunStatus = "Skipped"
	// DryRunFailed: the member could not be asked (see the cluster's
	// error).
	DryRunFailed DryRunStatus = "Failed"
)

// DryRun is the member's answer to a server-side dry run of the write.
type DryRun struct {
	Status  DryRunStatus `json:"status"`
	Allowed bool         `json:"allowed"`
	Message string       `json:"message"`
}

// Drift is a cluster's drift as its CPV entry records it.
type Drift struct {
	State        string       `json:"state"`
	ChangedPaths []string     `json:"changedPaths"`
	ChangedBy    []string     `json:"changedBy"`
	DriftedSince *metav1.Time `json:"driftedSince"`
}

// Summary counts the clusters by outcome.
type Summary struct {
	// Changes are the clusters that would be written.
	Changes []string `json:"changes"`
	// Refused are those whose member refuses the write.
	Refused []string `json:"refused"`
	// Conflicts are those with an object Fedwarden does not manage.
	Conflicts []string `json:"conflicts"`
	// Errors are those that could not be planned.
	Errors []string `json:"errors"`
}

// Summarize fills r.Summary from its clusters.
func (r *Report) Summarize() {
	r.Summary = Summary{Changes: []string{}, Refused: []string{}, Conflicts: []string{}, Errors: []string{}}
	for _, c := range r.Clusters {
		if c.Action.Writes() {
			r.Summary.Changes = append(r.Summary.Changes, c.Name)
		}
		if c.DryRun != nil && c.DryRun.Status == DryRunRefused {
			r.Summary.Refused = append(r.Summary.Refused, c.Name)
		}
		if c.Action == ActionConflict {
			r.Summary.Conflicts = append(r.Summary.Conflicts, c.Name)
		}
		if c.Error != "" {
			r.Summary.Errors = append(r.Summary.Errors, c.Name)
		}
	}
}

// Describe names the resource: FederatedDeployment shop/web.
func (r *Report) Describe() string {
	return r.Kind + " " + cache.ObjectName{Namespace: r.Namespace, Name: r.Name}.String()
}
