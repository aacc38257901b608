package propagation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// cpvStore is the record stage of a sync: it reads and writes the
// resource's ClusterPropagatedVersion, its spec (the placement, the
// removals pending in Pull clusters) and its status, the host's entries
// and, in an agent, its cluster's own entry. It remembers its own writes,
// so that their watch events do not trigger a sync.
type cpvStore struct {
	typ    Type
	client client.Client
	reader client.Reader // the host, not the cache
	// namespace holds the CPVs of cluster-scoped federated resources.
	namespace string
	now       func() time.Time
	// agent is set when the store runs in a Pull cluster's agent.
	agent *agentSide
	// sharing: replicas share the clusters, and each entry is applied as
	// its cluster's field manager (ClusterFieldManager), whoever writes it.
	sharing bool
	own     ownWrites
	// unsent are the ended episodes whose status write failed.
	unsent unsentEpisodes
}

// key is the name of fed's ClusterPropagatedVersion.
func (s *cpvStore) key(fed *unstructured.Unstructured) types.NamespacedName {
	return CPVKey(s.typ, fed, s.namespace)
}

// CPVKey is the name of the ClusterPropagatedVersion of fed, of type typ:
// in fed's namespace, or in controlPlane for a cluster-scoped resource.
// Its namespace holds fed's ControllerRevisions too.
func CPVKey(typ Type, fed *unstructured.Unstructured, controlPlane string) types.NamespacedName {
	ns := fed.GetNamespace()
	if ns == "" {
		ns = controlPlane
	}
	return types.NamespacedName{Namespace: ns, Name: typ.CPVName(fed.GetName())}
}

// get returns the resource's ClusterPropagatedVersion, or an empty one
// without a resourceVersion when it does not exist yet. It reads the cache,
// and the host when the cache has not seen this process's last write of
// the CPV yet: a sync right after another must not act on what that one
// recorded as if it had not (a kubefed.io/resync value acted on, a failure
// already reported, a CPV already rebuilt).
func (s *cpvStore) get(ctx context.Context, fed *unstructured.Unstructured) (*typesv1beta1.ClusterPropagatedVersion, error) {
	key := s.key(fed)
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	err := s.client.Get(ctx, key, cpv)
	if (err == nil || apierrors.IsNotFound(err)) && s.own.behind(key, cpv.ResourceVersion) {
		cpv = &typesv1beta1.ClusterPropagatedVersion{}
		err = s.reader.Get(ctx, key, cpv)
	}
	if apierrors.IsNotFound(err) {
		return &typesv1beta1.ClusterPropagatedVersion{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ClusterPropagatedVersion %s: %w", key, err)
	}
	return cpv, nil
}

// EarlierResource is what a CPV found under a resource's name says when
// it belongs to an earlier resource of that name, deleted since: the
// garbage collector deletes such a CPV a moment later. It records that
// resource's clusters, versions and ledger; a sync that took it for the
// new resource's would remove copies from clusters that one never had
// (those of the earlier resource, orphaned or not), and updating its
// owner reference would keep it from the garbage collector for good.
type EarlierResource struct {
	CPV   types.NamespacedName
	Kind  string    // the federated kind
	Owner types.UID // the earlier resource's
}

func (e *EarlierResource) Error() string {
	name := e.CPV.Name
	if e.CPV.Namespace != "" {
		name = e.CPV.String()
	}
	return fmt.Sprintf("ClusterPropagatedVersion %s belongs to an earlier %s of this name (UID %s), deleted", name, e.Kind, e.Owner)
}

// EarlierOwner returns the earlier resource cpv belongs to when that is
// not fed (see EarlierResource); nil when cpv is fed's or does not exist.
func EarlierOwner(cpv *typesv1beta1.ClusterPropagatedVersion, fed *unstructured.Unstructured) *EarlierResource {
	if cpv.ResourceVersion == "" {
		return nil
	}
	ref := metav1.GetControllerOf(cpv)
	if ref == nil || ref.UID == fed.GetUID() {
		return nil
	}
	return &EarlierResource{CPV: client.ObjectKeyFromObject(cpv), Kind: fed.GetKind(), Owner: ref.UID}
}

// ensure creates the resource's ClusterPropagatedVersion when cpv does
// not exist yet, or updates its spec and labels when they differ from fed,
// the placement, the removals still pending in Pull clusters (set is the
// joined clusters) and, under a rollout in waves, the revisions Pull
// clusters are to apply (pull).
func (s *cpvStore) ensure(ctx context.Context, fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, t targets, set clusterSet, pull *pullPlan) (*typesv1beta1.ClusterPropagatedVersion, error) {
	key := s.key(fed)
	removals := pullRemovals(cpv, t.names, set)
	want := typesv1beta1.ClusterPropagatedVersionSpec{
		Template:           fed.GetName(),
		TemplateKind:       s.typ.Federated.Kind,
		TemplateAPIVersion: s.typ.Federated.GroupVersion().String(),
		TemplateResource:   s.typ.FederatedResource,
		Clusters:           normalized(t.placedClusters()),
		Removals:           removals,
		Spread:             t.spread,
		DependencyOf:       dependencyOf(fed),
	}
	if pull != nil {
		want.Rollout = pull.rollout
		for i, pc := range want.Clusters {
			if n, ok := pull.revisions[string(pc.Name)]; ok {
				want.Clusters[i].Revision = &n
			}
		}
	}
	placed := t.names
	owner := metav1.OwnerReference{
		APIVersion: s.typ.Federated.GroupVersion().String(), Kind: s.typ.Federated.Kind,
		Name: fed.GetName(), UID: fed.GetUID(), Controller: new(true),
	}
	if cpv.ResourceVersion == "" {
		cpv = &typesv1beta1.ClusterPropagatedVersion{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, OwnerReferences: []metav1.OwnerReference{owner}, Labels: placedLabels(nil, labelled(placed, removals))},
			Spec:       want,
		}
		if err := s.client.Create(ctx, cpv); err != nil {
			return nil, fmt.Errorf("creating ClusterPropagatedVersion %s: %w", key, err)
		}
		s.own.record(cpv)
		return cpv, nil
	}
	labels := placedLabels(cpv.Labels, labelled(placed, removals))
	if sameSpec(cpv.Spec, want) && equality.Semantic.DeepEqual(cpv.OwnerReferences, []metav1.OwnerReference{owner}) && maps.Equal(cpv.Labels, labels) {
		return cpv, nil
	}
	before := cpv.DeepCopy()
	cpv.Spec = want
	cpv.OwnerReferences = []metav1.OwnerReference{owner}
	cpv.Labels = labels
	if err := s.client.Patch(ctx, cpv, client.MergeFrom(before)); err != nil {
		return nil, fmt.Errorf("updating ClusterPropagatedVersion %s: %w", key, err)
	}
	s.own.record(cpv)
	return cpv, nil
}

// writeStatus writes the CPV status when it changed: the host applies
// everything but the entries of Pull clusters, which their agents apply.
func (s *cpvStore) writeStatus(ctx context.Context, cpv *typesv1beta1.ClusterPropagatedVersion, in *syncInput, t targets, results []clusterResult, generation int64) error {
	key := client.ObjectKeyFromObject(cpv)
	unsent := s.unsent.take(key)
	base := withUnsentEntries(cpv.Status, unsent)
	now := metav1.NewTime(s.now())
	next := cpvStatus(base, in.v, len(t.names), results, in.actedResync(), generation, now)
	next.FailoverHistory = failoverHistory(cpv.Status.FailoverHistory, t.failover, t.surge, metav1.NewTime(now.UTC().Truncate(time.Second)))
	next.Resync = cpv.Status.Resync
	if in.resync != "" {
		next.Resync = in.resync
	}
	// The API server keeps the entries in the order their managers applied
	// them, not sorted.
	current := cpv.Status.DeepCopy()
	slices.SortFunc(current.ClusterVersions, func(a, b typesv1beta1.ClusterVersion) int {
		return strings.Compare(string(a.ClusterName), string(b.ClusterName))
	})
	if equality.Semantic.DeepEqual(*current, next) {
		return nil
	}
	agents := map[string]bool{}
	for _, res := range results {
		if res.fromAgent {
			agents[res.name] = true
		}
	}
	own := next.DeepCopy()
	own.ClusterVersions = slices.DeleteFunc(own.ClusterVersions, func(cv typesv1beta1.ClusterVersion) bool { return agents[string(cv.ClusterName)] })
	entries := own.ClusterVersions
	if s.sharing {
		if err := s.applyEntries(ctx, key, current.ClusterVersions, entries); err != nil {
			s.keepUnwritten(key, cpv.Status, *own)
			return err
		}
		own.ClusterVersions = nil
	}
	applied, err := applyCPVStatus(ctx, s.client, key, own, FieldManager)
	if err != nil {
		s.keepUnwritten(key, cpv.Status, *own)
		return fmt.Errorf("writing the status of ClusterPropagatedVersion %s: %w", key, err)
	}
	s.own.record(applied)
	for _, cv := range entries {
		for _, ep := range unsent[cv.ClusterName] {
			observeEpisode(cv.ClusterName, ep)
		}
		observeEnded(entryWithHistory(in.previous[string(cv.ClusterName)], unsent[cv.ClusterName]), cv)
	}
	reported := func(name string) bool {
		return agents[name] || slices.ContainsFunc(entries, func(cv typesv1beta1.ClusterVersion) bool { return string(cv.ClusterName) == name })
	}
	if err := s.removeLeftEntries(ctx, applied, in.joined, reported); err != nil {
		return err
	}
	cpv.Status = next
	return nil
}

// applyEntries applies each entry of entries that differs from current as
// its cluster's field manager: when replicas share the clusters, an entry
// keeps one owner whichever replica writes its cluster, so that a cluster
// handed from the leader to another replica keeps its entry, ledger
// included (the host's own apply then omits the entries).
func (s *cpvStore) applyEntries(ctx context.Context, key types.NamespacedName, current, entries []typesv1beta1.ClusterVersion) error {
	for _, cv := range entries {
		i := slices.IndexFunc(current, func(c typesv1beta1.ClusterVersion) bool { return c.ClusterName == cv.ClusterName })
		if i >= 0 && equality.Semantic.DeepEqual(current[i], cv) {
			continue
		}
		st := &typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: []typesv1beta1.ClusterVersion{cv}}
		applied, err := applyCPVStatus(ctx, s.client, key, st, ClusterFieldManager(string(cv.ClusterName)))
		if err != nil {
			return fmt.Errorf("writing cluster %s's entry of ClusterPropagatedVersion %s: %w", cv.ClusterName, key, err)
		}
		s.own.record(applied)
	}
	return nil
}

// withUnsentEntries returns st with each cluster's unsent episodes in its
// entry's history (in an entry of its own when the cluster has none yet).
func withUnsentEntries(st typesv1beta1.ClusterPropagatedVersionStatus, unsent map[typesv1beta1.ClusterName][]typesv1beta1.DriftEpisode) typesv1beta1.ClusterPropagatedVersionStatus {
	if len(unsent) == 0 {
		return st
	}
	st.ClusterVersions = slices.Clone(st.ClusterVersions)
	for cluster, eps := range unsent {
		i := slices.IndexFunc(st.ClusterVersions, func(cv typesv1beta1.ClusterVersion) bool { return cv.ClusterName == cluster })
		if i < 0 {
			st.ClusterVersions = append(st.ClusterVersions, typesv1beta1.ClusterVersion{ClusterName: cluster})
			i = len(st.ClusterVersions) - 1
		}
		st.ClusterVersions[i] = entryWithHistory(st.ClusterVersions[i], eps)
	}
	return st
}

// entryWithHistory returns cv with the episodes of eps its history lacks.
func entryWithHistory(cv typesv1beta1.ClusterVersion, eps []typesv1beta1.DriftEpisode) typesv1beta1.ClusterVersion {
	cv.DriftHistory = withUnsent(cv.DriftHistory, eps)
	return cv
}

// keepUnwritten keeps, after a failed status write, the episodes the
// host's entries of next have and those of written lack.
func (s *cpvStore) keepUnwritten(key types.NamespacedName, written, next typesv1beta1.ClusterPropagatedVersionStatus) {
	for _, cv := range next.ClusterVersions {
		var prev []typesv1beta1.DriftEpisode
		if i := slices.IndexFunc(written.ClusterVersions, func(w typesv1beta1.ClusterVersion) bool { return w.ClusterName == cv.ClusterName }); i >= 0 {
			prev = written.ClusterVersions[i].DriftHistory
		}
		s.unsent.keep(key, cv.ClusterName, newEpisodes(prev, cv.DriftHistory))
	}
}

// writeAgentResult writes, when it changed, the agent's entry of cpv
// after a sync of its cluster found res.
func (s *cpvStore) writeAgentResult(ctx context.Context, cpv *typesv1beta1.ClusterPropagatedVersion, in *syncInput, res clusterResult) error {
	key := client.ObjectKeyFromObject(cpv)
	prev, recorded := in.previous[s.agent.cluster]
	now := metav1.NewTime(s.now())
	cluster := typesv1beta1.ClusterName(s.agent.cluster)
	unsent := s.unsent.take(key)[cluster]
	base := entryWithHistory(prev, unsent)
	cv := clusterVersion(base, res, in.v, in.actedResync(), now)
	cv.Resync = prev.Resync
	if in.resync != "" && (res.written || res.state == typesv1beta1.InSync) {
		cv.Resync = in.resync
	}
	if recorded && equality.Semantic.DeepEqual(prev, cv) {
		return nil
	}
	if err := s.writeAgentEntry(ctx, key, &cv); err != nil {
		v := in.v
		if res.held != nil {
			v = *res.held
		}
		if ep, ended := endedEpisode(prev, res, v, in.actedResync(), now); ended {
			unsent = append(unsent, ep)
		}
		s.unsent.keep(key, cluster, unsent)
		return err
	}
	for _, ep := range unsent {
		observeEpisode(cv.ClusterName, ep)
	}
	observeEnded(base, cv)
	return nil
}

// writeAgentEntry writes the agent's entry of the CPV key (removes it when
// cv is nil) with server-side apply as the agent's field manager, which
// owns nothing else.
func (s *cpvStore) writeAgentEntry(ctx context.Context, key types.NamespacedName, cv *typesv1beta1.ClusterVersion) error {
	var st *typesv1beta1.ClusterPropagatedVersionStatus
	if cv != nil {
		st = &typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: []typesv1beta1.ClusterVersion{*cv}}
	}
	applied, err := applyCPVStatus(ctx, s.client, key, st, s.agent.fieldManager)
	if err != nil {
		return fmt.Errorf("writing cluster %s's entry of ClusterPropagatedVersion %s: %w", s.agent.cluster, key, err)
	}
	s.own.record(applied)
	if cv != nil {
		return nil
	}
	// The entry stays when another field manager owns it too: the host,
	// or the replica that served the cluster before.
	if err := s.removeEntries(ctx, applied, func(name string) bool { return name == s.agent.cluster }); err != nil {
		return fmt.Errorf("removing cluster %s's entry of ClusterPropagatedVersion %s: %w", s.agent.cluster, key, err)
	}
	return nil
}

// sameSpec tells whether the CPV's spec is want. The content of held
// revisions is compared decoded: the API server may encode it otherwise
// than want does.
func sameSpec(spec, want typesv1beta1.ClusterPropagatedVersionSpec) bool {
	if spec.Rollout == nil || want.Rollout == nil {
		return equality.Semantic.DeepEqual(spec, want)
	}
	a, b := spec.DeepCopy(), want.DeepCopy()
	a.Rollout.Held, b.Rollout.Held = nil, nil
	return equality.Semantic.DeepEqual(a, b) && slices.EqualFunc(spec.Rollout.Held, want.Rollout.Held, sameHeld)
}

func sameHeld(a, b typesv1beta1.HeldRevision) bool {
	if equality.Semantic.DeepEqual(a, b) {
		return true // the same bytes: nothing to decode (every sync of a held Pull cluster asks)
	}
	decoded := func(j *apiextensionsv1.JSON) any {
		var v any
		if j != nil {
			_ = utiljson.Unmarshal(j.Raw, &v)
		}
		return v
	}
	return a.Number == b.Number && a.TemplateVersion == b.TemplateVersion && a.OverrideVersion == b.OverrideVersion &&
		equality.Semantic.DeepEqual(decoded(a.Template), decoded(b.Template)) && equality.Semantic.DeepEqual(decoded(a.Overrides), decoded(b.Overrides))
}

// placedLabels returns labels with one placed.fedwarden.io/<cluster> label
// per cluster of placed, and none for the others: a Pull cluster's agent
// watches only the CPVs labelled with its name.
func placedLabels(labels map[string]string, placed []string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if !strings.HasPrefix(k, typesv1beta1.LabelPlacedPrefix) {
			out[k] = v
		}
	}
	for _, name := range placed {
		out[typesv1beta1.LabelPlacedPrefix+name] = ""
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func clusterNames(cs []typesv1beta1.PlacedCluster) []string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, string(c.Name))
	}
	return names
}
