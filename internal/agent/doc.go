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
// It deletes a copy only when the host tells it to, in the CPV's
// spec.removals, or when the federated resource is deleted; a CPV missing
// from its cache tells it nothing.
//
// On the host, the agent stays in its lane, as the isolation policy of
// internal/registration enforces: it writes its own CPV entries only,
// records its Events in the control-plane namespace (about the federated
// resource, wherever that is), and renews only its own Lease.
package agent
