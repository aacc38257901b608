package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/poll"
)

// restrictedUser is the identity of a controller-manager that may do
// everything but read FederatedDeployments, as with a Helm chart whose
// rbac.federatedResources leaves them out.
const restrictedUser = "fedwarden-restricted"

// restrictedRole grants restrictedUser every right outside
// types.kubefed.io, and there only the CPVs and extra, the federated
// resources (plural) to allow too.
func restrictedRole(extra ...string) *rbacv1.ClusterRole {
	resources := []string{"clusterpropagatedversions", "clusterpropagatedversions/status"}
	for _, r := range extra {
		resources = append(resources, r, r+"/status")
	}
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: restrictedUser},
		Rules: []rbacv1.PolicyRule{
			{
				APIGroups: []string{"", "apps", "coordination.k8s.io", "events.k8s.io", "core.kubefed.io", "scheduling.kubefed.io", "apiextensions.k8s.io", "authentication.k8s.io", "authorization.k8s.io"},
				Resources: []string{"*"}, Verbs: []string{"*"},
			},
			{APIGroups: []string{"types.kubefed.io"}, Resources: resources, Verbs: []string{"*"}},
		},
	}
}

// writeUserKubeconfig writes to path a kubeconfig of cfg, a config of one
// user.
func writeUserKubeconfig(t *testing.T, path string, cfg *rest.Config) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["host"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["host"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "host"}
	kc.CurrentContext = "host"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

// waitForTypeConfigState waits until the FederatedTypeConfig name has the
// controller status, and its Established condition the reason and a
// message containing every one of parts.
func waitForTypeConfigState(t *testing.T, c client.Client, name string, want corev1beta1.ControllerStatus, reason string, timeout time.Duration, parts ...string) {
	t.Helper()
	poll.Eventually(t, timeout, fmt.Sprintf("FederatedTypeConfig %s %s (%s) saying %q", name, want, reason, parts), func(ctx context.Context) (bool, string) {
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, ftc); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(ftc.Status.Conditions, corev1beta1.TypeConfigEstablished)
		if cond == nil || ftc.Status.PropagationController != want || cond.Reason != reason {
			return false, fmt.Sprintf("%+v", ftc.Status)
		}
		for _, p := range parts {
			if !strings.Contains(cond.Message, p) {
				return false, fmt.Sprintf("%+v", ftc.Status)
			}
		}
		return true, ""
	})
}

// A propagation controller that cannot work — the controller-manager may
// not list its federated kind, as when the Helm chart's RBAC list leaves it
// out — shows NotRunning with the error in its FederatedTypeConfig, not
// Running, and still does once the controller has given up (its Start
// returned an error) and been started again. Granted the right, it
// recovers to Running and syncs, with no restart of the controller-manager.
func TestADeadPropagationControllerShowsNotRunning(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startBed(t, localfed.WithMembers(0), localfed.WithControllers())
	f := bed.Fed
	host := newClient(t, f.Host.Config)
	createObject(t, host, restrictedRole())
	createObject(t, host, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: restrictedUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: restrictedUser},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: restrictedUser}},
	})
	allowCPVSpecWrites(t, host, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: restrictedUser})
	cfg, err := f.Host.ConfigForUser(restrictedUser)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "restricted.kubeconfig")
	writeUserKubeconfig(t, kubeconfig, cfg)
	// The controller gives up on its first list after --host-list-timeout
	// (controller-runtime's two minutes by default).
	startControllerManager(t, bed, steadyProbes, "--kubeconfig", kubeconfig, "--host-list-timeout", "15s")

	createObject(t, host, decode(t, deploymentsTypeConfig))
	waitForTypeConfigState(t, host, "deployments.apps", corev1beta1.ControllerStatusNotRunning, corev1beta1.ReasonControllerFailed, time.Minute+loadSlack,
		"cannot list FederatedDeployment", "forbidden", restrictedUser)
	// The controller gives up waiting for the list after the timeout: its
	// Start returns an error. The status says so too, and the controller is
	// started again.
	waitForTypeConfigState(t, host, "deployments.apps", corev1beta1.ControllerStatusNotRunning, corev1beta1.ReasonControllerFailed, time.Minute+loadSlack,
		"cannot list FederatedDeployment", "forbidden", "it gave up once and was started again (the propagation controller of deployments.apps: ")

	// Granted the right, it works: Running, and it syncs a resource.
	role := &rbacv1.ClusterRole{}
	if err := host.Get(t.Context(), types.NamespacedName{Name: restrictedUser}, role); err != nil {
		t.Fatal(err)
	}
	role.Rules = restrictedRole("federateddeployments").Rules
	if err := host.Update(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	// The controller's informer lists again with a backoff of up to a
	// minute; one that gives up before is started again.
	waitForTypeConfigState(t, host, "deployments.apps", corev1beta1.ControllerStatusRunning, corev1beta1.ReasonControllerRunning, 3*time.Minute+loadSlack)
	ns := "e2e-dead"
	createObject(t, host, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	createObject(t, host, newFederatedDeployment(t, ns, "web", 1, "  placement: {clusters: []}"))
	poll.Eventually(t, 30*time.Second+loadSlack, "web's Propagated condition", func(ctx context.Context) (bool, string) {
		_, st, err := federatedStatus(ctx, host, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedPropagated)
		return cond != nil && cond.Reason == typesv1beta1.ReasonNoClusters, fmt.Sprint(cond)
	})
}
