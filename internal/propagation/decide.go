package propagation

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/render"
)

// Action is what a sync does with one cluster's copy: the write decision.
type Action string

// The actions of the write decision.
const (
	ActionCreate    Action = "Create"
	ActionUpdate    Action = "Update"
	ActionDelete    Action = "Delete"
	ActionUnchanged Action = "Unchanged"
	// ActionConflict: the member holds an object of the copy's name that
	// Fedwarden does not manage and may not take over.
	ActionConflict Action = "Conflict"
)

// Writes tells whether the action writes to the member.
func (a Action) Writes() bool {
	return a == ActionCreate || a == ActionUpdate || a == ActionDelete
}

// Copy is what the write decision knows of one placed cluster's copy.
type Copy struct {
	Type Type
	// Fed is the resource: its annotations say whether it adopts, its UID
	// is what the copies it writes are stamped with.
	Fed      *unstructured.Unstructured
	Versions render.Versions
	// Previous is the cluster's CPV entry before the sync; Recorded says
	// whether there is one.
	Previous typesv1beta1.ClusterVersion
	Recorded bool
	// Desired is the rendered copy; Live the member's object of its name,
	// nil when there is none.
	Desired, Live *unstructured.Unstructured
	Policy        drift.Policy
	// Force: kubefed.io/resync has a new value; every placed cluster is
	// written.
	Force bool
	// Now is when the policy's waivers are judged; the time of the
	// decision when zero.
	Now time.Time
}

// Decision is the write decision for one cluster, and why.
type Decision struct {
	Action Action
	Reason string
	// State is the drift found, "" when none; Changes its paths.
	State   typesv1beta1.DriftState
	Changes []drift.Change
	// Adopted: a copy Fedwarden never wrote holds what it would write and
	// is taken as it is, with no write.
	Adopted bool
	// NewContent: the write carries content the copy does not have yet,
	// which a rollout in waves may hold back.
	NewContent bool
	// Waiver is, when State is Waived, the waiver of the waived changes
	// that expires first.
	Waiver *drift.Waiver
}

// OutOfBand tells whether the drift found is someone else's doing in the
// member, which the remediation policy governs.
func (d Decision) OutOfBand() bool {
	return d.State == typesv1beta1.ModifiedOutOfBand || d.State == typesv1beta1.Missing
}

// DecideWrite is the write decision, the one rule the controller, the
// agent and plan follow. A copy is written when it is missing, when its
// content hash is not the desired one, when it drifted and the policy
// enforces, when another resource of its name wrote it, or when
// kubefed.io/resync has a new value; a drifted copy under Alert is left
// as it is, and an object Fedwarden does not manage is never taken over
// unless the resource may adopt it (MayAdopt).
func DecideWrite(c Copy) (Decision, error) {
	d, err := decideWrite(c)
	if err != nil {
		return d, err
	}
	return forced(d, c.Force, c.Live != nil), nil
}

// forced is d when kubefed.io/resync has a new value (force): a copy left
// as it is is written all the same, created when it does not exist.
func forced(d Decision, force, exists bool) Decision {
	if !force || d.Action != ActionUnchanged {
		return d
	}
	d.Action = ActionUpdate
	if !exists {
		d.Action = ActionCreate
	}
	switch d.State {
	case "":
		d.Reason = typesv1beta1.AnnotationResync + " has a new value: the copy is written again"
	case typesv1beta1.Missing:
		d.Reason = "the copy was deleted in the member: it is created again, as " + typesv1beta1.AnnotationResync + " has a new value"
	default:
		d.Reason = strings.Replace(d.Reason, "; left as it is", "; written back", 1) + ", as " + typesv1beta1.AnnotationResync + " has a new value"
	}
	return d
}

// DecideFromEntry is DecideWrite as the host foresees it in a Pull
// cluster's agent, which decides by DecideWrite on its own copy: from the
// agent's CPV entry alone (prev; recorded says whether there is one), as
// the host cannot read the member. changed says whether the copy planned
// there has content the entry's does not; v are the planned versions.
func DecideFromEntry(prev typesv1beta1.ClusterVersion, recorded, changed bool, v render.Versions, policy drift.Policy, force bool) Decision {
	var d Decision
	switch {
	case !recorded:
		d = Decision{Action: ActionCreate, NewContent: true, Reason: "its agent has reported no copy: it creates one"}
	case prev.State == typesv1beta1.Missing:
		d = decideMissing(Copy{Previous: prev, Recorded: true, Policy: policy})
		d.Reason = "its agent reports that " + d.Reason
	case changed:
		d = Decision{Action: ActionUpdate, NewContent: true, Reason: fmt.Sprintf("its agent reports template version %s, override version %s; it applies %s, %s",
			noneIfEmpty(string(prev.TemplateVersion)), noneIfEmpty(string(prev.OverrideVersion)), v.Template, v.Override)}
	case prev.State == typesv1beta1.ModifiedOutOfBand:
		d = Decision{Action: ActionUnchanged, State: prev.State,
			Reason: fmt.Sprintf("its agent reports the copy changed in the member by %s; left as it is (remediation %s)", entryChangedBy(prev), policy.Remediation)}
		if policy.Enforced() {
			d.Action, d.Reason = ActionUpdate, strings.Replace(d.Reason, "; left as it is", "; written back", 1)
		}
	default:
		d = Decision{Action: ActionUnchanged, Reason: "its agent reports the current versions"}
	}
	return forced(d, force, prev.State != typesv1beta1.Missing && recorded)
}

// entryChangedBy says who changed which paths, as a CPV entry records it.
func entryChangedBy(cv typesv1beta1.ClusterVersion) string {
	by := "someone"
	if len(cv.ChangedBy) > 0 {
		by = strings.Join(cv.ChangedBy, ", ")
	}
	return by + ": " + strings.Join(cv.ChangedPaths, ", ")
}

func decideWrite(c Copy) (Decision, error) {
	live := c.Live
	if live == nil {
		return decideMissing(c), nil
	}
	managed := live.GetLabels()[typesv1beta1.LabelManaged] == "true"
	hash := render.ContentHash(c.Desired.Object)
	switch {
	case !managed && !MayAdopt(c.Type, c.Fed, live):
		return Decision{Action: ActionConflict, Reason: fmt.Sprintf("the cluster already has %s %s, which Fedwarden does not manage; annotate the %s with %s: %s to take it over",
			c.Type.Target.Kind, keyOf(live), c.Type.Federated.Kind, typesv1beta1.AnnotationConflictResolution, typesv1beta1.ConflictResolutionAdopt)}, nil
	case !managed:
		return Decision{Action: ActionUpdate, NewContent: true, State: c.missedUpdates(),
			Reason: "Fedwarden takes the copy over (" + typesv1beta1.AnnotationConflictResolution + ": " + typesv1beta1.ConflictResolutionAdopt + ")"}, nil
	case live.GetAnnotations()[typesv1beta1.AnnotationDesiredHash] == "":
		return decideUnstamped(c)
	case live.GetAnnotations()[typesv1beta1.AnnotationDesiredHash] != hash:
		return Decision{Action: ActionUpdate, NewContent: true, State: c.missedUpdates(), Reason: changedVersions(c)}, nil
	}
	d, err := decideDrift(c, deepestOf(false))
	if err != nil || d.State != "" || !StampedByAnother(c.Fed, live) {
		if d.State == "" && err == nil {
			d.Reason = "the copy is current"
		}
		return d, err
	}
	return Decision{Action: ActionUpdate, Reason: "the copy was written by another resource of this name (" + typesv1beta1.AnnotationOwnerUID + "): this one takes it over"}, nil
}

// decideMissing decides for a cluster with no copy: a copy Fedwarden
// wrote and someone deleted is drift, which the policy governs.
func decideMissing(c Copy) Decision {
	if !c.Recorded || c.Previous.Version == "" {
		return Decision{Action: ActionCreate, NewContent: true, Reason: "the cluster has no copy"}
	}
	d := Decision{State: typesv1beta1.Missing}
	if !c.Policy.Enforced() {
		d.Action, d.Reason = ActionUnchanged, fmt.Sprintf("the copy was deleted in the member; not recreated (remediation %s)", c.Policy.Remediation)
		return d
	}
	d.Action, d.Reason = ActionCreate, "the copy was deleted in the member: it is created again"
	return d
}

// decideUnstamped decides for a managed copy Fedwarden never wrote, such
// as one KubeFed placed. Once recorded InSync, a copy whose resource
// changed since is behind it, as a stamped copy with an old hash is: it is
// written. Otherwise every field desired sets is compared, whoever owns it
// (the copy's writer is not Fedwarden): none differs, and the copy is
// adopted as it is, with no write; any that does is drift, which the
// policy governs.
func decideUnstamped(c Copy) (Decision, error) {
	prev := c.Previous
	if c.Recorded && (prev.State == typesv1beta1.InSync || prev.State == typesv1beta1.RolloutPending) &&
		(prev.TemplateVersion != c.Versions.Template || prev.OverrideVersion != c.Versions.Override) {
		return Decision{Action: ActionUpdate, NewContent: true, Reason: changedVersions(c)}, nil
	}
	d, err := decideDrift(c, deepestOf(true))
	if err == nil && d.State == "" {
		d.Adopted, d.Reason = true, "the copy, which Fedwarden did not write, holds what it would write: it is adopted as it is"
	}
	return d, err
}

// decideDrift decides for a copy whose content is current: drift is
// healed when the policy enforces, left as it is under Alert.
func decideDrift(c Copy, paths func([]drift.Change) []drift.Change) (Decision, error) {
	changes, err := c.Policy.Detect(c.Desired, c.Live, FieldManager)
	if err != nil {
		return Decision{}, fmt.Errorf("comparing the copy: %w", err)
	}
	if len(changes) == 0 {
		return Decision{Action: ActionUnchanged}, nil
	}
	waived, rest, w := c.Policy.Waive(changes, c.now())
	if len(rest) == 0 {
		// Kept, whatever the remediation, until the waiver expires.
		d := Decision{Action: ActionUnchanged, State: typesv1beta1.Waived, Changes: paths(waived), Waiver: &w}
		d.Reason = fmt.Sprintf("changed in the member by %s; kept: %s", changedBy(d.Changes), describeWaiver(w))
		return d, nil
	}
	// The other paths are handled as always; a write keeps the waived
	// ones' member values (Policy.Retained).
	changes = rest
	d := Decision{State: typesv1beta1.ModifiedOutOfBand, Changes: paths(changes)}
	what := "changed in the member by " + changedBy(d.Changes)
	if why := c.Policy.Unhonoured(changes, c.now()); why != "" {
		what += "; " + why
	}
	if c.Policy.Enforced() {
		d.Action, d.Reason = ActionUpdate, fmt.Sprintf("%s; written back (remediation %s)", what, c.Policy.Remediation)
		return d, nil
	}
	d.Action, d.Reason = ActionUnchanged, fmt.Sprintf("%s; left as it is (remediation %s)", what, c.Policy.Remediation)
	return d, nil
}

// now is when c's waivers are judged.
func (c Copy) now() time.Time {
	if c.Now.IsZero() {
		return time.Now()
	}
	return c.Now
}

// describeWaiver says which waiver keeps a drift: "waived until
// 2026-12-24T00:00:00Z (valve maintenance, ops@example.com)".
func describeWaiver(w drift.Waiver) string {
	why := w.Reason
	if w.Owner != "" {
		why += ", " + w.Owner
	}
	return fmt.Sprintf("waived until %s (%s)", w.Expires.UTC().Format(time.RFC3339), why)
}

// changedBy says who changed which paths: "kubectl-edit: /data/A".
func changedBy(changes []drift.Change) string {
	paths, managers := drift.Paths(changes)
	by := "someone"
	if len(managers) > 0 {
		by = strings.Join(managers, ", ")
	}
	return by + ": " + strings.Join(paths, ", ")
}

// missedUpdates is the drift state of a copy behind the control plane
// because the cluster could not be written to: its CPV entry says it was
// unreachable, refused or already behind. "" when it was not.
func (c Copy) missedUpdates() typesv1beta1.DriftState {
	if !c.Recorded {
		return ""
	}
	switch c.Previous.State {
	case typesv1beta1.Unreachable, typesv1beta1.ApplyFailed, typesv1beta1.OutdatedTemplate, typesv1beta1.OutdatedOverrides:
	default:
		return ""
	}
	if c.Live.GetAnnotations()[typesv1beta1.AnnotationTemplateVersion] != string(c.Versions.Template) {
		return typesv1beta1.OutdatedTemplate
	}
	return typesv1beta1.OutdatedOverrides
}

// changedVersions says why a copy whose content differs is written: the
// versions it moves to.
func changedVersions(c Copy) string {
	annotations := c.Live.GetAnnotations()
	var parts []string
	if got := annotations[typesv1beta1.AnnotationTemplateVersion]; got != string(c.Versions.Template) {
		parts = append(parts, fmt.Sprintf("template version %s → %s", noneIfEmpty(got), c.Versions.Template))
	}
	if got := annotations[typesv1beta1.AnnotationOverrideVersion]; got != string(c.Versions.Override) {
		parts = append(parts, fmt.Sprintf("override version %s → %s", noneIfEmpty(got), c.Versions.Override))
	}
	if len(parts) == 0 {
		return "the copy differs from what the controller writes"
	}
	return strings.Join(parts, ", ")
}

// MayAdopt tells whether fed may take over got, a member object of its
// copy's name that Fedwarden does not manage: when fed says adopt, or got
// is a namespace Fedwarden created; a kube-* namespace never.
func MayAdopt(typ Type, fed, got *unstructured.Unstructured) bool {
	if typ.IsNamespace() && isSystemNamespace(got.GetName()) {
		return false // never, whatever fed says
	}
	if fed.GetAnnotations()[typesv1beta1.AnnotationConflictResolution] == typesv1beta1.ConflictResolutionAdopt {
		return true
	}
	return typ.IsNamespace() && got.GetAnnotations()[typesv1beta1.AnnotationCreatedNamespace] == "true"
}

// PolicyFor is the drift policy of one cluster, whose FederatedCluster has
// clusterLabels (which waivers' clusterSelectors select on): the
// resource's, else def; with retainReplicas, the member's replicas are
// never drift.
func PolicyFor(spec render.Spec, cluster string, clusterLabels map[string]string, def typesv1beta1.Remediation) drift.Policy {
	p := drift.PolicyFor(spec.DriftPolicy, cluster, clusterLabels, def)
	if spec.RetainReplicas {
		p.IgnorePaths = append(p.IgnorePaths, "/spec/replicas")
	}
	return p
}

// deepestOf returns deepest when unstamped, else the changes as they are:
// a copy another writer wrote is judged on its leaves.
func deepestOf(unstamped bool) func([]drift.Change) []drift.Change {
	if unstamped {
		return deepest
	}
	return func(c []drift.Change) []drift.Change { return c }
}

// keyOf is obj's namespace/name, or name.
func keyOf(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

func noneIfEmpty(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
