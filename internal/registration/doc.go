// Package registration builds the objects that make a cluster a member of
// the federation, and names them: on the member, the identity the host
// writes with; on the host, the credentials and the FederatedCluster. It
// only constructs objects; `fedwarden join` applies them, `fedwarden unjoin`
// deletes them by the same names.
//
// For a cluster NAME and the control-plane namespace NS:
//
//	member  Namespace           NS
//	        ServiceAccount      NS/fedwarden-NAME
//	        Secret              NS/fedwarden-NAME-token  (kubernetes.io/service-account-token)
//	        ClusterRole         fedwarden:member:NAME
//	        ClusterRoleBinding  fedwarden:member:NAME    (to the ServiceAccount)
//	host    Namespace           NS
//	        Secret              NS/fedwarden-NAME-credentials  (keys "token" and "ca.crt")
//	        FederatedCluster    NAME
//
// The token Secret is created explicitly because Kubernetes 1.24 and later
// no longer create one for a ServiceAccount; the member's token controller
// fills in its token and ca.crt.
//
// # The rights propagation needs
//
// The ClusterRole grants what the host's controller-manager does to a
// member and nothing more; nothing is bound to cluster-admin or
// system:masters. With no resource list (the default):
//
//   - get, list, watch, create, update, patch and delete on every resource
//     of every group: propagating any enabled type and watching it for drift;
//   - get on the non-resource URLs /readyz, /healthz, /livez and /version:
//     the health probe.
//
// The verbs escalate, bind, impersonate, approve, sign and deletecollection
// are deliberately left out, and no other non-resource URL is granted, so
// the host can neither give itself more rights on the member nor act as
// anyone else there.
//
// That also keeps the host from propagating most RBAC objects: Kubernetes
// refuses to let an identity create a Role or ClusterRole granting rights it
// does not hold, or bind a role it does not hold (KubeFed's sample
// ClusterRole grants */*/*, its sample ClusterRoleBinding binds
// cluster-admin). Spec.PropagateRBAC (`fedwarden join --propagate-rbac`)
// adds a rule granting bind and escalate on roles and clusterroles of
// rbac.authorization.k8s.io. With it the host can give itself, or anyone,
// any right on the member: it amounts to cluster-admin there. With a
// resource list, roles, clusterroles, rolebindings and clusterrolebindings
// must be listed too for them to be propagated.
//
// With a resource list, the seven verbs above are granted on those
// resources only, plus:
//
//   - get, list, watch and create on namespaces: a propagated object's
//     namespace is created when it is missing;
//   - get, list and watch on nodes and resourcequotas: the scheduler reads
//     the member's capacity;
//   - the same non-resource URLs.
//
// Every object carries the labels fedwarden.io/cluster=NAME and
// app.kubernetes.io/managed-by=fedwarden, except the Namespaces: they are
// shared by every member joined to the host (and by the host itself when it
// is also a member), so they carry only the managed-by label.
package registration
