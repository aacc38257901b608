// Package migrate moves a host cluster from KubeFed v0.10.0 to Fedwarden
// without writing to any member cluster, and back.
//
// Read takes the inventory of a KubeFed install (its KubeFedConfig,
// KubeFedClusters and their Secrets, FederatedTypeConfigs, federated
// resources, ReplicaSchedulingPreferences and PropagatedVersions); NewPlan,
// pure, says what the handover will do and what it cannot carry over, with
// the reason; Handover stops KubeFed, saves what it removes or replaces in a
// Secret of the control-plane namespace and returns the digest of that
// state, removes KubeFed's webhook configurations, replaces the CRDs of the
// federated kinds with Fedwarden's (every object is kept: the versions are
// the same) and creates a FederatedCluster per KubeFedCluster, bound to
// KubeFed's Secret. Rollback puts back what that Secret holds and starts
// KubeFed again: only KubeFed's kinds and names, and only from the state of
// the digest the admin gives; ReviewRollback says, writing nothing, what
// it would restore and what it refuses.
//
// Nothing here writes to a member cluster, nor reads one: the copies KubeFed
// placed are adopted by Fedwarden's controller-manager, which records a copy
// that equals what it would render without writing it. The one exception is
// Options.Rejoin (--rejoin): before anything changes on the host, the
// handover creates Fedwarden's own identity in each member, as `fedwarden
// join` does (through the Host's Rejoiner), with KubeFed's token or a
// member kubeconfig's context, and the FederatedClusters then use it
// instead of KubeFed's Secrets, which are left as they are for Rollback.
// Rollback leaves that identity in the members.
package migrate
