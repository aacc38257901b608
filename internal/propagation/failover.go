package propagation

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/failover"
)

// failoverState is the failover stage's judgement of one sync: which
// placed clusters are failed over after it, and what changed.
type failoverState struct {
	// at are the clusters failed over after this sync, with when they
	// failed over.
	at map[string]metav1.Time
	// failed are the clusters that failed over in this sync, returned
	// those that failed back.
	failed, returned []string
	// waiting says, by cluster, what its failover or failback waits for.
	waiting map[string]string
	// next is when the judgement may change by time alone; 0 for never.
	next time.Duration
	// replicas are, by cluster, the replicas the last decision gave it.
	replicas map[string]int32
	// before are the clusters failed over before this sync, as the CPV
	// records them.
	before map[string]metav1.Time
	// tolerated are the clusters not Ready that have not failed over (yet).
	tolerated map[string]bool
	// surge are the clusters the last decision chose as surges.
	surge map[string]bool
	// manual: the policy's failback is Manual.
	manual bool
}

// tolerating is the clusters not Ready within the toleration, as the
// scheduler takes them.
func (f *failoverState) tolerating() map[string]bool {
	if f == nil {
		return nil
	}
	return f.tolerated
}

// surgeOf tells whether the decision that places cluster chooses it as a
// surge: while a cluster is failed over, a cluster the last decision
// (previous) did not place is one, and one chosen so stays so. It looks
// at previous only under a failover, off the hot path of every sync.
func (f *failoverState) surgeOf(cluster string, previous []typesv1beta1.PlacedCluster) bool {
	if f == nil || len(f.at) == 0 {
		return false
	}
	if _, failed := f.at[cluster]; failed {
		return false
	}
	return f.surge[cluster] || !slices.ContainsFunc(previous, func(pc typesv1beta1.PlacedCluster) bool { return string(pc.Name) == cluster })
}

// undecided is f when no decision could be made: the clusters stay failed
// over as the CPV records them, and none fails or returns.
func (f *failoverState) undecided() *failoverState {
	if f == nil {
		return nil
	}
	kept := *f
	kept.at, kept.failed, kept.returned = f.before, nil, nil
	return &kept
}

// clusters are the failed-over clusters, as the scheduler takes them.
func (f *failoverState) clusters() map[string]bool {
	if f == nil {
		return nil
	}
	out := make(map[string]bool, len(f.at))
	for name := range f.at {
		out[name] = true
	}
	return out
}

// judgeFailover judges, under the failover policy of spec, the clusters
// the last decision (cpv's spec.clusters) placed fed on. It applies only
// where something can move: replicas a ReplicaSchedulingPreference
// divides (divided), or a placement with spread constraints, where
// another cluster can take a surge copy. Nil otherwise, and then nothing
// is failed over.
func judgeFailover(fed *unstructured.Unstructured, placement typesv1beta1.Placement, divided bool, cpv *typesv1beta1.ClusterPropagatedVersion,
	clusters []corev1beta1.FederatedCluster, now time.Time) *failoverState {
	policy := placement.Failover
	if policy == nil || (!divided && len(placement.SpreadConstraints) == 0) {
		return nil
	}
	requested, requestedFor := failbackRequest(fed)
	var in []failover.Cluster
	f := &failoverState{at: map[string]metav1.Time{}, replicas: map[string]int32{}, before: map[string]metav1.Time{},
		tolerated: map[string]bool{}, surge: map[string]bool{}, manual: policy.Failback == typesv1beta1.FailbackManual}
	for _, pc := range cpv.Spec.Clusters {
		name := string(pc.Name)
		if pc.Replicas != nil {
			f.replicas[name] = *pc.Replicas
		}
		if pc.Surge {
			f.surge[name] = true
		}
		i := slices.IndexFunc(clusters, func(fc corev1beta1.FederatedCluster) bool { return fc.Name == name })
		if i < 0 {
			continue // unjoined: its copies go with it
		}
		c := failover.Cluster{Name: name, Since: now, FailedOver: pc.FailedOverAt != nil, CopyCurrent: copyCurrent(cpv, name)}
		if ready := meta.FindStatusCondition(clusters[i].Status.Conditions, corev1beta1.ClusterReady); ready != nil {
			c.Ready, c.Since = ready.Status == metav1.ConditionTrue, ready.LastTransitionTime.Time
		} else {
			c.Ready = true // not probed yet: nothing is known to have failed
		}
		if c.FailedOver {
			f.at[name], f.before[name] = *pc.FailedOverAt, *pc.FailedOverAt
			c.FailbackRequested = !requested.IsZero() && !requested.Before(pc.FailedOverAt.Time) &&
				(requestedFor == nil || slices.Contains(requestedFor, name))
		}
		in = append(in, c)
	}
	var moves []time.Time
	for _, at := range f.before {
		moves = append(moves, at.Time)
	}
	v := failover.Judge(failover.Policy{
		Toleration:        seconds(policy.TolerationSeconds, typesv1beta1.DefaultFailoverTolerationSeconds),
		FailbackAfter:     seconds(policy.FailbackAfterSeconds, typesv1beta1.DefaultFailbackAfterSeconds),
		Automatic:         policy.Failback != typesv1beta1.FailbackManual,
		MaxMovesPerMinute: int(ptr.Deref(policy.MaxFailoversPerMinute, 0)),
	}, in, moves, now)
	stamp := metav1.NewTime(now.UTC().Truncate(time.Second))
	for _, name := range v.Fail {
		f.at[name] = stamp
	}
	for _, name := range v.Return {
		delete(f.at, name)
	}
	for _, c := range in {
		if _, failed := f.at[c.Name]; !c.Ready && !failed {
			f.tolerated[c.Name] = true
		}
	}
	f.failed, f.returned, f.waiting, f.next = v.Fail, v.Return, v.Waiting, v.Next
	if raw, set := fed.GetAnnotations()[typesv1beta1.AnnotationFailbackRequested]; set && requested.IsZero() {
		for name := range f.at {
			f.waiting[name] = fmt.Sprintf("%s; the annotation %s %q is not an RFC 3339 time, so it asks for nothing: run fedwarden failback",
				f.waiting[name], typesv1beta1.AnnotationFailbackRequested, raw)
		}
	}
	return f
}

// copyCurrent tells whether cpv records cluster's copy as InSync and
// Healthy.
func copyCurrent(cpv *typesv1beta1.ClusterPropagatedVersion, cluster string) bool {
	i := slices.IndexFunc(cpv.Status.ClusterVersions, func(cv typesv1beta1.ClusterVersion) bool { return string(cv.ClusterName) == cluster })
	return i >= 0 && cpv.Status.ClusterVersions[i].State == typesv1beta1.InSync && cpv.Status.ClusterVersions[i].Health == corev1beta1.HealthHealthy
}

// failbackRequest is when `fedwarden failback` last asked for failback on
// fed, and for which clusters (nil: all); zero when it did not, or the
// annotation cannot be read.
func failbackRequest(fed *unstructured.Unstructured) (time.Time, []string) {
	at, err := time.Parse(time.RFC3339, fed.GetAnnotations()[typesv1beta1.AnnotationFailbackRequested])
	if err != nil {
		return time.Time{}, nil
	}
	names := fed.GetAnnotations()[typesv1beta1.AnnotationFailbackClusters]
	if names == "" {
		return at, nil
	}
	return at, strings.Split(names, ",")
}

func seconds(s *int32, def int32) time.Duration {
	if s == nil {
		return time.Duration(def) * time.Second
	}
	return time.Duration(max(*s, 0)) * time.Second
}

// condition is the FailedOver condition the judgement makes (f is nil
// when no failover policy applies): True while a cluster is failed over,
// False once the last has failed back, or the policy no longer applies;
// ok is false when the resource has none to say (never failed over).
func (f *failoverState) condition(old *metav1.Condition) (status bool, reason, msg string, ok bool) {
	if f == nil || len(f.at) == 0 {
		if old == nil || old.Status != metav1.ConditionTrue {
			return false, "", "", false
		}
		if f == nil {
			return false, typesv1beta1.ReasonFailedBack, "no failover policy applies any more: every placed cluster runs its own replicas again", true
		}
		return false, typesv1beta1.ReasonFailedBack, "every placed cluster runs its own replicas again", true
	}
	names := make([]string, 0, len(f.at))
	for name := range f.at {
		names = append(names, name)
	}
	slices.Sort(names)
	var parts []string
	for _, name := range names {
		part := fmt.Sprintf("cluster %s failed over at %s: its %d replicas run on the other Ready clusters, and its copy is kept",
			name, f.at[name].UTC().Format(time.RFC3339), f.replicas[name])
		if why := f.waiting[name]; why != "" {
			part += "; failback: " + why
		}
		parts = append(parts, part)
	}
	return true, typesv1beta1.ReasonFailedOver, bounded(strings.Join(parts, "; "), 4096), true
}

// failoverEvent is one cluster's failover or failback.
type failoverEvent struct {
	cluster, message string
	back             bool
}

// events are the transitions of the judgement: one per cluster that failed
// over, and one per cluster that failed back.
func (f *failoverState) events() []failoverEvent {
	var out []failoverEvent
	for _, name := range f.failed {
		out = append(out, failoverEvent{cluster: name, message: fmt.Sprintf(
			"cluster %s failed: not Ready for longer than the failover policy tolerates; its replicas (%d) move to the other Ready clusters, or another cluster takes a surge copy, and its own copy is kept",
			name, f.replicas[name])})
	}
	for _, name := range f.returned {
		out = append(out, failoverEvent{cluster: name, back: true, message: fmt.Sprintf(
			"cluster %s failed back: Ready, its copy InSync and Healthy; its replicas (%d) return, the other clusters scale down, and surge copies go once none is failed over",
			name, f.replicas[name])})
	}
	return out
}

// failoverHistory is the CPV's failover ledger after a sync: an episode
// opens for each cluster failed over (f, nil without a policy that
// applies) that has none open, records the surge clusters of the decision
// while it lasts, and ends when its cluster is no longer failed over; the
// newest MaxFailoverHistory are kept.
func failoverHistory(old []typesv1beta1.FailoverEpisode, f *failoverState, surge []string, now metav1.Time) []typesv1beta1.FailoverEpisode {
	out := make([]typesv1beta1.FailoverEpisode, 0, len(old)+1)
	open := map[string]int{}
	for _, ep := range old {
		ep = *ep.DeepCopy()
		if ep.End == nil {
			open[string(ep.Cluster)] = len(out)
		}
		out = append(out, ep)
	}
	var at map[string]metav1.Time
	if f != nil {
		at = f.at
	}
	for _, name := range slices.Sorted(maps.Keys(at)) {
		i, ok := open[name]
		if !ok {
			ep := typesv1beta1.FailoverEpisode{Cluster: typesv1beta1.ClusterName(name), Start: at[name]}
			if n, divided := f.replicas[name]; divided {
				ep.Replicas = &n
			}
			out = append(out, ep)
			i = len(out) - 1
		}
		for _, s := range surge {
			if !slices.Contains(out[i].Surge, typesv1beta1.ClusterName(s)) {
				out[i].Surge = append(out[i].Surge, typesv1beta1.ClusterName(s))
			}
		}
	}
	for name, i := range open {
		if _, still := at[name]; still {
			continue
		}
		out[i].End = &now
		out[i].EndedBy = typesv1beta1.FailoverEndedPolicy
		if f != nil && slices.Contains(f.returned, name) {
			out[i].EndedBy = typesv1beta1.FailoverEndedAutomatic
			if f.manual {
				out[i].EndedBy = typesv1beta1.FailoverEndedManual
			}
		}
	}
	if len(out) > typesv1beta1.MaxFailoverHistory {
		out = out[len(out)-typesv1beta1.MaxFailoverHistory:]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
