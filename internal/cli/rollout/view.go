package rollout

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// none fills an empty cell, as kubectl does.
const none = "-"

// snapshot is what status shows of a federated resource at one moment.
type snapshot struct {
	// name names the resource: FederatedDeployment shop/web.
	name string
	// resume is the command that resumes its rollout, for hints.
	resume     string
	generation int64
	// spec is spec.rollout; nil when the resource has none.
	spec   *typesv1beta1.Rollout
	status typesv1beta1.FederatedStatus
	// cpv is the resource's ClusterPropagatedVersion; nil when there is
	// none yet.
	cpv *typesv1beta1.ClusterPropagatedVersion
}

// newSnapshot reads spec.rollout and the status of fed.
func newSnapshot(name, resume string, fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion) (snapshot, error) {
	s := snapshot{name: name, resume: resume, generation: fed.GetGeneration(), cpv: cpv}
	spec, found, err := unstructured.NestedMap(fed.Object, "spec", "rollout")
	if err != nil {
		return s, fmt.Errorf("%s: reading spec.rollout: %w", name, err)
	}
	if found {
		s.spec = &typesv1beta1.Rollout{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, s.spec); err != nil {
			return s, fmt.Errorf("%s: reading spec.rollout: %w", name, err)
		}
	}
	status, _, err := unstructured.NestedMap(fed.Object, "status")
	if err != nil {
		return s, fmt.Errorf("%s: reading status: %w", name, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(status, &s.status); err != nil {
		return s, fmt.Errorf("%s: reading status: %w", name, err)
	}
	return s, nil
}

// waves tells whether the resource rolls out in waves.
func (s snapshot) waves() bool {
	return s.spec != nil && s.spec.Strategy == typesv1beta1.RolloutWaves
}

// outcome is where a rollout is, for status's exit code.
type outcome int

const (
	// waiting: the rollout goes on, is paused, awaits approval, or the
	// control plane has not seen the latest change yet.
	waiting outcome = iota
	// rolledOut: every placed cluster targets the latest revision.
	rolledOut
	// halted: the rollout stopped (condition RolloutHalted).
	halted
)

// verdict says where the rollout is, in a sentence. Conditions count only
// once the status is of the resource's generation: a condition written
// before a pause, or an undo, says nothing of what follows.
func (s snapshot) verdict() (outcome, string) {
	if s.status.ObservedGeneration < s.generation {
		return waiting, fmt.Sprintf("Waiting for the control plane to observe generation %d (the status is of generation %d)", s.generation, s.status.ObservedGeneration)
	}
	conds := s.status.Conditions
	if c := meta.FindStatusCondition(conds, typesv1beta1.FederatedRolloutHalted); c != nil && c.Status == metav1.ConditionTrue {
		return halted, fmt.Sprintf("Halted (%s): %s", c.Reason, c.Message)
	}
	rolled := meta.FindStatusCondition(conds, typesv1beta1.FederatedRolledOut)
	if rolled != nil && rolled.Status == metav1.ConditionTrue {
		if r := s.status.Rollout; r != nil && r.Revision > 0 {
			return rolledOut, fmt.Sprintf("Rolled out: every placed cluster targets revision %d", r.Revision)
		}
		return rolledOut, "Rolled out: " + orDefault(rolled.Message, "every placed cluster targets the latest revision")
	}
	if !s.waves() && rolled == nil {
		// A rollout of strategy All is its propagation.
		if c := meta.FindStatusCondition(conds, typesv1beta1.FederatedPropagated); c != nil {
			if c.Status == metav1.ConditionTrue {
				return rolledOut, "Rolled out: every placed cluster has the current template and overrides"
			}
			return waiting, fmt.Sprintf("Propagating (%s): %s", c.Reason, c.Message)
		}
		return waiting, "Waiting for the control plane to propagate it"
	}
	if s.spec != nil && s.spec.Paused {
		return waiting, fmt.Sprintf("Paused: `%s` resumes it", s.resume)
	}
	if rolled == nil && s.status.Rollout == nil {
		return waiting, "Waiting for the control plane to start the rollout"
	}
	if i := awaitingApproval(s.status.Rollout); i >= 0 {
		return waiting, fmt.Sprintf("Wave %s awaits approval: `%s` starts it", s.status.Rollout.Waves[i].Name, s.resume)
	}
	if rolled != nil && rolled.Message != "" {
		return waiting, fmt.Sprintf("Rolling out (%s): %s", rolled.Reason, rolled.Message)
	}
	return waiting, "Rolling out"
}

// awaitingApproval returns the index of the first wave of r that awaits
// approval, or -1.
func awaitingApproval(r *typesv1beta1.RolloutStatus) int {
	if r == nil {
		return -1
	}
	return slices.IndexFunc(r.Waves, func(w typesv1beta1.WaveStatus) bool { return w.Phase == typesv1beta1.WaveAwaitingApproval })
}

// print writes the snapshot: a header, a table of the clusters (by wave
// under strategy Waves), the waves' messages and the verdict.
func (s snapshot) print(w io.Writer) error {
	var b strings.Builder
	if s.waves() {
		s.printWaves(&b)
	} else {
		s.printAll(&b)
	}
	_, line := s.verdict()
	b.WriteString(line + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// printWaves writes the rollout in waves: each wave's phase, and each of
// its clusters' target revision, state and health.
func (s snapshot) printWaves(b *strings.Builder) {
	r := s.status.Rollout
	paused := ""
	if s.spec.Paused {
		paused = ", paused"
	}
	if r == nil || r.Revision == 0 {
		fmt.Fprintf(b, "%s: strategy Waves%s, no rollout recorded yet\n", s.name, paused)
		s.printClusters(b)
		return
	}
	from := ""
	if r.FromRevision > 0 && r.FromRevision != r.Revision {
		from = fmt.Sprintf(" (from revision %d)", r.FromRevision)
	}
	fmt.Fprintf(b, "%s: revision %d%s, strategy Waves%s\n", s.name, r.Revision, from, paused)
	tw := tabwriter.NewWriter(b, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "WAVE\tPHASE\tCLUSTER\tTARGET\tSTATE\tHEALTH")
	shown := map[string]bool{}
	for _, wave := range r.Waves {
		if len(wave.Clusters) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\n", wave.Name, wave.Phase, none)
		}
		for i, cluster := range wave.Clusters {
			name, phase := wave.Name, string(wave.Phase)
			if i > 0 {
				name, phase = "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, phase, s.clusterCells(string(cluster)))
			shown[string(cluster)] = true
		}
	}
	if s.cpv != nil {
		for _, pc := range s.cpv.Spec.Clusters {
			if !shown[string(pc.Name)] {
				fmt.Fprintf(tw, "%s\t\t%s\n", none, s.clusterCells(string(pc.Name)))
			}
		}
	}
	_ = tw.Flush()
	for _, wave := range r.Waves {
		if wave.Message != "" {
			fmt.Fprintf(b, "Wave %s: %s\n", wave.Name, wave.Message)
		}
	}
}

// clusterCells are a cluster's TARGET, STATE and HEALTH cells.
func (s snapshot) clusterCells(cluster string) string {
	cv := s.entry(cluster)
	if cv == nil {
		return fmt.Sprintf("%s\t%s\t%s\t%s", cluster, none, none, none)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s", cluster, revision(cv.TargetRevision), orDefault(string(cv.State), none), orDefault(string(cv.Health), none))
}

// printAll writes a resource whose revisions reach every cluster at once:
// each placed cluster's versions.
func (s snapshot) printAll(b *strings.Builder) {
	fmt.Fprintf(b, "%s: strategy All: every cluster gets each revision at once\n", s.name)
	s.printClusters(b)
}

// printClusters writes the placed clusters' versions, state and health.
func (s snapshot) printClusters(b *strings.Builder) {
	if s.cpv == nil {
		b.WriteString("No ClusterPropagatedVersion yet: the control plane has not placed it\n")
		return
	}
	if len(s.cpv.Spec.Clusters) == 0 {
		b.WriteString("Placed on no cluster\n")
		return
	}
	tw := tabwriter.NewWriter(b, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tTARGET\tTEMPLATE\tOVERRIDE\tSTATE\tHEALTH")
	for _, pc := range s.cpv.Spec.Clusters {
		cv := s.entry(string(pc.Name))
		if cv == nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", pc.Name, none, none, none, none, none)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", pc.Name, revision(cv.TargetRevision),
			orDefault(string(cv.TemplateVersion), none), orDefault(string(cv.OverrideVersion), none),
			orDefault(string(cv.State), none), orDefault(string(cv.Health), none))
	}
	_ = tw.Flush()
}

// entry returns the CPV's entry of cluster, or nil.
func (s snapshot) entry(cluster string) *typesv1beta1.ClusterVersion {
	if s.cpv == nil {
		return nil
	}
	for i := range s.cpv.Status.ClusterVersions {
		if string(s.cpv.Status.ClusterVersions[i].ClusterName) == cluster {
			return &s.cpv.Status.ClusterVersions[i]
		}
	}
	return nil
}

// revision writes a revision number, or none for 0.
func revision(r typesv1beta1.Revision) string {
	if r == 0 {
		return none
	}
	return strconv.FormatInt(int64(r), 10)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
