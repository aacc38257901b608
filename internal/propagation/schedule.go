package propagation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// Decision is the scheduler's: who ruled which cluster out, and the
// copies kept.
func (pl Placement) Decision() framework.Decision { return pl.t.decision }

// Scheduled is the Scheduled condition the decision makes.
func (pl Placement) Scheduled() (ok bool, reason, message string) { return scheduledCondition(pl.t) }

// placedClusters is targets as the CPV records them.
func (t targets) placedClusters() []typesv1beta1.PlacedCluster {
	out := make([]typesv1beta1.PlacedCluster, 0, len(t.names))
	for _, name := range t.names {
		pc := typesv1beta1.PlacedCluster{Name: typesv1beta1.ClusterName(name)}
		if n, ok := t.replicas[name]; ok {
			pc.Replicas = &n
		}
		out = append(out, pc)
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
	d := p.scheduler.Schedule(scheduler.Input{
		Federated: fed, Placement: spec.Placement, Clusters: clusters, Preference: rsp,
		Previous: cpv.Spec.Clusters, Holding: held, Spread: cpv.Spec.Spread, Restriction: restriction,
	})
	t := targets{decision: d, replicas: map[string]int32{}, namespaceReason: nsReason, namespaceMessage: nsMessage}
	if d.Failure != nil {
		// Keep the last decision, and every joined cluster that holds a
		// copy: nothing already in the clusters is lost.
		t.spread = cpv.Spec.Spread
		for _, pc := range cpv.Spec.Clusters {
			t.names = append(t.names, string(pc.Name))
			if pc.Replicas != nil {
				t.replicas[string(pc.Name)] = *pc.Replicas
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
