package propagation

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/render"
)

// The drift ledger: each cluster's entry of a CPV keeps its last
// typesv1beta1.MaxDriftEpisodes episodes out of InSync that have ended, in
// clusterVersions[].driftHistory. The entry's writer (the host for Push
// clusters, the agent for Pull ones) closes an episode in the sync that
// finds the copy InSync again, so the ledger lives where the entry does:
// readable with kubectl and by Kyverno, kept across restarts, and removed
// with the entry when the copy leaves the cluster.

var driftDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "fedwarden_drift_duration_seconds",
	Help:    "Length of drift episodes of member copies, from the copy leaving InSync (or the member event that revealed the drift) to its return to InSync, by cluster and the state it ended in.",
	Buckets: prometheus.ExponentialBuckets(0.1, 2, 20),
}, []string{"cluster", "state"})

func init() {
	ctrlmetrics.Registry.MustRegister(driftDurationSeconds)
}

// endedEpisode returns the episode a sync of one cluster ends: the copy
// was out of InSync before (prev) or was found drifted and re-applied in
// this sync (res.healed), and is InSync now. resync is the
// kubefed.io/resync value this sync acted on, if it did.
func endedEpisode(prev typesv1beta1.ClusterVersion, res clusterResult, v render.Versions, resync string, now metav1.Time) (typesv1beta1.DriftEpisode, bool) {
	wasOut := prev.State != "" && prev.State != typesv1beta1.InSync && prev.State != typesv1beta1.RolloutPending
	healed := res.healed.state != ""
	if res.state != typesv1beta1.InSync || (!wasOut && !healed) {
		return typesv1beta1.DriftEpisode{}, false
	}
	ep := typesv1beta1.DriftEpisode{
		Start: now, End: now,
		State: prev.State, ChangedPaths: prev.ChangedPaths, ChangedBy: prev.ChangedBy, ChangedByOperations: prev.ChangedByOperations,
		Before: typesv1beta1.EpisodeVersions{TemplateVersion: prev.TemplateVersion, OverrideVersion: prev.OverrideVersion},
		After:  typesv1beta1.EpisodeVersions{TemplateVersion: v.Template, OverrideVersion: v.Override},
	}
	switch {
	case wasOut && prev.DriftedSince != nil:
		ep.Start = *prev.DriftedSince
	case healed && !res.healed.seenAt.IsZero():
		ep.Start = metav1.NewTime(res.healed.seenAt)
	}
	if healed {
		ep.State = res.healed.state
		if paths, managers := drift.Paths(res.healed.changes); len(paths) > 0 {
			ep.ChangedPaths, ep.ChangedBy = paths, bounded10(managers)
			ep.ChangedByOperations = bounded10(drift.Operations(res.healed.changes))
		}
	}
	ep.ResolvedBy, ep.Resync = resolution(prev, ep, res, resync)
	ep.Waiver = prev.Waiver
	return ep, true
}

// episodeWaiver is the waiver record of a cluster's entry after a sync
// with result res: a waiver that keeps the edit now is recorded, from the
// sync it first did (since) to its expiry as honoured now; the record of
// one that stopped keeping it (expired, removed) stays while the copy is
// still out of InSync, so that the episode's ledger entry has it; a copy
// InSync has none, its episode having taken it (endedEpisode).
func episodeWaiver(prev typesv1beta1.ClusterVersion, res clusterResult, now metav1.Time) *typesv1beta1.EpisodeWaiver {
	switch {
	case res.state == typesv1beta1.InSync || res.state == typesv1beta1.RolloutPending:
		return nil
	case res.state == typesv1beta1.Waived && res.decided && res.decision.Waiver != nil:
		w := res.decision.Waiver
		rec := &typesv1beta1.EpisodeWaiver{Since: now, Until: metav1.NewTime(w.Expires), Reason: bounded(w.Reason, 256), Owner: bounded(w.Owner, 128)}
		if prev.Waiver != nil && prev.Waiver.Reason == rec.Reason && prev.Waiver.Owner == rec.Owner {
			rec.Since = prev.Waiver.Since // the same waiver, its expiry perhaps moved
		}
		return rec
	}
	return prev.Waiver
}

// resolution tells what ended an episode: a write of Fedwarden's (for a
// resync, or to heal or catch up), the template or overrides moving to
// what the unwritten copy holds, or the copy returning by itself.
func resolution(prev typesv1beta1.ClusterVersion, ep typesv1beta1.DriftEpisode, res clusterResult, resync string) (typesv1beta1.Resolution, string) {
	outOfBand := prev.State == typesv1beta1.ModifiedOutOfBand || prev.State == typesv1beta1.Missing || prev.State == typesv1beta1.Waived
	switch {
	case res.written && resync != "":
		return typesv1beta1.ResolvedByResync, resync
	case res.healed.state != "" || (res.written && !outOfBand):
		return typesv1beta1.ResolvedByEnforce, ""
	case res.written || ep.Before != ep.After:
		// The copy's edit is what the template or overrides now say: the
		// write, if any, only stamped the new versions.
		return typesv1beta1.ResolvedByTemplateChange, ""
	}
	return typesv1beta1.ResolvedByReturn, ""
}

// withEpisode returns history with ep added, the oldest dropped past
// typesv1beta1.MaxDriftEpisodes.
func withEpisode(history []typesv1beta1.DriftEpisode, ep typesv1beta1.DriftEpisode) []typesv1beta1.DriftEpisode {
	history = append(slices.Clone(history), ep)
	if n := len(history) - typesv1beta1.MaxDriftEpisodes; n > 0 {
		history = history[n:]
	}
	return history
}

// observeEnded records in fedwarden_drift_duration_seconds the episode
// that cv's history has and prev's does not, once the entry is written.
func observeEnded(prev, cv typesv1beta1.ClusterVersion) {
	n := len(cv.DriftHistory)
	if n == 0 {
		return
	}
	last := cv.DriftHistory[n-1]
	if m := len(prev.DriftHistory); m > 0 && equality.Semantic.DeepEqual(prev.DriftHistory[m-1], last) {
		return // no new episode
	}
	observeEpisode(cv.ClusterName, last)
}

// observeEpisode records ep, of cluster, in fedwarden_drift_duration_seconds.
func observeEpisode(cluster typesv1beta1.ClusterName, ep typesv1beta1.DriftEpisode) {
	driftDurationSeconds.WithLabelValues(string(cluster), string(ep.State)).Observe(ep.End.Sub(ep.Start.Time).Seconds())
}

// unsentEpisodes keeps the drift episodes a sync ended whose status write
// failed, by CPV and cluster: the sync that healed a copy is the only one
// that sees its episode end (the next finds the copy InSync, and no
// episode ends), so a lost write would lose it. A Pull cluster's agent
// keeps syncing while the host is down; the host's status write can fail
// after its member writes landed. The next write that lands records them.
// Memory: only while writes fail, at most typesv1beta1.MaxDriftEpisodes
// per CPV and cluster, dropped with the resource or the copy.
type unsentEpisodes struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[typesv1beta1.ClusterName][]typesv1beta1.DriftEpisode
}

// take returns and forgets the episodes of the CPV key, by cluster.
func (u *unsentEpisodes) take(key types.NamespacedName) map[typesv1beta1.ClusterName][]typesv1beta1.DriftEpisode {
	u.mu.Lock()
	defer u.mu.Unlock()
	eps := u.m[key]
	delete(u.m, key)
	return eps
}

// keep remembers eps, the newest MaxDriftEpisodes of them, for cluster's
// entry of the CPV key.
func (u *unsentEpisodes) keep(key types.NamespacedName, cluster typesv1beta1.ClusterName, eps []typesv1beta1.DriftEpisode) {
	if len(eps) == 0 {
		return
	}
	if n := len(eps) - typesv1beta1.MaxDriftEpisodes; n > 0 {
		eps = eps[n:]
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[types.NamespacedName]map[typesv1beta1.ClusterName][]typesv1beta1.DriftEpisode{}
	}
	if u.m[key] == nil {
		u.m[key] = map[typesv1beta1.ClusterName][]typesv1beta1.DriftEpisode{}
	}
	u.m[key][cluster] = eps
}

// newEpisodes returns the episodes of next's history that prev's lacks.
func newEpisodes(prev, next []typesv1beta1.DriftEpisode) []typesv1beta1.DriftEpisode {
	var out []typesv1beta1.DriftEpisode
	for _, ep := range next {
		if !slices.ContainsFunc(prev, func(h typesv1beta1.DriftEpisode) bool { return equality.Semantic.DeepEqual(h, ep) }) {
			out = append(out, ep)
		}
	}
	return out
}

// withUnsent returns history with the episodes of unsent it lacks.
func withUnsent(history, unsent []typesv1beta1.DriftEpisode) []typesv1beta1.DriftEpisode {
	for _, ep := range newEpisodes(history, unsent) {
		history = withEpisode(history, ep)
	}
	return history
}

// bounded10 keeps the first 10 of s, as the CRD bounds changedBy and
// changedByOperations.
func bounded10[T any](s []T) []T {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}
