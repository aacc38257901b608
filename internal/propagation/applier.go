package propagation

import (
	"time"

	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/copyhealth"
	"github.com/fedwarden/fedwarden/internal/render"
)

// applier is the apply stage of a sync: it makes the member copies what
// the render stage says, checks them for drift, applies the adoption
// rules, and deletes the copies of clusters a resource left. The host's
// controllers and a Pull cluster's agent share it; in an agent, it writes
// only to the agent's own cluster.
type applier struct {
	typ      Type
	clusters *clustercache.Cache // nil in an agent
	watches  *memberWatches
	written  lastWrites
	// defaultRemediation is the drift policy of resources that name none.
	defaultRemediation typesv1beta1.Remediation
	// maxWaiver is how far ahead a drift waiver may expire and be honoured.
	maxWaiver time.Duration
	// agent is set when the applier runs in a Pull cluster's agent.
	agent *agentSide
	// health judges the copies; nil: not judged.
	health *copyhealth.Evaluator
	// dryRun is set when the applier writes nothing (Previewer).
	dryRun *dryRunner
	// shard is this replica's share of the clusters; nil: all of them.
	shard Shard
}

// syncInput is what every cluster's sync of one resource shares.
type syncInput struct {
	fed  *unstructured.Unstructured
	spec render.Spec
	v    render.Versions
	// replicas are the scheduler's, by cluster, when it divides them.
	replicas map[string]int32
	// previous are the CPV's entries before this sync, by cluster.
	previous map[string]typesv1beta1.ClusterVersion
	// joined are the FederatedClusters when the sync started.
	joined clusterSet
	// keptByNamespace are the clusters placed only to keep a copy that
	// exists: where it does not, none is written (see dropGone).
	keptByNamespace map[string]bool
	// resync is the kubefed.io/resync annotation; force is set when its
	// value is new: every placed cluster is written.
	resync string
	force  bool
	// targets are the revisions the placed clusters target under a rollout
	// in waves, and held the inputs of those an earlier revision holds;
	// both nil otherwise.
	targets map[string]typesv1beta1.Revision
	held    map[string]*syncInput
	// waiting are the clusters where no copy exists yet whose first one
	// waits for the workload's dependencies, with what it waits for.
	waiting map[string]string
}

// Inputs are what a sync of a resource takes from it and its CPV before
// it writes anything: the versions its copies are stamped with, the CPV's
// entries, and whether kubefed.io/resync makes it write every placed
// cluster. The controller's sync, a Pull cluster's agent, the rollout stage
// and fedwarden plan all start from them (InputsOf), so that none has a
// rule of its own for them.
type Inputs struct {
	// Versions are the template and override versions the copies are
	// stamped with.
	Versions render.Versions
	// Previous are the CPV's entries before this sync, by cluster.
	Previous map[string]typesv1beta1.ClusterVersion
	// Resync is the kubefed.io/resync annotation; Force is set when its
	// value is new: every placed cluster is written.
	Resync string
	Force  bool
}

// InputsOf are the inputs of a sync of fed, whose spec is spec and CPV cpv,
// with replicas, the scheduler's, by cluster, where it divides them.
func InputsOf(fed *unstructured.Unstructured, spec render.Spec, cpv *typesv1beta1.ClusterPropagatedVersion, replicas map[string]int32) Inputs {
	in := Inputs{
		Versions: render.NextVersions(cpv.Status, render.ContentHash(render.Template(fed)), render.OverridesHash(spec.Overrides, replicas)),
		Previous: map[string]typesv1beta1.ClusterVersion{},
		Resync:   fed.GetAnnotations()[typesv1beta1.AnnotationResync],
	}
	for _, cv := range cpv.Status.ClusterVersions {
		in.Previous[string(cv.ClusterName)] = cv
	}
	// A missing CPV (deleted, or not created yet) knows of no resync acted
	// on: the copies are compared, not re-applied.
	in.Force = in.Resync != "" && cpv.ResourceVersion != "" && in.Resync != cpv.Status.Resync
	return in
}

func newSyncInput(fed *unstructured.Unstructured, spec render.Spec, cpv *typesv1beta1.ClusterPropagatedVersion, t targets) *syncInput {
	return InputsOf(fed, spec, cpv, t.replicas).syncInput(fed, spec, t.replicas)
}

// syncInput is the input of a sync of fed, whose spec is spec, from x;
// replicas are the scheduler's, by cluster.
func (x Inputs) syncInput(fed *unstructured.Unstructured, spec render.Spec, replicas map[string]int32) *syncInput {
	return &syncInput{fed: fed, spec: spec, replicas: replicas, v: x.Versions, previous: x.Previous, resync: x.Resync, force: x.Force}
}

// actedResync is the kubefed.io/resync value this sync acts on, or "" when
// it acts on none.
func (in *syncInput) actedResync() string {
	if in.force {
		return in.resync
	}
	return ""
}

// versionsOf is the versions cluster name is to have: the latest's, or
// those of the earlier revision a rollout in waves holds it at.
func (in *syncInput) versionsOf(name string) render.Versions {
	if h := in.held[name]; h != nil {
		return h.v
	}
	return in.v
}

// syncTarget syncs cluster name at the revision it targets: the latest,
// or an earlier one a rollout in waves holds it at.
func (a *applier) syncTarget(ctx context.Context, in *syncInput, name string, fc *corev1beta1.FederatedCluster) clusterResult {
	cin := in
	if h := in.held[name]; h != nil {
		cin = h
	}
	res := a.judge(a.syncCluster(ctx, cin, name, fc))
	res.target = in.targets[name]
	if cin != in {
		res.held = &cin.v
	}
	return res
}

// judge records the health of res's copy, when there is one.
func (a *applier) judge(res clusterResult) clusterResult {
	if a.health != nil && res.object != nil {
		h := a.health.Evaluate(res.object)
		res.health = &h
	}
	return res
}

// syncAll syncs the placed clusters in parallel.
func (a *applier) syncAll(ctx context.Context, in *syncInput, placed []string, set clusterSet) []clusterResult {
	results := make([]clusterResult, len(placed))
	var wg sync.WaitGroup
	for i, name := range placed {
		if msg, ok := in.waiting[name]; ok {
			results[i] = clusterResult{name: name, reason: typesv1beta1.ClusterWaitingForDependencies, message: msg, waiting: true, pending: true}
			continue
		}
		fc := set[name]
		release, held := func() {}, true
		if !isPull(fc) && a.agent == nil {
			if release, held = hold(a.shard, name, fc); !held {
				fc = markedElsewhere(fc) // handed to another replica since the sync listed the clusters
			}
		}
		if isPull(fc) && a.agent == nil {
			prev, recorded := in.previous[name]
			results[i] = scrubbed(reportedByAgent(name, fc, prev, recorded, in.versionsOf(name)), a.scrubberOf(in.fed))
			continue
		}
		wg.Go(func() {
			defer release()
			results[i] = a.syncTarget(ctx, in, name, fc)
		})
	}
	wg.Wait()
	return results
}

// removeUnplaced deletes the copies in clusters the resource left; those
// that cannot be deleted yet are returned, to stay in the CPV.
func (a *applier) removeUnplaced(ctx context.Context, fed *unstructured.Unstructured, placed []string, cpv *typesv1beta1.ClusterPropagatedVersion, set clusterSet) []clusterResult {
	var pending []clusterResult
	for _, cv := range cpv.Status.ClusterVersions {
		name := string(cv.ClusterName)
		if slices.Contains(placed, name) {
			continue
		}
		if isPull(set[name]) {
			// The CPV tells its agent to delete the copy (spec.removals);
			// the agent does, then removes its entry.
			pending = append(pending, clusterResult{name: name, reason: typesv1beta1.ClusterWaitingForAgent, state: cv.State, fromAgent: true, entry: &cv, pending: true,
				message: fmt.Sprintf("removal pending: waiting for %s to delete its copy, as spec.removals of the ClusterPropagatedVersion tells it", writer(name, set[name]))})
			continue
		}
		release, held := hold(a.shard, name, set[name])
		if !held {
			pending = append(pending, clusterResult{name: name, reason: typesv1beta1.ClusterWaitingForAgent, state: cv.State, fromAgent: true, entry: &cv, pending: true,
				message: fmt.Sprintf("removal pending: cluster %s was handed to another controller-manager replica, which deletes the copy", name)})
			continue
		}
		done, failed := a.deleteCopy(ctx, fed, cpv, name, set[name])
		release()
		if !done {
			pending = append(pending, *failed)
		}
	}
	return pending
}

// ownLiveCopy returns obj, a managed copy of fed's name in cluster name,
// when it is fed's own (ownCopy; cpv is fed's CPV), and nil when it is
// not: it is not fed's to delete. A copy stamped by another resource is
// read again from the member first, as the informer may not have seen the
// write with which fed took it over.
func (a *applier) ownLiveCopy(ctx context.Context, member *clustercache.Member, fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, name string, obj *unstructured.Unstructured) (*unstructured.Unstructured, *clusterResult) {
	if ownCopy(fed, cpv, name, obj) {
		return obj, nil
	}
	live, err := a.liveCopy(ctx, member, obj)
	if err != nil {
		res := unreachable(name, "removal pending: "+err.Error())
		return nil, &res
	}
	if live == nil || live.GetLabels()[typesv1beta1.LabelManaged] != "true" || !ownCopy(fed, cpv, name, live) {
		return nil, nil
	}
	return live, nil
}
