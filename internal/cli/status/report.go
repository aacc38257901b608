package status

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
)

// objects are what a report is made of, as read from the host.
type objects struct {
	clusters []corev1beta1.FederatedCluster
	types    []corev1beta1.FederatedTypeConfig
	cpvs     []typesv1beta1.ClusterPropagatedVersion
}

// Report is what status shows: the screen, and -o json and -o yaml.
type Report struct {
	// Clusters are the FederatedClusters, by name.
	Clusters []Cluster `json:"clusters"`
	// Types are the FederatedTypeConfigs, by name.
	Types []TypeConfig `json:"types"`
	// Resources counts the federated resources and their member copies.
	Resources Resources `json:"resources"`
	// WorstOffenders are the federated resources with the most drifted
	// clusters, then the longest drifting; at most --top of them.
	WorstOffenders []Offender `json:"worstOffenders"`
}

// Cluster is one member cluster.
type Cluster struct {
	// Name of the FederatedCluster.
	Name string `json:"name"`
	// Ready is the status of its Ready condition; Unknown without one.
	Ready metav1.ConditionStatus `json:"ready"`
	// Reason of the Ready condition; empty without one.
	Reason string `json:"reason"`
	// Mode is spec.syncMode.
	Mode corev1beta1.SyncMode `json:"mode"`
	// KubernetesVersion the member's API server reports.
	KubernetesVersion string `json:"kubernetesVersion"`
	// Region is spec.region.
	Region string `json:"region"`
}

// TypeConfig is one enabled type.
type TypeConfig struct {
	// Name of the FederatedTypeConfig, for example deployments.apps.
	Name string `json:"name"`
	// FederatedKind is the kind of its federated resources.
	FederatedKind string `json:"federatedKind"`
	// Propagation is spec.propagation.
	Propagation corev1beta1.Mode `json:"propagation"`
	// Controller is status.propagationController; empty until reported.
	Controller corev1beta1.ControllerStatus `json:"controller"`
	// Established is the status of its Established condition; Unknown
	// without one.
	Established metav1.ConditionStatus `json:"established"`
	// Reason of the Established condition; empty without one.
	Reason string `json:"reason"`
}

// Resources counts the federated resources, one per
// ClusterPropagatedVersion, and their member copies.
type Resources struct {
	// Total is the number of federated resources.
	Total int `json:"total"`
	// Propagated counts those whose Propagated condition is True.
	Propagated int `json:"propagated"`
	// Drifted counts those with at least one drifted cluster.
	Drifted int `json:"drifted"`
	// ClusterStates counts the member copies in each drift state; every
	// known state is present. Copies not classified yet are left out.
	ClusterStates map[typesv1beta1.DriftState]int `json:"clusterStates"`
}

// Offender is a federated resource that drifted.
type Offender struct {
	// Namespace of the federated resource; empty for a cluster-scoped one.
	Namespace string `json:"namespace"`
	// Kind of the federated resource, for example FederatedDeployment.
	Kind string `json:"kind"`
	// Name of the federated resource.
	Name string `json:"name"`
	// DriftedClusters counts its clusters that are not in sync.
	DriftedClusters int `json:"driftedClusters"`
	// Clusters counts the clusters it is placed on.
	Clusters int `json:"clusters"`
	// States are the drifted clusters and their states, by cluster.
	States []ClusterState `json:"states"`
	// DriftedSince is when its first cluster still drifted left InSync;
	// null when unknown.
	DriftedSince *metav1.Time `json:"driftedSince"`
}

// ClusterState is the drift state of one member copy.
type ClusterState struct {
	Cluster string                  `json:"cluster"`
	State   typesv1beta1.DriftState `json:"state"`
}

// resource names the federated resource as the screen does:
// federateddeployment/web.
func (o Offender) resource() string {
	if o.Kind == "" {
		return o.Name
	}
	return strings.ToLower(o.Kind) + "/" + o.Name
}

// driftStates are the known drift states, in the order the screen shows them.
var driftStates = []typesv1beta1.DriftState{
	typesv1beta1.InSync,
	typesv1beta1.OutdatedTemplate,
	typesv1beta1.OutdatedOverrides,
	typesv1beta1.ModifiedOutOfBand,
	typesv1beta1.Waived,
	typesv1beta1.Missing,
	typesv1beta1.Unreachable,
	typesv1beta1.ApplyFailed,
	typesv1beta1.AlreadyExists,
}

// newReport makes the report of objs, with at most top worst offenders.
func newReport(objs objects, top int) Report {
	r := Report{
		Clusters:       make([]Cluster, 0, len(objs.clusters)),
		Types:          make([]TypeConfig, 0, len(objs.types)),
		Resources:      resources(objs.cpvs),
		WorstOffenders: offenders(objs.cpvs, federatedtype.ClusterScoped(objs.types), top),
	}
	for _, c := range objs.clusters {
		r.Clusters = append(r.Clusters, cluster(c))
	}
	slices.SortFunc(r.Clusters, func(a, b Cluster) int { return cmp.Compare(a.Name, b.Name) })
	for _, t := range objs.types {
		r.Types = append(r.Types, typeConfig(t))
	}
	slices.SortFunc(r.Types, func(a, b TypeConfig) int { return cmp.Compare(a.Name, b.Name) })
	return r
}

func cluster(c corev1beta1.FederatedCluster) Cluster {
	ready, reason := condition(c.Status.Conditions, corev1beta1.ClusterReady)
	return Cluster{
		Name:              c.Name,
		Ready:             ready,
		Reason:            reason,
		Mode:              cmp.Or(c.Spec.SyncMode, corev1beta1.SyncModePush),
		KubernetesVersion: c.Status.KubernetesVersion,
		Region:            c.Spec.Region,
	}
}

func typeConfig(t corev1beta1.FederatedTypeConfig) TypeConfig {
	established, reason := condition(t.Status.Conditions, corev1beta1.TypeConfigEstablished)
	return TypeConfig{
		Name:          t.Name,
		FederatedKind: t.Spec.FederatedType.Kind,
		Propagation:   cmp.Or(t.Spec.Propagation, corev1beta1.Enabled),
		Controller:    t.Status.PropagationController,
		Established:   established,
		Reason:        reason,
	}
}

// condition returns the status and reason of the condition of type t, or
// Unknown and no reason when there is none yet.
func condition(conditions []metav1.Condition, t string) (metav1.ConditionStatus, string) {
	c := meta.FindStatusCondition(conditions, t)
	if c == nil {
		return metav1.ConditionUnknown, ""
	}
	return c.Status, c.Reason
}

// resources counts cpvs and their cluster entries.
func resources(cpvs []typesv1beta1.ClusterPropagatedVersion) Resources {
	r := Resources{Total: len(cpvs), ClusterStates: map[typesv1beta1.DriftState]int{}}
	for _, s := range driftStates {
		r.ClusterStates[s] = 0
	}
	for _, cpv := range cpvs {
		if meta.IsStatusConditionTrue(cpv.Status.Conditions, typesv1beta1.CPVPropagated) {
			r.Propagated++
		}
		if drifted(cpv) > 0 {
			r.Drifted++
		}
		for _, cv := range cpv.Status.ClusterVersions {
			if cv.State != "" {
				r.ClusterStates[cv.State]++
			}
		}
	}
	return r
}

// drifted counts the drifted clusters of cpv: status.driftedClusters, or,
// before the controller counted them, the classified entries not in sync.
func drifted(cpv typesv1beta1.ClusterPropagatedVersion) int {
	if n := cpv.Status.DriftedClusters; n != nil {
		return int(*n)
	}
	return len(driftedStates(cpv))
}

// placed counts the clusters of cpv: status.clusterCount, or, before the
// controller counted them, spec.clusters.
func placed(cpv typesv1beta1.ClusterPropagatedVersion) int {
	if n := cpv.Status.ClusterCount; n != nil {
		return int(*n)
	}
	return len(cpv.Spec.Clusters)
}

// driftedStates returns the classified entries of cpv that are not in
// sync, by cluster.
func driftedStates(cpv typesv1beta1.ClusterPropagatedVersion) []ClusterState {
	out := []ClusterState{}
	for _, cv := range cpv.Status.ClusterVersions {
		if cv.State != "" && cv.State != typesv1beta1.InSync && cv.State != typesv1beta1.RolloutPending {
			out = append(out, ClusterState{Cluster: string(cv.ClusterName), State: cv.State})
		}
	}
	slices.SortFunc(out, func(a, b ClusterState) int { return cmp.Compare(a.Cluster, b.Cluster) })
	return out
}

// driftedSince returns when the oldest drifted entry of cpv left InSync,
// or nil when none says.
func driftedSince(cpv typesv1beta1.ClusterPropagatedVersion) *metav1.Time {
	var oldest *metav1.Time
	for _, cv := range cpv.Status.ClusterVersions {
		if cv.State == "" || cv.State == typesv1beta1.InSync || cv.State == typesv1beta1.RolloutPending || cv.DriftedSince == nil {
			continue
		}
		if oldest == nil || cv.DriftedSince.Before(oldest) {
			oldest = cv.DriftedSince
		}
	}
	return oldest
}

// offenders returns the top drifted resources of cpvs: the most drifted
// clusters first, then the oldest drift, then those that do not say since
// when they drift.
func offenders(cpvs []typesv1beta1.ClusterPropagatedVersion, clusterScoped federatedtype.Scopes, top int) []Offender {
	out := []Offender{}
	for _, cpv := range cpvs {
		n := drifted(cpv)
		if n == 0 {
			continue
		}
		namespace := cpv.Namespace
		if clusterScoped.Has(cpv.Spec) {
			namespace = ""
		}
		out = append(out, Offender{
			Namespace:       namespace,
			Kind:            cpv.Spec.TemplateKind,
			Name:            cpv.Spec.Template,
			DriftedClusters: n,
			Clusters:        placed(cpv),
			States:          driftedStates(cpv),
			DriftedSince:    driftedSince(cpv),
		})
	}
	slices.SortFunc(out, func(a, b Offender) int {
		return cmp.Or(
			cmp.Compare(b.DriftedClusters, a.DriftedClusters),
			compareSince(a.DriftedSince, b.DriftedSince),
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.resource(), b.resource()),
		)
	})
	return out[:min(top, len(out))]
}

// compareSince orders the older time first, and unknown times last.
func compareSince(a, b *metav1.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	default:
		return a.Compare(b.Time)
	}
}
