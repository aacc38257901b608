package plan

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/render"
)

// decision is what the controller would do with one placed cluster's copy,
// and why.
type decision struct {
	action Action
	reason string
	// newRevision: the write carries content the copy does not have yet,
	// which a rollout in waves holds back.
	newRevision bool
}

// decide tells what the controller's sync would do with live, the
// member's copy (nil when it has none), given desired: the rules of
// propagation's syncCluster and classify, which are not exported. A copy
// is written when it is missing, when its content hash is not desired's,
// when it drifted and the policy enforces, or when kubefed.io/resync has a
// new value; a drifted copy under Alert is left as it is, and an object
// Fedwarden does not manage is never taken over unless the resource says
// adopt.
func decide(in *planInput, prev typesv1beta1.ClusterVersion, recorded bool, desired, live *unstructured.Unstructured, policy drift.Policy) (decision, error) {
	wroteBefore := recorded && prev.Version != ""
	if live == nil {
		switch {
		case wroteBefore && !policy.Enforced() && !in.force:
			return decision{ActionUnchanged, fmt.Sprintf("the copy was deleted in the member; not recreated (remediation %s)", policy.Remediation), false}, nil
		case wroteBefore:
			return decision{ActionCreate, "the copy was deleted in the member: it is created again", false}, nil
		}
		return decision{ActionCreate, "the cluster has no copy", true}, nil
	}
	managed := live.GetLabels()[typesv1beta1.LabelManaged] == "true"
	if !managed && !mayAdopt(in, live) {
		return decision{ActionConflict, fmt.Sprintf("the cluster already has %s %s, which Fedwarden does not manage; annotate the %s with %s: %s to take it over",
			in.s.kind.Type.Target.Kind, describeKey(live.GetNamespace(), live.GetName()), in.s.kind.Type.Federated.Kind,
			typesv1beta1.AnnotationConflictResolution, typesv1beta1.ConflictResolutionAdopt), false}, nil
	}
	hash := render.ContentHash(desired.Object)
	stampedHash := live.GetAnnotations()[typesv1beta1.AnnotationDesiredHash]
	switch {
	case managed && stampedHash == "":
		return decideUnstamped(in, prev, recorded, desired, live, policy)
	case !managed:
		return decision{ActionUpdate, "Fedwarden takes the copy over (" + typesv1beta1.AnnotationConflictResolution + ": " + typesv1beta1.ConflictResolutionAdopt + ")", true}, nil
	case stampedHash != hash:
		return decision{ActionUpdate, changedVersions(in, live), true}, nil
	case propagation.StampedByAnother(in.owner(), live):
		return decideTakeOver(in, desired, live, policy)
	}
	return decideDrift(in, desired, live, policy, "the copy is current")
}

// owner is the resource whose UID the controller stamps copies with: the
// host's, when it has the resource (a manifest of -f carries none).
func (in *planInput) owner() *unstructured.Unstructured {
	if in.s.current != nil {
		return in.s.current
	}
	return in.s.fed
}

// decideTakeOver decides for a current copy another resource of this name
// wrote (an earlier one, which orphaned it): it is written once, to stamp
// it as this one's, unless it drifted and the policy leaves drift alone.
func decideTakeOver(in *planInput, desired, live *unstructured.Unstructured, policy drift.Policy) (decision, error) {
	d, err := decideDrift(in, desired, live, policy, "")
	if err != nil || d.action != ActionUnchanged || d.reason != "" {
		return d, err
	}
	return decision{ActionUpdate, "the copy was written by another resource of this name (" + typesv1beta1.AnnotationOwnerUID + "): this one takes it over", false}, nil
}

// decideUnstamped decides for a managed copy Fedwarden never wrote, such
// as one KubeFed placed: written once the resource changed since it was
// recorded InSync; otherwise adopted as it is when it holds what desired
// says, else drift.
func decideUnstamped(in *planInput, prev typesv1beta1.ClusterVersion, recorded bool, desired, live *unstructured.Unstructured, policy drift.Policy) (decision, error) {
	if recorded && prev.State == typesv1beta1.InSync && (prev.TemplateVersion != in.v.Template || prev.OverrideVersion != in.v.Override) {
		return decision{ActionUpdate, changedVersions(in, live), true}, nil
	}
	return decideDrift(in, desired, live, policy, "the copy, which Fedwarden did not write, holds what it would write: it is adopted as it is")
}

// decideDrift decides for a copy whose content is current: drift is
// healed when the policy enforces, left as it is under Alert; a new
// kubefed.io/resync value writes it anyway.
func decideDrift(in *planInput, desired, live *unstructured.Unstructured, policy drift.Policy, current string) (decision, error) {
	changes, err := policy.Detect(desired, live, propagation.FieldManager)
	if err != nil {
		return decision{}, fmt.Errorf("comparing the copy: %w", err)
	}
	if len(changes) > 0 {
		paths, managers := drift.Paths(changes)
		by := "someone"
		if len(managers) > 0 {
			by = strings.Join(managers, ", ")
		}
		what := fmt.Sprintf("changed in the member by %s: %s", by, strings.Join(paths, ", "))
		if policy.Enforced() || in.force {
			return decision{ActionUpdate, what + "; written back (remediation " + string(policy.Remediation) + ")", false}, nil
		}
		return decision{ActionUnchanged, what + "; left as it is (remediation " + string(policy.Remediation) + ")", false}, nil
	}
	if in.force {
		return decision{ActionUpdate, "kubefed.io/resync has a new value: the copy is written again", false}, nil
	}
	return decision{ActionUnchanged, current, false}, nil
}

// changedVersions says why a copy whose content differs is written: the
// versions it moves to.
func changedVersions(in *planInput, live *unstructured.Unstructured) string {
	annotations := live.GetAnnotations()
	var parts []string
	if got := annotations[typesv1beta1.AnnotationTemplateVersion]; got != string(in.v.Template) {
		parts = append(parts, fmt.Sprintf("template version %s → %s", orNone(got), in.v.Template))
	}
	if got := annotations[typesv1beta1.AnnotationOverrideVersion]; got != string(in.v.Override) {
		parts = append(parts, fmt.Sprintf("override version %s → %s", orNone(got), in.v.Override))
	}
	if len(parts) == 0 {
		return "the copy differs from what the controller writes"
	}
	return strings.Join(parts, ", ")
}

// mayAdopt tells whether the resource may take over the unmanaged member
// object got, as the controller decides.
func mayAdopt(in *planInput, got *unstructured.Unstructured) bool {
	typ := in.s.kind.Type
	if typ.IsNamespace() && strings.HasPrefix(got.GetName(), "kube-") {
		return false
	}
	if in.s.fed.GetAnnotations()[typesv1beta1.AnnotationConflictResolution] == typesv1beta1.ConflictResolutionAdopt {
		return true
	}
	return typ.IsNamespace() && got.GetAnnotations()[typesv1beta1.AnnotationCreatedNamespace] == "true"
}

// policyFor is the drift policy of one cluster, as the controller's: with
// retainReplicas, the member's replicas are never drift.
func policyFor(in *planInput, cluster string, def typesv1beta1.Remediation) drift.Policy {
	p := drift.PolicyFor(in.s.spec.DriftPolicy, cluster, def)
	if in.s.spec.RetainReplicas {
		p.IgnorePaths = append(p.IgnorePaths, "/spec/replicas")
	}
	return p
}
