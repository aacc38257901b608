// Package chaos shows that Fedwarden loses nothing when it is hurt under
// load: a controller-manager killed with SIGKILL in the middle of a bulk
// create, a member API server down during a stream of updates or restarted
// during a bulk, a second writer bumping the ClusterPropagatedVersions.
//
// Each case runs a test bed of its own (internal/localfed) with a real
// controller-manager process (test/fedtest), and ends with a Ledger: the
// copies lost, orphaned and at the wrong version, which must all be zero,
// and the member writes beyond one per change, which a WriteLog counts by
// watching the members. The cases run in parallel, as many at a time as
// go test's -parallel allows (GOMAXPROCS: two on the two-core CI machine).
// CHAOS_BULK sets the size of the bulk creates (300 by default).
package chaos
