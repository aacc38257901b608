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
// A Pull cluster (Spec.SyncMode Pull) gives the host no credentials of the
// member: an agent in the member reads from the host instead.
//
//	host    Namespace                         NS
//	        ServiceAccount                    NS/fedwarden-agent-NAME
//	        Secret                            NS/fedwarden-agent-NAME-token  (kubernetes.io/service-account-token)
//	        ClusterRole                       fedwarden:agent  (shared by every agent)
//	        ClusterRoleBinding                fedwarden:agent:NAME
//	        Role, RoleBinding                 NS/fedwarden:agent:NAME  (its Lease only)
//	        Lease                             NS/fedwarden-agent-NAME  (renewed by the agent)
//	        ValidatingAdmissionPolicy         fedwarden-agent-isolation  (shared; and its binding)
//	        FederatedCluster                  NAME  (syncMode Pull, no secretRef)
//	member  Namespace                         NS
//	        ServiceAccount                    NS/fedwarden-agent
//	        ClusterRole, ClusterRoleBinding   fedwarden-agent  (the rules below)
//	        Secret                            NS/fedwarden-agent-host  (key "kubeconfig": the agent's kubeconfig of the host)
//	        Deployment                        NS/fedwarden-agent
//
// The agent's ClusterRole on the host lets it read FederatedTypeConfigs and
// every resource of types.kubefed.io, patch ClusterPropagatedVersion status
// and write Events. RBAC cannot tell one cluster's entry of
// status.clusterVersions from another's: the admission policy
// (IsolationPolicy) refuses an agent any change to a ClusterPropagatedVersion
// but to its own cluster's entry.
//
// The token Secret is created explicitly because Kubernetes 1.24 and later
// no longer create one for a ServiceAccount; the member's token controller
// fills in its token and ca.crt.
//
// # The rights propagation needs
//
// The ClusterRole grants what the host's controller-manager does to a
// member and nothing more; nothing is bound to cluster-admin or
// system:masters. It lists resources by name:
//
//   - get, list, watch, create, update, patch and delete on the resources
//     of Spec.Resources (`fedwarden join --resources`), or, without a list,
//     on every top-level resource the member serves when it joins (read from
//     its discovery, see ServedResources): propagating any enabled type and
//     watching it for drift. Subresources are never granted, so the host
//     cannot mint ServiceAccount tokens (serviceaccounts/token), exec into
//     pods or reach nodes through the API server's proxy. A kind installed in
//     the member later needs `fedwarden join` again;
//   - get, list, watch and create on namespaces: a propagated object's
//     namespace is created when it is missing;
//   - get, list and watch on nodes, pods and resourcequotas: the scheduler reads
//     the member's capacity (free room on Ready Nodes, quotas);
//   - get on the non-resource URLs /readyz, /healthz, /livez and /version:
//     the health probe.
//
// The verbs escalate, bind, impersonate, approve, sign and deletecollection
// are deliberately left out, and no other non-resource URL is granted. One
// right still reaches further than it looks: writing Secrets (which
// propagating Secrets needs) includes creating a ServiceAccount token Secret,
// which the member's token controller fills for any ServiceAccount of that
// namespace. Leave secrets out of --resources when Secrets are not
// propagated.
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
// Every object carries the labels fedwarden.io/cluster=NAME and
// app.kubernetes.io/managed-by=fedwarden, except the Namespaces: they are
// shared by every member joined to the host (and by the host itself when it
// is also a member), so they carry only the managed-by label.
package registration
