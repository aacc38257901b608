package console

import (
	"cmp"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// Clusters is the clusters page.
type Clusters struct {
	Clusters []ClusterInfo `json:"clusters"`
	Problems []string      `json:"problems,omitempty"`
}

// ClusterInfo is one member cluster.
type ClusterInfo struct {
	Name string `json:"name"`
	// Ready is the status of its Ready condition (Unknown without one),
	// Reason and Message the condition's.
	Ready   metav1.ConditionStatus `json:"ready"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
	// Mode is spec.syncMode: Push or Pull.
	Mode              corev1beta1.SyncMode `json:"mode"`
	KubernetesVersion string               `json:"kubernetesVersion,omitempty"`
	Region            string               `json:"region,omitempty"`
	Zones             []corev1beta1.Zone   `json:"zones,omitempty"`
	APIEndpoint       string               `json:"apiEndpoint,omitempty"`
	// LeaseRenewed is when a Pull cluster's agent last renewed its Lease;
	// nil when it never did or the Lease cannot be read.
	LeaseRenewed *metav1.MicroTime `json:"leaseRenewed,omitempty"`
	// LeaseHolder is the agent holding it.
	LeaseHolder string `json:"leaseHolder,omitempty"`
	// Copies counts the resources placed on the cluster, Drifted those
	// whose copy there is known to differ.
	Copies  int `json:"copies"`
	Drifted int `json:"drifted"`
}

// clusterList answers the clusters page; lease returns the Lease of a
// Pull cluster's agent, nil when there is none.
func (ix *index) clusterList(lease func(name string) *coordinationv1.Lease) []ClusterInfo {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	copies, drift := map[string]int{}, map[string]int{}
	for _, r := range ix.rows {
		for _, c := range r.cells {
			copies[c.cluster]++
			if drifted(ix.state(c)) {
				drift[c.cluster]++
			}
		}
	}
	out := make([]ClusterInfo, 0, len(ix.clusters))
	for name, fc := range ix.clusters {
		ci := ClusterInfo{
			Name: name, Ready: metav1.ConditionUnknown, Mode: fc.Spec.SyncMode, KubernetesVersion: fc.Status.KubernetesVersion,
			Region: fc.Spec.Region, Zones: fc.Spec.Zones, APIEndpoint: fc.Spec.APIEndpoint, Copies: copies[name], Drifted: drift[name],
		}
		if ci.Mode == "" {
			ci.Mode = corev1beta1.SyncModePush
		}
		if ci.Region == "" {
			ci.Region = fc.Labels[corev1beta1.LabelRegion]
		}
		if cond := meta.FindStatusCondition(fc.Status.Conditions, corev1beta1.ClusterReady); cond != nil {
			ci.Ready, ci.Reason, ci.Message = cond.Status, cond.Reason, cond.Message
		}
		if ci.Mode == corev1beta1.SyncModePull {
			if l := lease(name); l != nil {
				ci.LeaseRenewed = l.Spec.RenewTime
				if l.Spec.HolderIdentity != nil {
					ci.LeaseHolder = *l.Spec.HolderIdentity
				}
			}
		}
		out = append(out, ci)
	}
	slices.SortFunc(out, func(a, b ClusterInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// leaseName is the name of a Pull cluster's agent's Lease, in the
// control-plane namespace.
func leaseName(cluster string) string { return registration.AgentLeaseName(cluster) }
