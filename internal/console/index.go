package console

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// States of a copy that the CPV does not record: the cluster is in
// spec.clusters but has no entry in status.clusterVersions yet.
const (
	// StateWaitingForAgent: a Pull cluster's agent has not reported the copy.
	StateWaitingForAgent = "WaitingForAgent"
	// StatePending: the controller has not recorded the copy yet.
	StatePending = "Pending"
)

// States are every state a cell can show, in the order the pages list them.
var States = []string{
	string(typesv1beta1.InSync), string(typesv1beta1.OutdatedTemplate), string(typesv1beta1.OutdatedOverrides),
	string(typesv1beta1.ModifiedOutOfBand), string(typesv1beta1.Waived), string(typesv1beta1.Missing), string(typesv1beta1.Unreachable),
	string(typesv1beta1.ApplyFailed), string(typesv1beta1.AlreadyExists), StateWaitingForAgent, StatePending,
}

// stateDrifted in a state filter stands for every state but InSync.
const stateDrifted = "Drifted"

// drifted tells whether a copy in state has drifted: it is known to differ
// from what the control plane wants.
func drifted(state string) bool {
	return state != string(typesv1beta1.InSync) && state != StateWaitingForAgent && state != StatePending
}

// row is one federated resource of the fleet: one CPV.
type row struct {
	// key is the CPV's namespace/name.
	key string
	// kind and group of the federated resource; namespace is the CPV's.
	kind, group, namespace, name string
	// id is KIND/NAMESPACE/NAME, as the pages name the resource.
	id string
	// lower is id in lower case, for text filters.
	lower string
	// cpv is the object in the informer's store, never changed.
	cpv *typesv1beta1.ClusterPropagatedVersion
	// cells are the clusters the resource is placed on or has an entry
	// for, by name.
	cells []cellRef
}

// cellRef is one cluster's copy of a resource: its CPV entry, nil when it
// has none yet.
type cellRef struct {
	cluster string
	entry   *typesv1beta1.ClusterVersion
	// state is the index in States of the entry's state: noState when
	// the entry is missing or says none, otherState for a state States
	// does not know (entry.State then says it).
	state int8
}

// Values of cellRef.state that are not indexes in States.
const (
	noState    int8 = -1
	otherState int8 = -2
)

// stateIndex maps a state to its index in States.
var stateIndex = func() map[string]int8 {
	m := map[string]int8{}
	for i, s := range States {
		m[s] = int8(i)
	}
	return m
}()

// Indexes in States of the states of copies with no entry.
var (
	waitingIndex = stateIndex[StateWaitingForAgent]
	pendingIndex = stateIndex[StatePending]
)

func newCellRef(cluster string, entry *typesv1beta1.ClusterVersion) cellRef {
	c := cellRef{cluster: cluster, entry: entry, state: noState}
	if entry != nil && entry.State != "" {
		i, ok := stateIndex[string(entry.State)]
		if !ok {
			i = otherState
		}
		c.state = i
	}
	return c
}

func newRow(cpv *typesv1beta1.ClusterPropagatedVersion) *row {
	gv, _ := schema.ParseGroupVersion(cpv.Spec.TemplateAPIVersion)
	kind := cpv.Spec.TemplateKind
	if kind == "" {
		kind = "Federated"
	}
	r := &row{key: cpv.Namespace + "/" + cpv.Name, kind: kind, group: gv.Group, namespace: cpv.Namespace, name: cpv.Spec.Template, cpv: cpv}
	if r.name == "" {
		r.name = cpv.Name
	}
	r.id = r.kind + "/" + r.namespace + "/" + r.name
	r.lower = strings.ToLower(r.id)
	seen := map[string]int{}
	for i := range cpv.Status.ClusterVersions {
		cv := &cpv.Status.ClusterVersions[i]
		seen[string(cv.ClusterName)] = len(r.cells)
		r.cells = append(r.cells, newCellRef(string(cv.ClusterName), cv))
	}
	for _, pc := range cpv.Spec.Clusters {
		if _, ok := seen[string(pc.Name)]; !ok {
			seen[string(pc.Name)] = len(r.cells)
			r.cells = append(r.cells, newCellRef(string(pc.Name), nil))
		}
	}
	slices.SortFunc(r.cells, func(a, b cellRef) int { return cmp.Compare(a.cluster, b.cluster) })
	return r
}

// cell returns the row's copy in cluster; ok is false when it has none.
func (r *row) cell(cluster string) (cellRef, bool) {
	i, ok := slices.BinarySearchFunc(r.cells, cluster, func(c cellRef, name string) int { return cmp.Compare(c.cluster, name) })
	if !ok {
		return cellRef{}, false
	}
	return r.cells[i], true
}

// index keeps the fleet's rows and clusters, updated from the informers'
// events, so that a page costs a walk over memory and never a LIST.
type index struct {
	mu sync.RWMutex
	// rows by CPV key.
	rows map[string]*row
	// sorted are the rows by namespace, kind and name; nil when they
	// changed since last sorted.
	sorted []*row
	// clusters are the FederatedClusters by name.
	clusters map[string]*corev1beta1.FederatedCluster
	// placed counts the rows that have a cell in each cluster.
	placed map[string]int
}

func newIndex() *index {
	return &index{rows: map[string]*row{}, clusters: map[string]*corev1beta1.FederatedCluster{}, placed: map[string]int{}}
}

// upsert records cpv, and returns its row.
func (ix *index) upsert(cpv *typesv1beta1.ClusterPropagatedVersion) *row {
	r := newRow(cpv)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old, ok := ix.rows[r.key]; ok {
		ix.count(old, -1)
		ix.replaceSorted(old, r)
	} else {
		ix.sorted = nil
	}
	ix.rows[r.key] = r
	ix.count(r, 1)
	return r
}

// remove forgets the CPV namespace/name.
func (ix *index) remove(key string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old, ok := ix.rows[key]; ok {
		ix.count(old, -1)
		delete(ix.rows, key)
		ix.sorted = nil
	}
}

func (ix *index) count(r *row, delta int) {
	for _, c := range r.cells {
		ix.placed[c.cluster] += delta
		if ix.placed[c.cluster] <= 0 {
			delete(ix.placed, c.cluster)
		}
	}
}

// setCluster records a FederatedCluster; nil forgets the one called name.
func (ix *index) setCluster(name string, fc *corev1beta1.FederatedCluster) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if fc == nil {
		delete(ix.clusters, name)
		return
	}
	ix.clusters[name] = fc
}

// state is the state a cell shows.
func (ix *index) state(c cellRef) string {
	if i := ix.stateOf(c); i >= 0 {
		return States[i]
	}
	return string(c.entry.State)
}

// stateOf is the index in States of the state a cell shows, or otherState.
// The caller holds the read lock.
func (ix *index) stateOf(c cellRef) int8 {
	if c.state != noState {
		return c.state
	}
	if fc, ok := ix.clusters[c.cluster]; ok && fc.Spec.SyncMode == corev1beta1.SyncModePull {
		return waitingIndex
	}
	return pendingIndex
}

// compareRows orders rows by namespace, kind and name.
func compareRows(a, b *row) int {
	return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.kind, b.kind), cmp.Compare(a.name, b.name), cmp.Compare(a.key, b.key))
}

// replaceSorted puts r in old's place in the sorted rows, when it sorts
// the same; otherwise they are sorted again when next needed. The caller
// holds the write lock.
func (ix *index) replaceSorted(old, r *row) {
	if ix.sorted == nil {
		return
	}
	i, ok := slices.BinarySearchFunc(ix.sorted, old, compareRows)
	if !ok || compareRows(old, r) != 0 {
		ix.sorted = nil
		return
	}
	ix.sorted[i] = r
}

// ordered returns the rows sorted; the caller holds at least the read lock.
// Sorting happens under the write lock, once per change.
func (ix *index) ordered() []*row {
	if s := ix.sorted; s != nil {
		return s
	}
	ix.mu.RUnlock()
	ix.mu.Lock()
	if ix.sorted == nil {
		s := make([]*row, 0, len(ix.rows))
		for _, r := range ix.rows {
			s = append(s, r)
		}
		slices.SortFunc(s, compareRows)
		ix.sorted = s
	}
	s := ix.sorted
	ix.mu.Unlock()
	ix.mu.RLock()
	return s
}

// columns are the clusters a fleet shows: every FederatedCluster and every
// cluster a resource has a copy in, sorted; only the filter's when it names
// clusters.
func (ix *index) columns(f Filter) []string {
	if len(f.Clusters) > 0 {
		out := slices.Clone(f.Clusters)
		slices.Sort(out)
		return slices.Compact(out)
	}
	seen := map[string]bool{}
	var out []string
	for name := range ix.clusters {
		seen[name] = true
		out = append(out, name)
	}
	for name := range ix.placed {
		if !seen[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// lookup returns the row of the federated resource of kind (Kind or
// Kind.group, any case), namespace and name; a resource whose namespace is
// empty (cluster-scoped) is looked for in controlPlane, where its CPV is.
func (ix *index) lookup(kind, namespace, name, controlPlane string) *row {
	k, group, _ := strings.Cut(kind, ".")
	if namespace == "" {
		namespace = controlPlane
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for _, r := range ix.rows {
		if r.namespace == namespace && r.name == name && strings.EqualFold(r.kind, k) && (group == "" || strings.EqualFold(r.group, group)) {
			return r
		}
	}
	return nil
}
