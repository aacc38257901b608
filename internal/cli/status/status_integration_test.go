package status_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/status"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/scheme"
)

// wantScreen is the status of the federation TestStatus builds.
const wantScreen = `Clusters
NAME       READY                        MODE   VERSION   REGION
member-1   True                         Push   v1.33.1   eu-west-1
member-2   False (ClusterUnreachable)   Pull   <none>    <none>

Enabled types
NAME               FEDERATED KIND        PROPAGATION   CONTROLLER
configmaps         FederatedConfigMap    Disabled      NotRunning (PropagationDisabled)
deployments.apps   FederatedDeployment   Enabled       Running

Federated resources
2 total, 1 propagated, 1 drifted
Cluster copies: 2 InSync, 1 ModifiedOutOfBand, 1 Unreachable

Worst offenders
NAMESPACE   RESOURCE                  DRIFTED   STATES                                            SINCE
shop        federateddeployment/web   2/2       member-1=ModifiedOutOfBand,member-2=Unreachable   10d
`

// TestStatus reports on a federation written into a real host: clusters
// and type configs with the status their controllers would write, and
// federated resources' ClusterPropagatedVersions. It runs the command as
// the admin, as a user with only the read rights its help names, and as
// a user without them.
func TestStatus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fed := clitest.StartFederation(ctx, t, localfed.WithMembers(0), localfed.WithControllers())
	host := hostClient(t, fed.Host.Config)

	since := metav1.NewTime(time.Now().Add(-10 * 24 * time.Hour).Truncate(time.Second))
	createCluster(ctx, t, host, "member-1", corev1beta1.SyncModePush, "eu-west-1", corev1beta1.FederatedClusterStatus{
		KubernetesVersion: "v1.33.1",
		Conditions:        conditions(corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonClusterReady),
	})
	createCluster(ctx, t, host, "member-2", corev1beta1.SyncModePull, "", corev1beta1.FederatedClusterStatus{
		Conditions: conditions(corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonClusterUnreachable),
	})
	createTypeConfig(ctx, t, host, "apps", "Deployment", "deployments", corev1beta1.Enabled, corev1beta1.FederatedTypeConfigStatus{
		PropagationController: corev1beta1.ControllerStatusRunning,
		Conditions:            conditions(corev1beta1.TypeConfigEstablished, metav1.ConditionTrue, corev1beta1.ReasonControllerRunning),
	})
	createTypeConfig(ctx, t, host, "", "ConfigMap", "configmaps", corev1beta1.Disabled, corev1beta1.FederatedTypeConfigStatus{
		PropagationController: corev1beta1.ControllerStatusNotRunning,
		Conditions:            conditions(corev1beta1.TypeConfigEstablished, metav1.ConditionFalse, corev1beta1.ReasonPropagationDisabled),
	})
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	createCPV(ctx, t, host, "web", typesv1beta1.ClusterPropagatedVersionStatus{
		ClusterCount: ptr(2), DriftedClusters: ptr(2),
		Conditions: conditions(typesv1beta1.CPVPropagated, metav1.ConditionFalse, "ClustersDrifted"),
		ClusterVersions: []typesv1beta1.ClusterVersion{
			{ClusterName: "member-1", State: typesv1beta1.ModifiedOutOfBand, DriftedSince: &since},
			{ClusterName: "member-2", State: typesv1beta1.Unreachable},
		},
	})
	createCPV(ctx, t, host, "api", typesv1beta1.ClusterPropagatedVersionStatus{
		ClusterCount: ptr(2), DriftedClusters: ptr(0),
		Conditions: conditions(typesv1beta1.CPVPropagated, metav1.ConditionTrue, typesv1beta1.ReasonAllInSync),
		ClusterVersions: []typesv1beta1.ClusterVersion{
			{ClusterName: "member-1", State: typesv1beta1.InSync},
			{ClusterName: "member-2", State: typesv1beta1.InSync},
		},
	})

	admin := []string{"--host-kubeconfig", fed.Host.Kubeconfig}
	stdout, stderr, code := clitest.Execute(status.NewCommand, admin...)
	if code != 0 || stdout != wantScreen || stderr != "" {
		t.Errorf("status: exit code %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", code, stdout, wantScreen, stderr)
	}

	stdout, stderr, code = clitest.Execute(status.NewCommand, append([]string{"-o", "json", "--top", "1"}, admin...)...)
	var report status.Report
	if err := json.Unmarshal([]byte(stdout), &report); code != 0 || err != nil {
		t.Fatalf("status -o json: exit code %d, %v; stdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	if len(report.Clusters) != 2 || report.Clusters[1].Reason != corev1beta1.ReasonClusterUnreachable || len(report.Types) != 2 ||
		report.Resources.Total != 2 || report.Resources.ClusterStates[typesv1beta1.InSync] != 2 ||
		len(report.WorstOffenders) != 1 || report.WorstOffenders[0].DriftedSince == nil || !report.WorstOffenders[0].DriftedSince.Equal(&since) {
		t.Errorf("status -o json: %+v", report)
	}

	// The rights the help names are enough; without them status fails.
	grantStatusRights(ctx, t, host, "operator")
	stdout, stderr, code = clitest.Execute(status.NewCommand, "--host-kubeconfig", userKubeconfig(t, fed.Host, "operator"))
	if code != 0 || stdout != wantScreen {
		t.Errorf("status as a user with the read rights: exit code %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = clitest.Execute(status.NewCommand, "--host-kubeconfig", userKubeconfig(t, fed.Host, "nobody"))
	if code != 1 || stdout != "" || !strings.Contains(stderr, "listing FederatedClusters") || !strings.Contains(stderr, "forbidden") ||
		!strings.Contains(stderr, "listing ClusterPropagatedVersions") {
		t.Errorf("status as a user without rights: exit code %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func conditions(t string, s metav1.ConditionStatus, reason string) []metav1.Condition {
	return []metav1.Condition{{Type: t, Status: s, Reason: reason, Message: "written by the test", LastTransitionTime: metav1.Now()}}
}

func ptr(n int32) *int32 { return &n }

func createCluster(ctx context.Context, t *testing.T, c client.Client, name string, mode corev1beta1.SyncMode, region string, st corev1beta1.FederatedClusterStatus) {
	t.Helper()
	fcl := &corev1beta1.FederatedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1beta1.FederatedClusterSpec{APIEndpoint: "https://" + name + ".example:6443", SyncMode: mode, Region: region},
	}
	if mode == corev1beta1.SyncModePush {
		fcl.Spec.SecretRef = &corev1beta1.LocalSecretReference{Name: "fedwarden-" + name + "-credentials"}
	}
	if err := c.Create(ctx, fcl); err != nil {
		t.Fatal(err)
	}
	fcl.Status = st
	if err := c.Status().Update(ctx, fcl); err != nil {
		t.Fatal(err)
	}
}

func createTypeConfig(ctx context.Context, t *testing.T, c client.Client, group, kind, plural string, propagation corev1beta1.Mode, st corev1beta1.FederatedTypeConfigStatus) {
	t.Helper()
	name := plural
	if group != "" {
		name += "." + group
	}
	ftc := &corev1beta1.FederatedTypeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1beta1.FederatedTypeConfigSpec{
			TargetType:  corev1beta1.APIResource{Group: group, Version: "v1", Kind: kind, PluralName: plural, Scope: corev1beta1.NamespaceScoped},
			Propagation: propagation,
			FederatedType: corev1beta1.APIResource{Group: typesv1beta1.GroupVersion.Group, Version: typesv1beta1.GroupVersion.Version,
				Kind: "Federated" + kind, PluralName: "federated" + plural, Scope: corev1beta1.NamespaceScoped},
		},
	}
	if err := c.Create(ctx, ftc); err != nil {
		t.Fatal(err)
	}
	ftc.Status = st
	if err := c.Status().Update(ctx, ftc); err != nil {
		t.Fatal(err)
	}
}

func createCPV(ctx context.Context, t *testing.T, c client.Client, name string, st typesv1beta1.ClusterPropagatedVersionStatus) {
	t.Helper()
	cpv := &typesv1beta1.ClusterPropagatedVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-" + name},
		Spec: typesv1beta1.ClusterPropagatedVersionSpec{
			Template: name, TemplateKind: "FederatedDeployment", TemplateAPIVersion: typesv1beta1.GroupVersion.String(),
			Clusters: []typesv1beta1.PlacedCluster{{Name: "member-1"}, {Name: "member-2"}},
		},
	}
	if err := c.Create(ctx, cpv); err != nil {
		t.Fatal(err)
	}
	cpv.Status = st
	if err := c.Status().Update(ctx, cpv); err != nil {
		t.Fatal(err)
	}
}

// grantStatusRights gives user, cluster-wide, the rights status's help
// names, and nothing else.
func grantStatusRights(ctx context.Context, t *testing.T, c client.Client, user string) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "fedwarden-status"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{corev1beta1.GroupVersion.Group}, Resources: []string{"federatedclusters", "federatedtypeconfigs"}, Verbs: []string{"list"}},
			{APIGroups: []string{typesv1beta1.GroupVersion.Group}, Resources: []string{"clusterpropagatedversions"}, Verbs: []string{"list"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "fedwarden-status-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}

// userKubeconfig writes a kubeconfig of cluster that authenticates as user.
func userKubeconfig(t *testing.T, cluster *localfed.Cluster, user string) string {
	t.Helper()
	cfg, err := cluster.ConfigForUser(user)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["host"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: user}
	kc.CurrentContext = "host"
	return clitest.WriteKubeconfig(t, kc)
}

func hostClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
