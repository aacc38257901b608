// Package console serves Fedwarden's web console: the fleet of federated
// resources by member clusters with each copy's drift state, a resource's
// copies, diff, ledger and resync, the clusters, and the history of drift
// episodes, from plain HTML, CSS and JavaScript embedded in the binary.
//
// # Usage
//
//	srv, err := console.New(console.Options{Mode: console.ModeToken, Host: hostAddressAndCA})
//	ln, err := net.Listen("tcp", "127.0.0.1:8800")
//	err = srv.Serve(ctx, ln)
//
// In ModeLocal every request is served with the identity of Options.Host
// (the user's kubeconfig); in ModeToken with the bearer token of the
// request (a sign-in cookie or an Authorization header), and the console
// has no credentials of its own.
//
// # Trade-offs
//
//   - Pages read caches fed by watches, never a LIST per request: each
//     identity has its own informers (CPVs, FederatedClusters, the agents'
//     Leases, without managedFields) and an index of the fleet kept from
//     their events. N identities cost N caches, bounded in number and
//     stopped when idle, because sharing one would need the console to read
//     everything with rights of its own.
//   - In ModeToken a view is served only while the host has confirmed its
//     identity within Options.TokenRecheck (a SelfSubjectReview, and
//     SelfSubjectAccessReviews of what it lists), since a watch outlives
//     its token's revocation and its RBAC's removal; a refused view is
//     dropped. A view holds at most Options.MaxObjectsPerIdentity objects.
//   - The federated resource, the access review and the diff are read on
//     demand: one object each.
//   - Live updates are Server-Sent Events from the informers; a page that
//     falls behind is disconnected and reloads.
package console
