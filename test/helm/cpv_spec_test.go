package helm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/config/admission"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/test/poll"
)

// kyvernoBackground is the username of Kyverno's background controller, its
// Helm chart's ServiceAccount in namespace kyverno.
const kyvernoBackground = "system:serviceaccount:kyverno:kyverno-background-controller"

// Pull agents obey a ClusterPropagatedVersion's spec, so only the
// controller-manager may write it. With the chart's RBAC, Kyverno's
// (deploy/kyverno/rbac.yaml) and the shipped admission policies on the
// host: Kyverno's background controller cannot add a cluster to a CPV's
// spec.clusters, by RBAC, nor by admission when someone grants it write on
// every types.kubefed.io resource, as rbac.yaml did before; another identity
// allowed by RBAC to update CPVs is refused too, and may still label one;
// the chart's ServiceAccount (the controller-manager) creates and changes
// the spec; an agent writes its status; and a CPV can be deleted.
func TestOnlyTheControllerManagerWritesACPVSpec(t *testing.T) {
	needHelm(t)
	t.Parallel()
	admin, err := newClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	applyChartRBAC(t, admin)
	applyKyvernoRBAC(t, admin)
	const ns = "cpv-spec"
	if err := admin.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var sa corev1.ServiceAccount
	find(t, mustRender(t), "ServiceAccount", &sa)
	controllerManager := as(t, "system:serviceaccount:"+namespace+":"+sa.Name, "system:serviceaccounts", "system:serviceaccounts:"+namespace)
	kyverno := as(t, kyvernoBackground, "system:serviceaccounts", "system:serviceaccounts:kyverno")

	// The controller-manager creates the CPV; it may take a moment until
	// the API server has the chart's binding as the policy's parameter.
	cpv := &typesv1beta1.ClusterPropagatedVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmap-settings"},
		Spec: typesv1beta1.ClusterPropagatedVersionSpec{
			Template: "FederatedConfigMap/settings", TemplateKind: "FederatedConfigMap", TemplateAPIVersion: "types.kubefed.io/v1beta1",
			Clusters: []typesv1beta1.PlacedCluster{{Name: "member-1"}},
		},
	}
	poll.Eventually(t, 30*time.Second, "the controller-manager to create a CPV", func(ctx context.Context) (bool, string) {
		err := controllerManager.Create(ctx, cpv.DeepCopy())
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})

	t.Run("Kyverno with rbac.yaml is refused by RBAC", func(t *testing.T) {
		err := addCluster(t.Context(), kyverno, ns, cpv.Name, "member-2")
		if !apierrors.IsForbidden(err) {
			t.Errorf("Kyverno's background controller adding member-2 to spec.clusters: %v, want forbidden", err)
		}
	})
	t.Run("Kyverno with write on every types.kubefed.io resource is refused by the policy", func(t *testing.T) {
		grant(t, admin, "cpv-spec-kyverno-everything", rbacv1.PolicyRule{APIGroups: []string{"types.kubefed.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "kyverno", Name: "kyverno-background-controller"})
		checkRefusedByPolicy(t, kyverno, ns, cpv.Name, kyvernoBackground)
	})
	const editor = "cpv-editor"
	editorClient := as(t, editor)
	t.Run("an identity with update on CPVs is refused by the policy", func(t *testing.T) {
		grant(t, admin, "cpv-spec-editor", rbacv1.PolicyRule{APIGroups: []string{"types.kubefed.io"}, Resources: []string{"clusterpropagatedversions"}, Verbs: []string{"get", "list", "create", "update", "patch"}},
			rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: editor})
		checkRefusedByPolicy(t, editorClient, ns, cpv.Name, editor)
		// A label is not the spec: RBAC alone decides.
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"payments"}}}`))
		if err := editorClient.Patch(t.Context(), cpv.DeepCopy(), patch); err != nil {
			t.Errorf("labelling the CPV, as an identity with patch on CPVs: %v", err)
		}
	})
	t.Run("the controller-manager changes the spec", func(t *testing.T) {
		if err := addCluster(t.Context(), controllerManager, ns, cpv.Name, "member-3"); err != nil {
			t.Errorf("the controller-manager adding member-3 to spec.clusters: %v", err)
		}
	})
	t.Run("an agent writes the status", func(t *testing.T) {
		const agent = "cpv-spec-agent"
		role := registration.AgentClusterRole()
		if err := admin.Create(t.Context(), role); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		bind(t, admin, "cpv-spec-agent", role.Name, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: agent})
		patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"clusterVersions":[{"clusterName":"member-1","version":"7","state":"InSync"}]}}`))
		poll.Eventually(t, 30*time.Second, "the agent's status write", func(ctx context.Context) (bool, string) {
			err := as(t, agent).Status().Patch(ctx, cpv.DeepCopy(), patch)
			return err == nil, fmt.Sprint(err)
		})
	})
	got := &typesv1beta1.ClusterPropagatedVersion{}
	if err := admin.Get(t.Context(), client.ObjectKeyFromObject(cpv), got); err != nil {
		t.Fatal(err)
	}
	var clusters []string
	for _, c := range got.Spec.Clusters {
		clusters = append(clusters, string(c.Name))
	}
	if want := []string{"member-1", "member-3"}; !slices.Equal(clusters, want) {
		t.Errorf("the CPV's spec.clusters are %v, want %v: only the controller-manager's change", clusters, want)
	}
	t.Run("a CPV can be deleted", func(t *testing.T) {
		if err := admin.Delete(t.Context(), got); err != nil {
			t.Errorf("deleting the CPV, as kubectl delete cpv does: %v", err)
		}
	})
}

// checkRefusedByPolicy checks that c may neither add a cluster to the CPV's
// spec.clusters nor create a CPV, each refused by fedwarden-cpv-spec with a
// message naming user. RBAC changes take a moment to apply, hence the wait.
func checkRefusedByPolicy(t *testing.T, c client.Client, ns, name, user string) {
	t.Helper()
	refused := func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+admission.CPVSpecPolicy+"'") && strings.Contains(err.Error(), user+" may not")
	}
	poll.Eventually(t, 30*time.Second, user+" adding member-2 to spec.clusters, refused by "+admission.CPVSpecPolicy, func(ctx context.Context) (bool, string) {
		err := addCluster(ctx, c, ns, name, "member-2")
		return refused(err), fmt.Sprint(err)
	})
	other := &typesv1beta1.ClusterPropagatedVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "configmap-planted"},
		Spec:       typesv1beta1.ClusterPropagatedVersionSpec{Template: "FederatedConfigMap/planted", Clusters: []typesv1beta1.PlacedCluster{{Name: "member-2"}}},
	}
	if err := c.Create(t.Context(), other); !refused(err) {
		t.Errorf("%s creating a CPV: %v, want a refusal by %s", user, err, admission.CPVSpecPolicy)
	}
}

// addCluster adds cluster to the spec.clusters of the CPV ns/name, with a
// merge patch (the controller-manager may patch, not update).
func addCluster(ctx context.Context, c client.Client, ns, name, cluster string) error {
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cpv); err != nil {
		return err
	}
	before := cpv.DeepCopy()
	cpv.Spec.Clusters = append(cpv.Spec.Clusters, typesv1beta1.PlacedCluster{Name: typesv1beta1.ClusterName(cluster)})
	return c.Patch(ctx, cpv, client.MergeFrom(before))
}

// as returns a client of the host that impersonates user in groups.
func as(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(fed.Host.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := newClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// applyChartRBAC applies the chart's ServiceAccount, ClusterRoles and
// ClusterRoleBindings to the host, as helm install would.
func applyChartRBAC(t *testing.T, admin client.Client) {
	t.Helper()
	for _, obj := range mustRender(t) {
		if slices.Contains([]string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding"}, obj.GetKind()) {
			if err := admin.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner("helm"), client.ForceOwnership); err != nil {
				t.Fatalf("applying %s: %v", describe(obj), err)
			}
		}
	}
}

// applyKyvernoRBAC applies deploy/kyverno/rbac.yaml and binds its
// background-controller ClusterRole to Kyverno's background controller, as
// Kyverno's chart does by aggregating it into the ClusterRole of that
// ServiceAccount.
func applyKyvernoRBAC(t *testing.T, admin client.Client) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "deploy", "kyverno", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if err := admin.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("cpv-spec-test"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %s: %v", describe(obj), err)
		}
	}
	bind(t, admin, "cpv-spec-kyverno-background", "fedwarden:kyverno:background-controller",
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "kyverno", Name: "kyverno-background-controller"})
}

// grant creates the ClusterRole name with rule, bound to subject.
func grant(t *testing.T, admin client.Client, name string, rule rbacv1.PolicyRule, subject rbacv1.Subject) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}
	if err := admin.Create(t.Context(), role); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	bind(t, admin, name, name, subject)
}

// bind creates the ClusterRoleBinding name of role to subject.
func bind(t *testing.T, admin client.Client, name, role string, subject rbacv1.Subject) {
	t.Helper()
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
	if err := admin.Create(t.Context(), b); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestChartsCPVSpecWriterIsTheShippedOne checks that the chart grants its
// ServiceAccount the ClusterRole fedwarden-cpv-spec-writer that localfed
// installs from config/admission, by the ClusterRoleBinding the policy
// fedwarden-cpv-spec takes as its parameter; and that the controller-
// manager's own ClusterRole does not write CPVs besides.
func TestChartsCPVSpecWriterIsTheShippedOne(t *testing.T) {
	needHelm(t)
	t.Parallel()
	objs := mustRender(t)
	var role rbacv1.ClusterRole
	findNamed(t, objs, "ClusterRole", admission.CPVSpecWriter, &role)
	if want := admission.CPVSpecWriterRole().Rules; !equality.Semantic.DeepEqual(role.Rules, want) {
		t.Errorf("the chart's ClusterRole %s grants %+v, config/admission's %+v", admission.CPVSpecWriter, role.Rules, want)
	}
	var binding rbacv1.ClusterRoleBinding
	findNamed(t, objs, "ClusterRoleBinding", admission.CPVSpecWriter, &binding)
	var sa corev1.ServiceAccount
	find(t, objs, "ServiceAccount", &sa)
	want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: namespace}}
	if binding.RoleRef.Name != admission.CPVSpecWriter || !slices.Equal(binding.Subjects, want) {
		t.Errorf("the chart's ClusterRoleBinding %s gives %s to %+v, want %s to %+v", binding.Name, binding.RoleRef.Name, binding.Subjects, admission.CPVSpecWriter, want)
	}
	var cr rbacv1.ClusterRole
	findNamed(t, objs, "ClusterRole", "fedwarden-controller-manager", &cr)
	for _, r := range cr.Rules {
		if slices.Contains(r.Resources, "clusterpropagatedversions") && !slices.Equal(r.Verbs, []string{"get", "list", "watch"}) {
			t.Errorf("the controller-manager's ClusterRole grants %v on CPVs: the writes belong to %s", r.Verbs, admission.CPVSpecWriter)
		}
	}
	for _, o := range mustRender(t, "--set", "rbac.create=false") {
		if o.GetName() == admission.CPVSpecWriter {
			t.Errorf("rbac.create=false renders %s", describe(o))
		}
	}
}
