// Package shard decides which controller-manager replica serves which
// member cluster, so that several replicas share the members, and hands a
// cluster from one replica to another without a moment when both write to
// it.
//
// # Announce
//
// Each replica holds a coordination.k8s.io/v1 Lease named
// fedwarden-replica-<identity> in the control-plane namespace, labelled
// fedwarden.io/replica=true. It renews the Lease every RetryPeriod, and
// its annotation fedwarden.io/claims lists the clusters the replica
// claims. A clean stop releases the Lease (no holder, no claims).
//
// # Membership
//
// Every replica watches the others' Leases. A Lease is live while it has a
// holder and less than its leaseDurationSeconds has passed since this
// replica saw its latest renewal. The time is this replica's own clock at
// the sighting, not the renewTime written by the other's clock, so that a
// skewed clock cannot end a Lease early; a Lease seen for the first time
// counts from then. Expiries are looked at when they fall due, not only
// when a Lease changes.
//
// # Assignment
//
// Assign maps the clusters to the live replicas by consistent hashing with
// bounded loads: the same on every replica that sees the same live
// replicas, at most ceil(1.25 N / R) clusters each, and a replica coming or
// going moves about 1/R of the clusters.
//
// # Handover: the rule
//
// A replica serves cluster C only while all of these hold:
//
//  1. the assignment over the live replicas, as it sees them, gives it C;
//  2. its own Lease, as last written, lists C, and that write was sent
//     less than RenewDeadline ago;
//  3. after that write, a read from the API server (not the cache) showed
//     no other live Lease listing C.
//
// A replica whose assignment no longer gives it C stops serving C at once
// (Serves turns false, OnChange is called), and then drops C from its
// Lease, once no Acquire hold on C is left. A replica that gains C lists C
// in its Lease first, then reads the others' Leases, and starts only when
// none lists C. So the previous server has stopped before the next one
// starts:
//
//   - The previous server stopped before its Lease stopped listing C; or its
//     Lease expired, which the others see only LeaseDuration after they saw
//     its last renewal, while it stops RenewDeadline after it sent that
//     renewal.
//   - Of two replicas that claim C at the same time (their views of the live
//     replicas may differ for a moment), each writes its claim before it
//     reads, so the later reader sees the earlier claim and waits. A
//     claimant that waits keeps its claim while the assignment gives it C,
//     and drops it when the assignment moves on, so views that agree again
//     end the wait.
//
// A replica that cannot renew its Lease for RenewDeadline stops serving
// everything, and Start returns ErrLeaseLost: like a lost leader election,
// that should end the process.
//
// # Usage
//
// Create a Membership with New, run Start (it is a manager.Runnable that
// needs no leader election), and call SetClusters with every member
// cluster whenever they change. Check Serves before work on a cluster,
// and hold the cluster with Acquire across each write to it. OnChange says
// when a cluster is gained (a takeover is a restart for that cluster) and
// when it is lost.
//
// # Trade-offs
//
// A handover costs one Lease write by each side and one read, and waits
// for the holds of writes in flight: a write that hangs on a member delays
// that member's handover, not the others'. A replica killed without
// releasing its Lease delays its clusters by LeaseDuration. Right after a
// start, a replica counts the Leases of replicas that died earlier as live
// for one LeaseDuration, and the first replica of a fresh start may serve
// everything until the others announce themselves.
package shard
