// Package clusterready filters out clusters that are not joined or not
// Ready, except those the workload is already scheduled to: an outage never
// moves a workload by itself (a ReplicaSchedulingPreference with rebalance,
// or a failover policy, moves its replicas instead: see replicadivision).
package clusterready

import (
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

// Name of the plugin.
const Name = "ClusterReady"

// Plugin is the ClusterReady filter.
type Plugin struct{}

var _ framework.FilterPlugin = (*Plugin)(nil)

// New returns the plugin.
func New() framework.Plugin { return &Plugin{} }

// Name returns the plugin's name.
func (*Plugin) Name() string { return Name }

// Filter rules out a cluster that is not joined, or not Ready unless the
// workload is already there.
func (*Plugin) Filter(_ *framework.State, c *framework.Cluster) framework.Result {
	switch {
	case !c.Joined:
		return framework.RuleOut("not joined: there is no FederatedCluster of that name")
	case c.Ready || c.Scheduled():
		return framework.OK()
	case c.NotReady != "":
		return framework.RuleOut("not Ready: %s", c.NotReady)
	default:
		return framework.RuleOut("not Ready")
	}
}
