// Package agent runs a Pull cluster's side of propagation inside the member
// cluster: it watches, on the host, the ClusterPropagatedVersions that place
// resources on its cluster and the federated resources they track, writes
// the copies to its own cluster with the same code the host uses in push
// mode (rendering, drift detection, remediation), reports its cluster's
// entry of each CPV, and renews a Lease on the host from which the host's
// health controller derives the cluster's Ready condition.
//
// The host never reaches the member: everything flows from the agent, so a
// member behind NAT or a firewall only needs to reach the host's API server.
// When the host cannot be reached, the agent keeps the member's copies as
// they are (it deletes nothing it has not been told to), keeps healing
// local drift from what it last read, and reports once the host is back.
package agent
