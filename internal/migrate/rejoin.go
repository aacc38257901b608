package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// Rejoiner creates Fedwarden's own identity in the members, for a plan
// made with Options.Rejoin.
type Rejoiner struct {
	// MemberConfig returns the client configuration of a context of the
	// member kubeconfig (Options.MemberKubeconfig). Only its credentials
	// are used: the member is reached at the KubeFedCluster's endpoint and
	// verified with its CA bundle.
	MemberConfig func(context string) (*rest.Config, error)
	// CreateIdentity creates, as `fedwarden join` does, the identity of
	// spec in the member that cfg reaches, and returns its token.
	CreateIdentity func(ctx context.Context, cfg *rest.Config, spec registration.Spec) ([]byte, error)
}

// rejoinMapping is how a cluster is re-joined with Fedwarden's identity.
type rejoinMapping struct {
	// spec is the registration `fedwarden join` would make of the cluster.
	spec registration.Spec
	// context is the context of the member kubeconfig whose credentials
	// create the identity; "" for KubeFed's token.
	context string
	// via says, for the plan, whose credentials create the identity.
	via string
}

// rbacResources are the RBAC kinds whose propagation needs bind and
// escalate when a role grants, or a binding binds, rights the host lacks.
var rbacResources = []string{"roles", "clusterroles", "rolebindings", "clusterrolebindings"}

// mapRejoin plans re-joining the cluster of m with Fedwarden's identity:
// the spec `fedwarden join` would make of it (same endpoint and CA), and
// whose credentials create it.
func mapRejoin(c Cluster, m *clusterMapping, namespace string, o Options) (*rejoinMapping, []Finding) {
	spec := registration.Spec{
		Name:          c.Name,
		Namespace:     namespace,
		APIEndpoint:   m.cluster.Spec.APIEndpoint,
		CABundle:      m.cluster.Spec.CABundle,
		SyncMode:      corev1beta1.SyncModePush,
		PropagateRBAC: o.PropagateRBAC,
		Resources:     o.Resources,
	}
	if err := spec.Validate(); err != nil {
		return nil, []Finding{{Subject: "KubeFedCluster " + c.Name, Reason: "--rejoin: " + err.Error()}}
	}
	r := &rejoinMapping{spec: spec, via: "KubeFed's identity (the token of Secret " + namespace + "/" + c.SecretName + ")"}
	if o.MemberKubeconfig != "" && slices.Contains(o.MemberContexts, c.Name) {
		r.context = c.Name
		r.via = fmt.Sprintf("the credentials of context %s of %s", c.Name, o.MemberKubeconfig)
	}
	return r, nil
}

// planRejoin adds the steps that create Fedwarden's identity in the
// members: they come first, so that a member that refuses stops the
// migration before anything changes on the host.
func (p *Plan) planRejoin() {
	for _, m := range p.clusters {
		r := m.rejoin
		var names []string
		for _, obj := range registration.NewMember(r.spec).Objects() {
			names = append(names, manifest.Describe(obj))
		}
		on := "every top-level resource the member serves (read from its discovery)"
		if len(r.spec.Resources) > 0 {
			var rs []string
			for _, res := range r.spec.Resources {
				rs = append(rs, res.String())
			}
			on = strings.Join(rs, ", ") + " (--resources)"
		}
		rights := "get, list, watch, create, update, patch, delete on " + on + ", no subresources, no impersonate, bind or escalate, nothing bound to cluster-admin"
		if len(r.spec.Resources) == 0 {
			// Write on every kind includes Pods, Secrets and RoleBindings:
			// say what that amounts to, and the narrower path.
			rights += "; writing every kind (Pods, Secrets, RoleBindings) is close to cluster-admin in effect: " +
				"--resources with only the enabled kinds is the least-privilege choice"
		}
		if r.spec.PropagateRBAC {
			rights = "get, list, watch, create, update, patch, delete on " + on + ", no subresources, and, as `fedwarden join --propagate-rbac`, " +
				"bind and escalate on roles and clusterroles, which amounts to cluster-admin"
		}
		p.add("create", "Fedwarden's identity in member "+m.cluster.Name,
			fmt.Sprintf("%s, as `fedwarden join` creates them (%s); through %s, reaching %s verified with the CA of %s (%s); the token is not printed",
				strings.Join(names, ", "), rights, r.via, r.spec.APIEndpoint, m.caSource, clustercache.CADigest(m.ca)))
	}
}

// identityNotes say whose identity Fedwarden uses in the members, and why
// that matters.
func (p *Plan) identityNotes(o Options) {
	const subject = "Identity in the members"
	if !o.Rejoin {
		p.Notes = append(p.Notes, Finding{Subject: subject, Reason: "KubeFed's is kept: each FederatedCluster uses the token of its KubeFedCluster's Secret. " +
			"`kubefedctl join` binds that ServiceAccount to a ClusterRole granting every verb on every resource, which is as much as cluster-admin: " +
			"whoever reads those Secrets on the host, or runs code as Fedwarden's controller-manager, holds that in every member. " +
			"Fedwarden's own identity (`fedwarden join`) grants only what propagation needs. Run the migration with --rejoin to create it in each member " +
			"and use it; nothing in a member has to change without it"})
		return
	}
	p.Notes = append(p.Notes,
		Finding{Subject: subject, Reason: "Fedwarden's own, least-privilege identity is created in each member and each FederatedCluster uses it " +
			"(Secret fedwarden-NAME-credentials, bound to the cluster as `fedwarden join` binds it). KubeFed's Secrets on the host and its ServiceAccounts " +
			"in the members are left as they are, so that --rollback gives KubeFed back a working identity: remove them once you are sure " +
			"(docs/migrate-from-kubefed.md; not with `kubefedctl unjoin`, which deletes the member's " + p.Inventory.Namespace + " namespace, unless the member is the host, and Fedwarden's identity with it)"},
		Finding{Subject: subject, Reason: "--rollback leaves Fedwarden's identity in the members, and the FederatedClusters and their Secrets on the host: " +
			"KubeFed ignores them; `fedwarden unjoin NAME --cluster-context CONTEXT` removes them"})
	if o.PropagateRBAC {
		return
	}
	for _, t := range p.Inventory.Types {
		if t.spec.targetGroup == rbacv1.GroupName && slices.Contains(rbacResources, t.spec.targetPlural) {
			p.Notes = append(p.Notes, Finding{Subject: "FederatedTypeConfig " + t.Name, Reason: "Fedwarden's identity may not create or change a role that grants, " +
				"or a binding that binds, rights it does not hold (KubeFed's sample ClusterRole grants */*/*): copies KubeFed placed are adopted without a write, " +
				"but the member refuses such a change to their template. --propagate-rbac grants bind and escalate on roles and clusterroles, " +
				"which amounts to cluster-admin in the member"})
		}
	}
}

// memberConfig returns the client configuration that reaches a member at
// endpoint, verified with ca (the system roots when empty), authenticated
// with the credentials of creds alone: creds' server, CA and TLS settings
// are not used, so that the identity is created in the very cluster the
// FederatedCluster points at.
func memberConfig(creds *rest.Config, endpoint string, ca []byte) *rest.Config {
	cfg := rest.CopyConfig(creds)
	cfg.Host, cfg.APIPath = endpoint, ""
	cfg.TLSClientConfig.Insecure = false
	cfg.TLSClientConfig.ServerName = ""
	cfg.TLSClientConfig.CAFile = ""
	cfg.TLSClientConfig.CAData = ca
	return cfg
}

// createIdentities creates Fedwarden's identity in each member, before
// anything changes on the host, and returns each cluster's token. The
// tokens stay in memory: they are written to the host's credentials
// Secrets only.
func (h *Host) createIdentities(ctx context.Context, p *Plan) (map[string][]byte, error) {
	if !p.Rejoin {
		return nil, nil
	}
	if h.Rejoin == nil {
		return nil, fmt.Errorf("the plan re-joins the members, but no way to reach them was given")
	}
	c, err := h.NewClient()
	if err != nil {
		return nil, err
	}
	tokens := map[string][]byte{}
	for _, m := range p.clusters {
		creds, err := h.rejoinCredentials(ctx, c, p.Inventory.Namespace, m)
		if err != nil {
			return nil, err
		}
		token, err := h.Rejoin.CreateIdentity(ctx, memberConfig(creds, m.cluster.Spec.APIEndpoint, m.ca), m.rejoin.spec)
		if err != nil {
			return nil, fmt.Errorf("creating Fedwarden's identity in cluster %s through %s: %w; nothing was changed on the host", m.cluster.Name, m.rejoin.via, err)
		}
		tokens[m.cluster.Name] = token
		h.progress("created Fedwarden's identity in cluster %s (ServiceAccount %s/%s) through %s", m.cluster.Name, m.rejoin.spec.Namespace,
			registration.ServiceAccountName(m.cluster.Name), m.rejoin.via)
	}
	return tokens, nil
}

// rejoinCredentials returns the credentials that create Fedwarden's
// identity in the member of m: a context of the member kubeconfig, or
// KubeFed's token, read from its Secret and kept in memory.
func (h *Host) rejoinCredentials(ctx context.Context, c client.Client, namespace string, m *clusterMapping) (*rest.Config, error) {
	if m.rejoin.context != "" {
		if h.Rejoin.MemberConfig == nil {
			return nil, fmt.Errorf("cluster %s: no member kubeconfig to read context %s from", m.cluster.Name, m.rejoin.context)
		}
		return h.Rejoin.MemberConfig(m.rejoin.context)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: m.secret}, secret); err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s of KubeFedCluster %s: %w", namespace, m.secret, m.cluster.Name, err)
	}
	token := secret.Data[corev1beta1.SecretTokenKey]
	if len(token) == 0 {
		return nil, fmt.Errorf("the Secret %s/%s of KubeFedCluster %s has no %q key", namespace, m.secret, m.cluster.Name, corev1beta1.SecretTokenKey)
	}
	return &rest.Config{BearerToken: string(token)}, nil
}
