package propagation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/render"
	"github.com/fedwarden/fedwarden/internal/scheduler"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
	"github.com/fedwarden/fedwarden/internal/scheduler/plugins/clusteraffinity"
)

// maxExplanation bounds the Scheduled condition's message.
const maxExplanation = 2048

// placer is the place stage of a sync: it decides, with the scheduler,
// where a resource goes, within what its namespace's placement allows.
type placer struct {
	typ        Type
	client     client.Reader
	namespaces Namespaces
	scheduler  *scheduler.Scheduler
	// watches are the member caches, read for the copies they already hold.
	watches *memberWatches
}

// targets is where a sync writes: the clusters of the decision, sorted, and
// the replicas of those a ReplicaSchedulingPreference divides.
type targets struct {
	names    []string
	replicas map[string]int32
	decision framework.Decision
	// namespaceReason and namespaceMessage are set when the resource's
	// namespace keeps it from every cluster.
	namespaceReason, namespaceMessage string
	// keptByNamespace are the clusters placed only to keep their copy, which
	// the namespace restriction would leave out (see keptByNamespace).
	keptByNamespace map[string]bool
	// spread is the spread constraints the decision was made under, as the
	// CPV records them.
	spread *typesv1beta1.RecordedSpread
	// failover is the failover stage's judgement; nil when the resource
	// has no failover policy that applies.
	failover *failoverState
	// surge are the clusters chosen standing in for failed-over ones.
	surge []string
}

// failedOverAt is when cluster failed over, as the CPV records it; nil
// when it has not.
func (t targets) failedOverAt(cluster string) *metav1.Time {
	if t.failover == nil {
		return nil
	}
	if at, ok := t.failover.at[cluster]; ok {
		return &at
	}
	return nil
}

// replicasIn is cluster's entry of replicas, the scheduler's by cluster;
// nil when it does not divide them there.
func replicasIn(replicas map[string]int32, cluster string) *int32 {
	if n, ok := replicas[cluster]; ok {
		return &n
	}
	return nil
}

// Placer is the place stage for callers outside the controller, such as
// fedwarden plan: the controller's own rules, reading the host through a
// client.Reader. It has no member caches: the copies a cluster holds are
// those the ClusterPropagatedVersion records.
type Placer struct{ p placer }

// NewPlacer returns the place stage of typ. namespaces says whether, and
// as which kind, namespaces are federated (NamespacesOf).
func NewPlacer(typ Type, host client.Reader, namespaces Namespaces, sched *scheduler.Scheduler) *Placer {
	return &Placer{placer{typ: typ, client: host, namespaces: namespaces, scheduler: sched}}
}

// Place decides where fed goes, as the controller's next sync would.
func (p *Placer) Place(ctx context.Context, fed *unstructured.Unstructured, spec render.Spec, cpv *typesv1beta1.ClusterPropagatedVersion, clusters []corev1beta1.FederatedCluster) (Placement, error) {
	t, _, err := p.p.schedule(ctx, fed, spec, cpv, clusters)
	return Placement{t}, err
}

// Placement is the place stage's decision.
type Placement struct{ t targets }

// Clusters are the placed clusters, sorted by name, with the replicas of
// those a ReplicaSchedulingPreference divides, as the CPV records them.
func (pl Placement) Clusters() []typesv1beta1.PlacedCluster { return pl.t.placedClusters() }

// Names are the placed clusters, sorted by name.
func (pl Placement) Names() []string { return pl.t.names }

// Replicas are the scheduler's replicas, by cluster, of the clusters whose
// replicas it divides.
func (pl Placement) Replicas() map[string]int32 { return pl.t.replicas }

// ReplicasOf is the scheduler's replicas for cluster; nil when it does not
// divide them.
func (pl Placement) ReplicasOf(cluster string) *int32 { return replicasIn(pl.t.replicas, cluster) }

// Decision is the scheduler's: who ruled which cluster out, and the
// copies kept.
func (pl Placement) Decision() framework.Decision { return pl.t.decision }

// Failover says what the resource's failover policy does in this
// decision, as its FailedOver condition would; ok is false when no policy
// applies (none, or neither divided replicas nor spread constraints).
func (pl Placement) Failover() (msg string, ok bool) {
	f := pl.t.failover
	if f == nil {
		return "", false
	}
	if len(f.at) == 0 {
		return "no cluster is failed over", true
	}
	_, _, msg, _ = f.condition(nil)
	return msg, true
}

// Scheduled is the Scheduled condition the decision makes.
func (pl Placement) Scheduled() (ok bool, reason, message string) { return scheduledCondition(pl.t) }

// placedClusters is targets as the CPV records them.
func (t targets) placedClusters() []typesv1beta1.PlacedCluster {
	out := make([]typesv1beta1.PlacedCluster, 0, len(t.names))
	for _, name := range t.names {
		out = append(out, typesv1beta1.PlacedCluster{Name: typesv1beta1.ClusterName(name), Replicas: replicasIn(t.replicas, name),
			FailedOverAt: t.failedOverAt(name), Surge: slices.Contains(t.surge, name)})
	}
	return out
}

// schedule decides where fed goes, starting from the decision recorded in
// its CPV. When no decision can be made, the resource stays where it was.
func (p *placer) schedule(ctx context.Context, fed *unstructured.Unstructured, spec render.Spec, cpv *typesv1beta1.ClusterPropagatedVersion, clusters []corev1beta1.FederatedCluster) (targets, *schedulingv1alpha1.ReplicaSchedulingPreference, error) {
	start := time.Now()
	defer func() { schedulingSeconds.Observe(time.Since(start).Seconds()) }()
	restriction, nsReason, nsMessage, err := p.namespaceRestriction(ctx, fed, clusters)
	if err != nil {
		return targets{}, nil, err
	}
	rsp, err := p.preference(ctx, fed)
	if err != nil {
		return targets{}, nil, err
	}
	held := p.heldCopies(fed, cpv, clusters)
	fo := judgeFailover(fed, spec.Placement, rsp != nil, cpv, clusters, time.Now())
	d := p.scheduler.Schedule(scheduler.Input{
		Federated: fed, Placement: spec.Placement, Clusters: clusters, Preference: rsp,
		Previous: cpv.Spec.Clusters, Holding: held, Spread: cpv.Spec.Spread, Restriction: restriction,
		FailedOver: fo.clusters(), Tolerated: fo.tolerating(),
	})
	t := targets{decision: d, replicas: map[string]int32{}, namespaceReason: nsReason, namespaceMessage: nsMessage, failover: fo}
	if d.Failure != nil {
		t.failover = fo.undecided()
		// Keep the last decision, and every joined cluster that holds a
		// copy: nothing already in the clusters is lost.
		t.spread = cpv.Spec.Spread
		for _, pc := range cpv.Spec.Clusters {
			t.names = append(t.names, string(pc.Name))
			if pc.Replicas != nil {
				t.replicas[string(pc.Name)] = *pc.Replicas
			}
			if pc.Surge {
				t.surge = append(t.surge, string(pc.Name))
			}
		}
		for _, name := range held {
			if !slices.Contains(t.names, name) && slices.ContainsFunc(clusters, func(fc corev1beta1.FederatedCluster) bool { return fc.Name == name }) {
				t.names = append(t.names, name)
			}
		}
		slices.Sort(t.names)
		t.keptByNamespace = keptByNamespace(restriction, t.names)
		return t, rsp, nil
	}
	t.spread = &typesv1beta1.RecordedSpread{Constraints: spec.Placement.SpreadConstraints}
	for _, p := range d.Clusters {
		t.names = append(t.names, p.Name)
		if p.Replicas != nil {
			t.replicas[p.Name] = *p.Replicas
		}
		if fo.surgeOf(p.Name, cpv.Spec.Clusters) {
			t.surge = append(t.surge, p.Name)
		}
	}
	t.keptByNamespace = keptByNamespace(restriction, t.names)
	return t, rsp, nil
}

// heldCopies returns the clusters known to hold a copy of fed besides those
// of the last decision: those the CPV's status records, and those whose
// member cache, where it already runs and has synced, shows a managed
// copy. It reads no member and waits for nothing: a cluster it misses
// still keeps its copy when the CPV records it, and a copy nothing records
// is never deleted.
func (p *placer) heldCopies(fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, clusters []corev1beta1.FederatedCluster) []string {
	var held []string
	for _, cv := range cpv.Status.ClusterVersions {
		held = append(held, string(cv.ClusterName))
	}
	if p.watches == nil {
		return held
	}
	key := fed.GetName()
	if p.typ.TargetNamespaced {
		key = fed.GetNamespace() + "/" + key
	}
	for _, fc := range clusters {
		if !slices.Contains(held, fc.Name) && p.watches.cached(fc.Name, key) {
			held = append(held, fc.Name)
		}
	}
	return held
}

func normalized(pcs []typesv1beta1.PlacedCluster) []typesv1beta1.PlacedCluster {
	if len(pcs) == 0 {
		return nil
	}
	return pcs
}

// preference returns the ReplicaSchedulingPreference of fed: same
// namespace and name, targeting fed's kind.
func (p *placer) preference(ctx context.Context, fed *unstructured.Unstructured) (*schedulingv1alpha1.ReplicaSchedulingPreference, error) {
	if !p.typ.FederatedNamespaced {
		return nil, nil
	}
	rsp := &schedulingv1alpha1.ReplicaSchedulingPreference{}
	err := p.client.Get(ctx, client.ObjectKeyFromObject(fed), rsp)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading ReplicaSchedulingPreference %s: %w", client.ObjectKeyFromObject(fed), err)
	case rsp.Spec.TargetKind != p.typ.Federated.Kind:
		return nil, nil
	}
	return rsp, nil
}

// scheduledCondition is the Scheduled condition's status, reason and
// message for a decision.
func scheduledCondition(t targets) (bool, string, string) {
	if t.decision.Failure != nil {
		msg := t.decision.Explain(maxExplanation)
		if len(t.names) > 0 {
			msg = bounded(msg+"; the resource stays on "+joinNames(t.names), maxExplanation)
		}
		return false, typesv1beta1.ReasonUnschedulable, msg
	}
	if len(t.decision.Kept) > 0 {
		return true, typesv1beta1.ReasonCopiesKept, t.decision.Explain(maxExplanation)
	}
	return true, typesv1beta1.ReasonScheduled, t.decision.Explain(maxExplanation)
}

// newsworthy reports whether a first decision is worth an Event besides
// the Scheduled condition: it is not a plain Scheduled one (none could be
// made, or copies are kept), an Assign plugin left a note, or a plugin
// other than ClusterAffinity (which only applies the placement the user
// wrote) ruled a cluster out, such as Capacity for a full cluster.
func newsworthy(t targets, ok bool, reason string) bool {
	if !ok || reason != typesv1beta1.ReasonScheduled || len(t.decision.Notes) > 0 {
		return true
	}
	return slices.ContainsFunc(t.decision.RuledOut, func(v framework.Verdict) bool { return v.Plugin != clusteraffinity.Name })
}

// worthAnEvent reports whether a decision whose Scheduled condition, old
// before, is to say ok, reason and msg deserves an Event. A decision that
// comes out the same records none. Neither does a new resource's first
// decision when it holds nothing to tell (see newsworthy): the condition
// says it, and an Event per new resource is noise at fleet scale (one more
// host write each). Nor does a later decision whose message differs only
// in the clusters ClusterAffinity rules out: a cluster joined or unjoined
// elsewhere in the fleet re-words the explanation of every resource it is
// no part of, scheduled or not.
func worthAnEvent(old *metav1.Condition, t targets, ok bool, reason, msg string) bool {
	switch {
	case old == nil:
		return newsworthy(t, ok, reason)
	case old.Reason != reason:
		return true
	}
	return framework.WithoutRuledOutBy(old.Message, clusteraffinity.Name) != framework.WithoutRuledOutBy(msg, clusteraffinity.Name)
}

func joinNames(names []string) string {
	if len(names) > maxListedClusters {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:maxListedClusters], ", "), len(names)-maxListedClusters)
	}
	return strings.Join(names, ", ")
}

// place returns the sorted names of the clusters a placement selects among
// the joined clusters, as the scheduler's ClusterAffinity reads it (see
// clusteraffinity.Selects): spec.placement.clusters by name when the list
// is present (an empty list selects none, as in KubeFed), else the clusters
// whose labels match clusterSelector (an empty selector selects all), else
// none; never one spec.placement.excludeClusters names. Named clusters
// that are not joined are returned too: their status says so.
func place(p typesv1beta1.Placement, clusters []corev1beta1.FederatedCluster) ([]string, error) {
	labelsOf := map[string]map[string]string{}
	for _, c := range clusters {
		labelsOf[c.Name] = c.Labels
	}
	candidates := slices.Collect(maps.Keys(labelsOf))
	for _, c := range p.Clusters {
		candidates = append(candidates, string(c.Name))
	}
	if p.Clusters == nil && p.ClusterSelector == nil {
		return nil, nil // no placement at all
	}
	if p.Clusters == nil {
		// A bad selector is an error even when no cluster is joined.
		if _, err := clusteraffinity.Selector(p); err != nil {
			return nil, err
		}
	}
	var names []string
	if p.Clusters != nil {
		names = []string{} // placed on a list, maybe nowhere on purpose
	}
	for _, name := range candidates {
		ok, _, err := clusteraffinity.Selects(p, name, labelsOf[name])
		if err != nil {
			return nil, err
		}
		if ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// namespaceRestriction keeps a namespaced resource to the clusters its
// namespace is federated to, when namespaces are federated (KubeFed's
// rule). A FederatedNamespace's placement is the user's intent: a cluster
// it leaves out loses its copy. A namespace without a FederatedNamespace
// (what `fedwarden enable namespaces` on a live federation finds), or whose
// FederatedNamespace's placement cannot be read, is state: new placements
// go nowhere, and the copies already there are kept and reported.
func (p *placer) namespaceRestriction(ctx context.Context, fed *unstructured.Unstructured, clusters []corev1beta1.FederatedCluster) (*scheduler.Restriction, string, string, error) {
	if !p.typ.TargetNamespaced || p.namespaces == nil {
		return nil, "", "", nil
	}
	gvk, federated, err := p.namespaces.FederatedNamespaceKind(ctx)
	if err != nil || !federated {
		return nil, "", "", err
	}
	namespace := fed.GetNamespace()
	fns := &unstructured.Unstructured{}
	fns.SetGroupVersionKind(gvk)
	err = p.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: namespace}, fns)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		msg := fmt.Sprintf("namespace %s has no %s of the same name: namespaced resources go only to the clusters their namespace is federated to; "+
			"copies already in clusters stay (Scheduled condition, reason %s) until the %s places the namespace", namespace, gvk.Kind, typesv1beta1.ReasonCopiesKept, gvk.Kind)
		return &scheduler.Restriction{Plugin: gvk.Kind, Reason: "namespace " + namespace + " is not federated"}, typesv1beta1.ReasonNamespaceNotFederated, msg, nil
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("reading %s %s: %w", gvk.Kind, namespace, err)
	}
	nsPlaced, err := namespacePlacement(fns, clusters)
	if err != nil {
		// The FederatedNamespace's own status reports its bad placement.
		return &scheduler.Restriction{Plugin: gvk.Kind, Reason: fmt.Sprintf("the placement of %s %s cannot be read: %v", gvk.Kind, namespace, err)}, "", "", nil
	}
	return &scheduler.Restriction{Plugin: gvk.Kind, Clusters: nsPlaced, Reason: "namespace " + namespace + " is not federated to it", Intent: true}, "", "", nil
}

// namespacePlacement returns the clusters a FederatedNamespace is placed on.
func namespacePlacement(fns *unstructured.Unstructured, clusters []corev1beta1.FederatedCluster) ([]string, error) {
	spec, err := render.ParseSpec(fns)
	if err != nil {
		return nil, err
	}
	return place(spec.Placement, clusters)
}

// keptByNamespace returns the clusters of names that a restriction about
// state (no FederatedNamespace) leaves out: they are there only to keep a
// copy.
func keptByNamespace(restriction *scheduler.Restriction, names []string) map[string]bool {
	if restriction == nil || restriction.Intent {
		return nil
	}
	kept := map[string]bool{}
	for _, name := range names {
		if !slices.Contains(restriction.Clusters, name) {
			kept[name] = true
		}
	}
	return kept
}

// withoutClusters returns d with the clusters of drop, which it kept, ruled
// out instead, their verdicts saying why too.
func withoutClusters(d framework.Decision, drop map[string]bool, why string) framework.Decision {
	d.Clusters = slices.DeleteFunc(slices.Clone(d.Clusters), func(p framework.Placement) bool { return drop[p.Name] })
	var kept []framework.Verdict
	ruledOut := slices.Clone(d.RuledOut)
	for _, v := range d.Kept {
		if !drop[v.Cluster] {
			kept = append(kept, v)
			continue
		}
		v.Reasons = []string{strings.Join(append(slices.Clone(v.Reasons), why), "; ")}
		ruledOut = append(ruledOut, v)
	}
	slices.SortStableFunc(ruledOut, func(a, b framework.Verdict) int { return strings.Compare(a.Cluster, b.Cluster) })
	d.Kept, d.RuledOut = kept, ruledOut
	return d
}

// NamespaceKind returns the federated kind of the first (by name)
// FederatedTypeConfig of Namespaces that enables propagation and is not
// being deleted: namespaces are federated as that kind. False when none.
func NamespaceKind(ftcs []corev1beta1.FederatedTypeConfig) (schema.GroupVersionKind, bool) {
	var found *Type
	name := ""
	for i := range ftcs {
		ftc := &ftcs[i]
		typ := TypeFromConfig(ftc)
		if !typ.IsNamespace() || ftc.Spec.Propagation == corev1beta1.Disabled || !ftc.DeletionTimestamp.IsZero() {
			continue
		}
		if found == nil || ftc.Name < name {
			found, name = &typ, ftc.Name
		}
	}
	if found == nil {
		return schema.GroupVersionKind{}, false
	}
	return found.Federated, true
}

// NamespacesOf answers, from FederatedTypeConfigs read once, whether and
// as which kind namespaces are federated (NamespaceKind).
type NamespacesOf []corev1beta1.FederatedTypeConfig

// FederatedNamespaceKind implements Namespaces.
func (n NamespacesOf) FederatedNamespaceKind(context.Context) (schema.GroupVersionKind, bool, error) {
	gvk, ok := NamespaceKind(n)
	return gvk, ok, nil
}
