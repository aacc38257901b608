package propagation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/copyhealth"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
	"github.com/fedwarden/fedwarden/internal/render"
)

// FieldManager is the field manager of every member write.
const FieldManager = "fedwarden"

// clusterResult is how propagation went in one cluster.
type clusterResult struct {
	name    string
	reason  string // one of typesv1beta1.Cluster*
	state   typesv1beta1.DriftState
	message string
	// answer is the member's error that message quotes, if any, for
	// scrubbed: it is nil in every result the apply stage returns. code is
	// its HTTP status code (0 when it has none), which outlives it.
	answer error
	code   int32
	// object is the member copy after the sync, when there is one.
	object *unstructured.Unstructured
	// written: Fedwarden wrote the copy in this sync.
	written bool
	// retry: the failure may go away by itself; come back later.
	retry bool
	// listFailed: the member's copies of the kind could not be listed.
	listFailed bool
	// changes are the fields changed out of band, for ModifiedOutOfBand.
	changes []drift.Change
	// remediation is the cluster's drift policy in effect.
	remediation typesv1beta1.Remediation
	// healed is the drift this sync found and re-applied over.
	healed finding
	// waiting: the copy is not written yet, as it waits for the
	// workload's dependencies in the cluster (no CPV entry is written).
	waiting bool
	// fromAgent: a Pull cluster, which the host does not write; entry is
	// the CPV entry its agent wrote (nil before its first report), kept as
	// it is, and pending is set while that entry is not current.
	fromAgent bool
	entry     *typesv1beta1.ClusterVersion
	pending   bool
	// gone: the cluster was placed only to keep a copy (see
	// targets.keptByNamespace), and there is none any more.
	gone bool
	// health of object, when it was judged.
	health *copyhealth.Result
	// target is the revision the cluster targets under a rollout in
	// waves (0 otherwise); held, the versions of that earlier revision
	// when it is not the latest.
	target typesv1beta1.Revision
	held   *render.Versions
	// decision is the write decision, when decided says one was made
	// (held by value: no allocation per cluster on the sync's path);
	// live the member's copy it was made on, sent the object written (nil
	// when none). A Preview reports them.
	decision   Decision
	decided    bool
	live, sent *unstructured.Unstructured
	// namespaceMissing: a preview's write could not be judged, as the
	// copy's namespace does not exist in the member yet.
	namespaceMissing bool
}

func unreachable(name, message string) clusterResult {
	return clusterResult{name: name, reason: typesv1beta1.ClusterUnreachable, state: typesv1beta1.Unreachable, message: message, retry: true}
}

// applyFailed is the result of a write or read the member failed; one
// that got no answer at all (its breaker found the member hung) leaves the
// cluster Unreachable, as when it is not Ready.
func applyFailed(name string, err error, retry bool) clusterResult {
	if errors.Is(err, clustercache.ErrNotAnswering) {
		return unreachable(name, err.Error())
	}
	return clusterResult{name: name, reason: typesv1beta1.ClusterApplyFailed, state: typesv1beta1.ApplyFailed, message: err.Error(), answer: err, code: statusCode(err), retry: retry}
}

// statusCode is the HTTP status code of a member's answer err; 0 when it
// has none (the member could not be asked).
func statusCode(err error) int32 {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}

func inSync(name string, obj *unstructured.Unstructured) clusterResult {
	return clusterResult{name: name, reason: typesv1beta1.ClusterPropagated, state: typesv1beta1.InSync, object: obj}
}

// isDuplicate reports whether fc is a second FederatedCluster of a cluster
// joined before under another name (Ready False, DuplicateCluster).
func isDuplicate(fc *corev1beta1.FederatedCluster) bool {
	if fc == nil {
		return false
	}
	ready := meta.FindStatusCondition(fc.Status.Conditions, corev1beta1.ClusterReady)
	return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == corev1beta1.ReasonDuplicateCluster
}

// reach returns the clients of a placed cluster that may be written to, or
// why not.
func (a *applier) reach(name string, fc *corev1beta1.FederatedCluster) (*clustercache.Member, *clusterResult) {
	if a.agent != nil {
		return a.agent.member, nil // an agent writes to its own cluster
	}
	if fc == nil {
		res := unreachable(name, fmt.Sprintf("cluster %s is not joined: there is no FederatedCluster of that name", name))
		return nil, &res
	}
	if a.dryRun != nil {
		// A preview reads and dry-runs a cluster that is not Ready too:
		// the controller writes once it is.
		return a.dryRun.member, nil
	}
	member, err := a.clusters.Get(name)
	if err == nil && member.Breaker.Open() != nil {
		// A member that stopped answering fails at once, rather than
		// holding this worker and every other cluster it syncs; only the
		// health probes test it until it answers. The message stays the
		// same once the cluster is also not Ready, so that its copies'
		// entries are not written again for that.
		res := unreachable(name, member.Breaker.Open().Error())
		return nil, &res
	}
	if ready := meta.FindStatusCondition(fc.Status.Conditions, corev1beta1.ClusterReady); ready == nil || ready.Status != metav1.ConditionTrue {
		msg := fmt.Sprintf("cluster %s is not Ready", name)
		if ready != nil {
			msg += fmt.Sprintf(" (%s: %s)", ready.Reason, ready.Message)
		}
		res := unreachable(name, msg)
		return nil, &res
	}
	if err != nil {
		res := unreachable(name, err.Error())
		return nil, &res
	}
	return member, nil
}

// syncCluster makes the member copy of fed in one cluster current, writing
// only when its content differs from what was last written, or when it
// drifted and the cluster's policy enforces. What it returns is scrubbed
// of the values of fed and of the copies it sees (a Secret's).
func (a *applier) syncCluster(ctx context.Context, in *syncInput, name string, fc *corev1beta1.FederatedCluster) (out clusterResult) {
	sc := a.scrubberOf(in.fed)
	defer func() { out = scrubbed(out, sc) }()
	ctx = scrub.NewContext(ctx, sc) // the member's warnings too (scrub.WarningLogger)
	if reason, msg := OutOfReach(a.typ, in.fed); reason != "" {
		return applyFailed(name, errors.New(msg), false)
	}
	member, failed := a.reach(name, fc)
	if failed != nil {
		return *failed
	}
	desired, err := a.typ.Render(in.fed, in.spec, name, replicasIn(in.replicas, name))
	if err != nil {
		return applyFailed(name, err, false)
	}
	seen(sc, desired)
	hash := render.ContentHash(desired.Object)
	existing, failed := a.readCopy(ctx, member, in, name, desired, hash)
	if failed != nil {
		return *failed
	}
	seen(sc, existing)
	policy := a.policyFor(ctx, in.spec, name, fc)
	if policy.Invalid != nil {
		// A waiver that cannot be judged may be one that keeps this
		// copy's edit: nothing is written until it can be.
		return applyFailed(name, policy.Invalid, false)
	}
	d, f, err := a.classify(in, name, desired, existing, policy)
	if err != nil {
		return applyFailed(name, err, false)
	}
	if d.State == typesv1beta1.Missing {
		// A copy that is gone may have gone with its kind (its CRD deleted
		// in the member): that is no drift to report or write back.
		if s := a.serving(ctx, member); s == notServed || s == beingRemoved {
			return refused(name, a.typ, nil, s)
		}
	}
	res := a.act(ctx, member, in, d, f, policy, desired, existing, hash)
	res.decision, res.decided, res.live = d, true, existing
	return res
}

// act carries out the write decision d on cluster member's copy existing
// of desired, whose content hash is hash; f is the drift it heals.
func (a *applier) act(ctx context.Context, member *clustercache.Member, in *syncInput, d Decision, f finding, policy drift.Policy, desired, existing *unstructured.Unstructured, hash string) clusterResult {
	name := member.Name
	switch {
	case d.Action == ActionConflict:
		return clusterResult{name: name, reason: typesv1beta1.ClusterAlreadyExists, state: typesv1beta1.AlreadyExists, message: d.Reason}
	case d.Action == ActionUnchanged && (d.OutOfBand() || d.State == typesv1beta1.Waived):
		return reported(name, d, existing, policy)
	case d.Action == ActionUnchanged:
		res := inSync(name, existing)
		res.remediation = policy.Remediation
		return res
	}
	res := a.write(ctx, member, in, desired, existing, hash, policy)
	res.remediation = policy.Remediation
	if res.written && f.state != "" {
		res.healed = f
		if !f.seenAt.IsZero() {
			driftRemediationSeconds.Observe(time.Since(f.seenAt).Seconds())
		}
	}
	return res
}

// readCopy returns cluster name's copy of desired (nil when it has none),
// whose content hash is hash, or the result that ends the cluster's sync:
// the member cannot be read, refuses the kind, holds an object Fedwarden
// may not take over, or no longer holds a copy kept only by the namespace
// restriction.
func (a *applier) readCopy(ctx context.Context, member *clustercache.Member, in *syncInput, name string, desired *unstructured.Unstructured, hash string) (*unstructured.Unstructured, *clusterResult) {
	existing, conflict, err := a.existingCopy(ctx, member, in.fed, desired)
	// A copy the informer lags behind, or holds cut down though the kind's
	// health rules may now read any field, is read from the member.
	if err == nil && existing != nil && (existing.GetAnnotations()[typesv1beta1.AnnotationDesiredHash] != hash && a.written.lagging(name, existing, hash) || a.watches.partial(existing)) {
		existing, err = a.liveCopy(ctx, member, existing)
	}
	var res clusterResult
	switch {
	case err != nil && isRefusal(err):
		res = refused(name, a.typ, err, a.serving(ctx, member))
	case err != nil:
		res = unreachable(name, err.Error())
	case conflict != "":
		res = clusterResult{name: name, reason: typesv1beta1.ClusterAlreadyExists, state: typesv1beta1.AlreadyExists, message: conflict}
	case existing == nil && in.keptByNamespace[name]:
		res = clusterResult{name: name, gone: true}
	default:
		return existing, nil
	}
	return nil, &res
}

// write applies desired as stamped makes it, keeping the member's values
// of the paths policy retains.
func (a *applier) write(ctx context.Context, member *clustercache.Member, in *syncInput, desired, existing *unstructured.Unstructured, hash string, policy drift.Policy) clusterResult {
	desired = stamped(desired, existing, retained(in.spec, policy), in.v, in.fed.GetUID())
	if a.typ.IsNamespace() && existing == nil {
		if failed := a.createNamespaceCopy(ctx, member, desired.GetName()); failed != nil {
			return *failed
		}
	}
	res := a.applied(ctx, member, in, desired, hash)
	res.sent = desired
	return res
}

// applied is the result of applying desired, stamped, whose content hash
// is hash.
func (a *applier) applied(ctx context.Context, member *clustercache.Member, in *syncInput, desired *unstructured.Unstructured, hash string) clusterResult {
	applied, err := a.apply(ctx, member, desired, !in.keptByNamespace[member.Name])
	if errors.Is(err, errNamespaceGone) {
		return clusterResult{name: member.Name, gone: true}
	}
	if errors.Is(err, errNamespaceMissing) {
		return clusterResult{name: member.Name, namespaceMissing: true}
	}
	if isRefusal(err) {
		// The kind may have gone from the member since the copy was read
		// (its CRD deleted): say so, rather than what the write was told.
		if s := a.serving(ctx, member); s == notServed || s == beingRemoved {
			return refused(member.Name, a.typ, err, s)
		}
	}
	if err != nil {
		// An invalid object stays invalid until the resource changes; a refusal
		// (RBAC) may be lifted by joining again: that is worth retrying.
		return applyFailed(member.Name, err, !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err))
	}
	a.written.record(member.Name, applied, hash)
	res := inSync(member.Name, applied)
	res.written = true
	return res
}

// existingCopy returns the member's object of desired's name: the managed
// copy from the informer, or, when the informer has none, what the member's
// API server has. conflict is set when that object is not Fedwarden's and
// fed does not opt in to adopting it.
func (a *applier) existingCopy(ctx context.Context, member *clustercache.Member, fed, desired *unstructured.Unstructured) (*unstructured.Unstructured, string, error) {
	lister, err := a.watches.lister(ctx, member)
	if isRefusal(err) {
		// The informer's last list was refused. It tries again with a
		// backoff of up to a minute, but the kind or the right may be there
		// by now (installed, or granted by joining again): ask the member,
		// with a list as the informer's, and read the copy directly.
		if err = a.probeList(ctx, member); err == nil {
			lister = nil
		}
	}
	if err != nil {
		return nil, "", err
	}
	key := desired.GetName()
	if ns := desired.GetNamespace(); ns != "" {
		key = ns + "/" + key
	}
	if lister != nil {
		if obj, err := lister.Get(key); err == nil {
			if u, ok := copyOf(obj); ok {
				return u, "", nil
			}
		}
	}
	got, err := a.resource(member, desired.GetNamespace()).Get(ctx, desired.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading %s %s in cluster %s: %w", a.typ.Target.Kind, key, member.Name, err)
	}
	if got.GetLabels()[typesv1beta1.LabelManaged] == "true" || MayAdopt(a.typ, fed, got) {
		return got, "", nil
	}
	return nil, fmt.Sprintf("cluster %s already has %s %s, which Fedwarden does not manage; annotate the %s with %s: %s to take it over",
		member.Name, a.typ.Target.Kind, key, a.typ.Federated.Kind, typesv1beta1.AnnotationConflictResolution, typesv1beta1.ConflictResolutionAdopt), nil
}

// probeList lists, as the member informer does, the managed copies of the
// type in member, one at most: it fails as the informer's list would now.
func (a *applier) probeList(ctx context.Context, member *clustercache.Member) error {
	_, err := member.Dynamic.Resource(a.typ.TargetResource).List(ctx, metav1.ListOptions{LabelSelector: typesv1beta1.LabelManaged + "=true", Limit: 1})
	if err != nil {
		return fmt.Errorf("listing %s in cluster %s: %w", a.typ.kindName(), member.Name, err)
	}
	return nil
}

// liveCopy reads cached's object from the member, for a copy the informer
// has not caught up with; nil when it is gone.
func (a *applier) liveCopy(ctx context.Context, member *clustercache.Member, cached *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live, err := a.resource(member, cached.GetNamespace()).Get(ctx, cached.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s in cluster %s: %w", a.typ.Target.Kind, cached.GetName(), member.Name, err)
	}
	return live, nil
}

func (a *applier) resource(member *clustercache.Member, namespace string) dynamic.ResourceInterface {
	res := member.Dynamic.Resource(a.typ.TargetResource)
	if a.typ.TargetNamespaced {
		return res.Namespace(namespace)
	}
	return res
}

// listed is key's object in lister, which is nil when the applier has no
// informers: then it is not found, and the member is read.
func listed(lister cache.GenericLister, key string) (runtime.Object, error) {
	if lister == nil {
		return nil, errNotListed
	}
	return lister.Get(key)
}

var errNotListed = errors.New("no informer")

// errNamespaceGone: the member has no namespace for the copy, and none is
// created for it.
var errNamespaceGone = errors.New("the namespace of the copy is gone from the cluster")

// errNamespaceMissing: a preview's write was not judged, as the member has
// no namespace for the copy yet (the controller would create it first).
var errNamespaceMissing = errors.New("the namespace of the copy does not exist in the cluster yet")

// isNamespaceNotFound tells whether err, a member's answer to a write,
// says the object's namespace does not exist there: the write then waits
// for the namespace (the controller creates it, plan says so).
func isNamespaceNotFound(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// apply writes desired with server-side apply, creating its namespace in
// the member first if the member lacks it and createNamespace is set
// (otherwise it returns errNamespaceGone).
func (a *applier) apply(ctx context.Context, member *clustercache.Member, desired *unstructured.Unstructured, createNamespace bool) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(desired.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s: %w", a.typ.Target.Kind, desired.GetName(), err)
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: new(true), DryRun: a.dryRunAll()}
	res := a.resource(member, desired.GetNamespace())
	applied, err := res.Patch(ctx, desired.GetName(), types.ApplyPatchType, raw, opts)
	memberWrites.WithLabelValues(member.Name, "apply").Inc()
	if isNamespaceNotFound(err) {
		if !createNamespace {
			return nil, errNamespaceGone
		}
		if a.dryRun != nil {
			return nil, errNamespaceMissing
		}
		if err := a.ensureNamespace(ctx, member, desired.GetNamespace()); err != nil {
			return nil, err
		}
		applied, err = res.Patch(ctx, desired.GetName(), types.ApplyPatchType, raw, opts)
		memberWrites.WithLabelValues(member.Name, "apply").Inc()
	}
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("writing %s %s to cluster %s: %w; the host's identity in the member lacks this right: run 'fedwarden join %s' again "+
			"(it grants every kind the member serves, or those of --resources)", a.typ.Target.Kind, desired.GetName(), member.Name, err, member.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s %s to cluster %s: %w", a.typ.Target.Kind, desired.GetName(), member.Name, err)
	}
	return applied, nil
}

// ensureNamespace creates namespace in the member, marked as created for
// propagation.
func (a *applier) ensureNamespace(ctx context.Context, member *clustercache.Member, namespace string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        namespace,
		Annotations: map[string]string{typesv1beta1.AnnotationCreatedNamespace: "true"},
	}}
	_, err := member.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager})
	memberWrites.WithLabelValues(member.Name, "create-namespace").Inc()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s in cluster %s: %w", namespace, member.Name, err)
	}
	return nil
}

// deleteCopy removes the managed member copy of fed in a cluster it is no
// longer placed on: it deletes it, or releases a namespace Fedwarden did not
// create (see removalOf). done is false when the cluster cannot be reached
// now. A copy that is not fed's own (ownCopy; cpv is fed's CPV) is kept.
// failed is scrubbed of the values of fed and of the copy (a Secret's).
func (a *applier) deleteCopy(ctx context.Context, fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, name string, fc *corev1beta1.FederatedCluster) (done bool, failed *clusterResult) {
	sc := a.scrubberOf(fed)
	defer func() {
		if failed != nil {
			*failed = scrubbed(*failed, sc)
		}
	}()
	ctx = scrub.NewContext(ctx, sc)
	if fc == nil && a.agent == nil {
		return true, nil // the cluster left the federation
	}
	if isDuplicate(fc) {
		// The copy there is the one of the cluster joined first under its
		// own name: deleting it through this name would take it from that.
		return true, nil
	}
	if reason, _ := OutOfReach(a.typ, fed); reason != "" {
		return true, nil // never synced, so nothing of its own to remove
	}
	member, failed := a.reach(name, fc)
	if failed != nil {
		failed.message = "removal pending: " + failed.message
		return false, failed
	}
	lister, err := a.watches.lister(ctx, member)
	if apierrors.IsNotFound(err) {
		return true, nil // the member does not serve the kind: no copy there
	}
	if err != nil {
		res := unreachable(name, "removal pending: "+err.Error())
		res.listFailed = true
		return false, &res
	}
	namespace := ""
	if a.typ.TargetNamespaced {
		namespace = fed.GetNamespace()
	}
	key := fed.GetName()
	if namespace != "" {
		key = namespace + "/" + key
	}
	var u *unstructured.Unstructured
	if obj, err := listed(lister, key); err == nil {
		u, _ = copyOf(obj)
	}
	if u == nil {
		// The informer may not have seen a copy written a moment ago.
		got, err := a.resource(member, namespace).Get(ctx, fed.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && got.GetLabels()[typesv1beta1.LabelManaged] != "true") {
			return true, nil // no managed copy
		}
		if err != nil {
			res := unreachable(name, fmt.Sprintf("removal pending: reading %s %s in cluster %s: %v", a.typ.Target.Kind, key, name, err))
			return false, &res
		}
		u = got
	}
	if u, failed = a.ownLiveCopy(ctx, member, fed, cpv, name, u); u == nil || failed != nil {
		return failed == nil, failed
	}
	a.written.forget(name, u)
	seen(sc, u)
	if err := a.removeCopy(ctx, member, u); err != nil {
		res := applyFailed(name, fmt.Errorf("removal pending: %w", err), true)
		return false, &res
	}
	return true, nil
}

// retained are the paths whose member values a write keeps: the replicas
// when the resource retains them, and the paths of the waivers policy
// honours now.
func retained(spec render.Spec, policy drift.Policy) []string {
	paths := policy.Retained(time.Now())
	if spec.RetainReplicas {
		paths = append(paths, "/spec/replicas")
	}
	return paths
}

// stamped is the object a sync applies for desired, whose content hash
// the copy records: desired with the member's values at the paths it
// retains (existing is the member's copy, nil when none; a path it lacks
// keeps desired's value), stamped with the versions v, the content hash
// and owner, the UID of the resource. The owner is stamped after hashing,
// so it is no part of the hash (see ownCopy). A preview (Previewer)
// dry-runs the same object.
func stamped(desired, existing *unstructured.Unstructured, retain []string, v render.Versions, owner types.UID) *unstructured.Unstructured {
	out := desired.DeepCopy()
	hash := render.ContentHash(desired.Object)
	if existing != nil {
		for _, path := range retain {
			drift.Keep(out.Object, existing.Object, path)
		}
	}
	annotations := out.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[typesv1beta1.AnnotationTemplateVersion] = string(v.Template)
	annotations[typesv1beta1.AnnotationOverrideVersion] = string(v.Override)
	annotations[typesv1beta1.AnnotationDesiredHash] = hash
	annotations[typesv1beta1.AnnotationOwnerUID] = string(owner)
	out.SetAnnotations(annotations)
	return out
}
