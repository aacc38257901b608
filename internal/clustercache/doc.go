// Package clustercache keeps, for every member cluster, the clients the
// host-side controllers use to reach it: a rest.Config, a clientset, a
// dynamic client and a dynamic informer factory.
//
// # Usage
//
// The cluster health controller is the only writer: on every visit of a
// FederatedCluster it loads the cluster's connection settings with [Load]
// and hands them to [Cache.Set], which builds the clients the first time and
// rebuilds them when the endpoint, the CA bundle or the token change. When a
// cluster leaves the federation, or its settings become unusable, the
// controller calls [Cache.Remove]. Every other controller only reads:
//
//	member, err := cache.Get("member-1")
//	if errors.Is(err, clustercache.ErrClusterNotConnected) {
//		// not joined, malformed settings, or a Pull cluster: report and retry later
//	}
//	deployments := member.Dynamic.Resource(gvr).Namespace(ns)
//
// Informers started from [Member.Informers] or [Member.Managed] must be started with
// [Member.Context], which ends when the member's clients are rebuilt or
// removed, so that no informer outlives the credentials it was built with.
//
// # Credentials stay bound
//
// [Load] refuses a credentials Secret that is not bound to the
// FederatedCluster that names it: its annotations must name that cluster,
// its spec.apiEndpoint and the digest ([CADigest]) of the CA bundle it is
// verified with. Only someone who may write Secrets can change them, so
// whoever may edit a FederatedCluster cannot point a token at a server of
// their own; the refusal comes before any client exists, so the token is
// never sent. fedwarden join writes the binding.
//
// # Trade-offs
//
// A member's clients are kept while it is unreachable: readiness is the
// health controller's business (it is written in the FederatedCluster's
// conditions), and callers decide whether to write to a cluster that is not
// Ready. Rebuilding on a credential change stops the member's informers;
// their owners must notice the ended context and start new ones from the new
// Member. The cache holds no host objects: it never reads the API by itself.
package clustercache
