package registration

import (
	"fmt"
	"maps"
	"net/url"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// AgentHost holds the host objects of a Pull cluster: its agent's identity
// and rights, the Lease it renews, the isolation policy and the
// FederatedCluster. There are no credentials of the member.
type AgentHost struct {
	Namespace      *corev1.Namespace
	ServiceAccount *corev1.ServiceAccount
	// TokenSecret asks the host's token controller for the agent's
	// long-lived token.
	TokenSecret *corev1.Secret
	// ClusterRole is shared by every agent (AgentClusterRoleName).
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	// OwnClusterRole and OwnClusterRoleBinding let the agent read its own
	// FederatedCluster, and no other: the labels a waiver's
	// clusterSelector selects on.
	OwnClusterRole        *rbacv1.ClusterRole
	OwnClusterRoleBinding *rbacv1.ClusterRoleBinding
	// Role and RoleBinding let the agent renew its Lease, and no other.
	Role        *rbacv1.Role
	RoleBinding *rbacv1.RoleBinding
	// Lease is created empty: the agent fills in its spec.
	Lease *coordinationv1.Lease
	// Policy and PolicyBinding are shared by every agent.
	Policy        client.Object
	PolicyBinding client.Object
	Cluster       *v1beta1.FederatedCluster
}

// NewAgentHost builds the host objects of s, which must be valid and Pull.
func NewAgentHost(s Spec) *AgentHost {
	sa := AgentServiceAccountName(s.Name)
	binding := AgentBindingName(s.Name)
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: s.Namespace, Name: sa}}
	token := objectMeta(s.Name, s.Namespace, AgentTokenSecretName(s.Name))
	token.Annotations = map[string]string{corev1.ServiceAccountNameKey: sa}
	return &AgentHost{
		Namespace: namespace(s.Namespace),
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:   typeMeta(corev1.SchemeGroupVersion.String(), "ServiceAccount"),
			ObjectMeta: objectMeta(s.Name, s.Namespace, sa),
		},
		TokenSecret: &corev1.Secret{
			TypeMeta:   typeMeta(corev1.SchemeGroupVersion.String(), "Secret"),
			ObjectMeta: token,
			Type:       corev1.SecretTypeServiceAccountToken,
		},
		ClusterRole: AgentClusterRole(),
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRoleBinding"),
			ObjectMeta: objectMeta(s.Name, "", binding),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AgentClusterRoleName},
			Subjects:   subjects,
		},
		OwnClusterRole: &rbacv1.ClusterRole{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRole"),
			ObjectMeta: objectMeta(s.Name, "", AgentOwnClusterName(s.Name)),
			Rules: []rbacv1.PolicyRule{{
				// Read with a get, when a waiver selects clusters by label.
				APIGroups:     []string{coreGroup},
				Resources:     []string{"federatedclusters"},
				ResourceNames: []string{s.Name},
				Verbs:         []string{"get"},
			}},
		},
		OwnClusterRoleBinding: &rbacv1.ClusterRoleBinding{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRoleBinding"),
			ObjectMeta: objectMeta(s.Name, "", AgentOwnClusterName(s.Name)),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AgentOwnClusterName(s.Name)},
			Subjects:   subjects,
		},
		Role: &rbacv1.Role{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "Role"),
			ObjectMeta: objectMeta(s.Name, s.Namespace, binding),
			Rules: []rbacv1.PolicyRule{{
				// The agent renews its own Lease, from which the host's health
				// controller derives the cluster's Ready condition. join
				// creates the Lease, as RBAC cannot restrict create by name.
				APIGroups:     []string{"coordination.k8s.io"},
				Resources:     []string{"leases"},
				ResourceNames: []string{AgentLeaseName(s.Name)},
				Verbs:         []string{"get", "update", "patch"},
			}},
		},
		RoleBinding: &rbacv1.RoleBinding{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "RoleBinding"),
			ObjectMeta: objectMeta(s.Name, s.Namespace, binding),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: binding},
			Subjects:   subjects,
		},
		Lease: &coordinationv1.Lease{
			TypeMeta:   typeMeta(coordinationv1.SchemeGroupVersion.String(), "Lease"),
			ObjectMeta: objectMeta(s.Name, s.Namespace, AgentLeaseName(s.Name)),
		},
		Policy:        IsolationPolicy(),
		PolicyBinding: IsolationPolicyBinding(),
		Cluster:       federatedCluster(s),
	}
}

// Objects returns the objects in the order they are applied: each one
// before those that refer to it, the FederatedCluster last.
func (h *AgentHost) Objects() []client.Object {
	return []client.Object{
		h.Namespace, h.ServiceAccount, h.TokenSecret, h.ClusterRole, h.ClusterRoleBinding, h.OwnClusterRole, h.OwnClusterRoleBinding, h.Role, h.RoleBinding,
		h.Lease, h.Policy, h.PolicyBinding, h.Cluster,
	}
}

// Shared returns the objects every agent shares, which unjoin leaves.
func (h *AgentHost) Shared() []client.Object {
	return []client.Object{h.Namespace, h.ClusterRole, h.Policy, h.PolicyBinding}
}

// Own returns the objects of this cluster's agent only, those that refer to
// others first: what unjoin deletes, after the FederatedCluster.
func (h *AgentHost) Own() []client.Object {
	return []client.Object{h.ClusterRoleBinding, h.OwnClusterRoleBinding, h.OwnClusterRole, h.RoleBinding, h.Role, h.Lease, h.TokenSecret, h.ServiceAccount}
}

// readVerbs are the verbs of a read-only rule.
var readVerbs = []string{"get", "list", "watch"}

// AgentClusterRole returns the host ClusterRole every agent is bound to:
// reading what is placed on its cluster, and writing CPV status. It cannot
// tell one cluster's entries from another's: the isolation policy does
// (IsolationPolicy).
func AgentClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRole"),
		ObjectMeta: sharedMeta(AgentClusterRoleName),
		Rules: []rbacv1.PolicyRule{
			// The enabled types: which federated kinds to watch, and the
			// target kind each one propagates.
			{APIGroups: []string{coreGroup}, Resources: []string{"federatedtypeconfigs"}, Verbs: readVerbs},
			// The federated resources of every enabled type (their kinds are
			// only known at run time, so every resource of the group) and the
			// ClusterPropagatedVersions, whose spec says which clusters a
			// resource is placed on and what to write there. Read only.
			{APIGroups: []string{typesGroup}, Resources: []string{"*"}, Verbs: readVerbs},
			// The agent records what it wrote to its cluster in its own entry
			// of status.clusterVersions (server-side apply, field manager
			// fedwarden-agent-NAME). Patch only: no update, create or delete,
			// and nothing else of a CPV is writable; the isolation policy
			// refuses changes to other clusters' entries.
			{APIGroups: []string{typesGroup}, Resources: []string{cpvs + "/status"}, Verbs: []string{"patch"}},
			// Events about what the agent did (drift, failed writes), with
			// the core/v1 and the events.k8s.io/v1 API; a repeated Event is
			// patched.
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
	}
}

// AgentMember holds the objects that run a Pull cluster's agent in its
// member.
type AgentMember struct {
	Namespace          *corev1.Namespace
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	// Secret holds the agent's kubeconfig of the host.
	Secret     *corev1.Secret
	Deployment *appsv1.Deployment
}

// NewAgentMember builds the member objects of s, which must be valid and
// Pull, for an agent of image whose kubeconfig of the host is kubeconfig.
func NewAgentMember(s Spec, image string, kubeconfig []byte) *AgentMember {
	name := AgentMemberServiceAccountName
	return &AgentMember{
		Namespace: namespace(s.Namespace),
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:   typeMeta(corev1.SchemeGroupVersion.String(), "ServiceAccount"),
			ObjectMeta: objectMeta(s.Name, s.Namespace, name),
		},
		ClusterRole: &rbacv1.ClusterRole{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRole"),
			ObjectMeta: objectMeta(s.Name, "", name),
			Rules:      memberRules(s),
		},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRoleBinding"),
			ObjectMeta: objectMeta(s.Name, "", name),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: s.Namespace, Name: name}},
		},
		Secret: &corev1.Secret{
			TypeMeta:   typeMeta(corev1.SchemeGroupVersion.String(), "Secret"),
			ObjectMeta: objectMeta(s.Name, s.Namespace, AgentHostKubeconfigSecretName),
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{AgentHostKubeconfigKey: kubeconfig},
		},
		Deployment: agentDeployment(s, image),
	}
}

// Objects returns the objects in the order they are applied: each one
// before those that refer to it.
func (m *AgentMember) Objects() []client.Object {
	return []client.Object{m.Namespace, m.ServiceAccount, m.ClusterRole, m.ClusterRoleBinding, m.Secret, m.Deployment}
}

// Own returns the objects of the agent, those that refer to others first:
// what unjoin deletes. The Namespace stays.
func (m *AgentMember) Own() []client.Object {
	return []client.Object{m.Deployment, m.Secret, m.ClusterRoleBinding, m.ClusterRole, m.ServiceAccount}
}

// AgentArgs returns the arguments of the agent's container for s: the
// fedwarden subcommand and its flags. Its member credentials are those of
// the pod (in-cluster).
func AgentArgs(s Spec) []string {
	return []string{
		"agent",
		"--cluster-name", s.Name,
		"--host-kubeconfig", AgentHostKubeconfigPath,
		"--namespace", s.Namespace,
		"--metrics-bind-address", ":" + strconv.Itoa(AgentMetricsPort),
		"--health-probe-bind-address", ":" + strconv.Itoa(AgentProbePort),
	}
}

// agentSelector selects the agent's pods.
var agentSelector = map[string]string{"app.kubernetes.io/name": "fedwarden", "app.kubernetes.io/component": "agent"}

// nonRoot is the "nonroot" user and group of distroless images.
const nonRoot = 65532

func agentDeployment(s Spec, image string) *appsv1.Deployment {
	podLabels := maps.Clone(agentSelector)
	maps.Copy(podLabels, labels(s.Name))
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("probes")}},
			PeriodSeconds: 10, FailureThreshold: 3,
		}
	}
	liveness, readiness := probe("/healthz"), probe("/readyz")
	liveness.InitialDelaySeconds, readiness.InitialDelaySeconds = 15, 5
	return &appsv1.Deployment{
		TypeMeta:   typeMeta(appsv1.SchemeGroupVersion.String(), "Deployment"),
		ObjectMeta: objectMeta(s.Name, s.Namespace, AgentDeploymentName),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(agentSelector)},
			// One agent at a time: two would both write the cluster's entries.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName: AgentMemberServiceAccountName,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](nonRoot), RunAsGroup: ptr.To[int64](nonRoot),
						// The kubeconfig is readable by the group only.
						FSGroup:        ptr.To[int64](nonRoot),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "agent",
						Image: image,
						Args:  AgentArgs(s),
						Ports: []corev1.ContainerPort{
							{Name: "metrics", ContainerPort: AgentMetricsPort, Protocol: corev1.ProtocolTCP},
							{Name: "probes", ContainerPort: AgentProbePort, Protocol: corev1.ProtocolTCP},
						},
						LivenessProbe:  liveness,
						ReadinessProbe: readiness,
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "host-kubeconfig", MountPath: AgentHostKubeconfigDir, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{
						Name: "host-kubeconfig",
						VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName:  AgentHostKubeconfigSecretName,
							DefaultMode: ptr.To[int32](0o440),
						}},
					}},
				},
			},
		},
	}
}

// HostEndpoint is how an agent reaches the host API server.
type HostEndpoint struct {
	// Server is the host API server's https URL.
	Server string
	// CAData is the PEM of the CAs that sign its certificate; empty means
	// the system roots.
	CAData []byte
	// TLSServerName is the name to verify its certificate against, when it
	// is not the server URL's host.
	TLSServerName string
}

// AgentKubeconfig returns the kubeconfig with which the agent of s reaches
// the host as its ServiceAccount, whose token is token: one context, whose
// namespace is the control-plane namespace. TLS is always verified.
func AgentKubeconfig(s Spec, host HostEndpoint, token []byte) ([]byte, error) {
	if u, err := url.Parse(host.Server); err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return nil, fmt.Errorf("host API server %q is not an https:// URL with a host: the agent verifies the host's certificate", host.Server)
	}
	const name = "fedwarden-host"
	user := AgentServiceAccountName(s.Name)
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: host.Server, CertificateAuthorityData: host.CAData, TLSServerName: host.TLSServerName}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: string(token)}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user, Namespace: s.Namespace}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}
