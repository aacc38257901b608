package helm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// The chart lets the controller-manager delete ControllerRevisions, to
// prune the revisions of resources rolled out in waves; its policy
// fedwarden-revisions-guard keeps that to Fedwarden's own: as the chart's
// ServiceAccount, with the chart's RBAC, a StatefulSet's revision cannot be
// deleted, a Fedwarden revision can.
func TestRevisionsGuard(t *testing.T) {
	needHelm(t)
	t.Parallel()
	admin, err := newClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	objs := mustRender(t)
	for _, obj := range objs {
		kind := obj.GetKind()
		if slices.Contains([]string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding"}, kind) ||
			(strings.HasPrefix(kind, "ValidatingAdmissionPolicy") && obj.GetName() == "fedwarden-revisions-guard") {
			if err := admin.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner("helm"), client.ForceOwnership); err != nil {
				t.Fatalf("applying %s: %v", describe(obj), err)
			}
		}
	}
	var sa corev1.ServiceAccount
	find(t, objs, "ServiceAccount", &sa)
	kubeconfig, err := serviceAccountKubeconfig(t.TempDir(), sa.Name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	asChart, err := newClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := "revisions-guard"
	if err := admin.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	revision := func(name string, labels map[string]string) *appsv1.ControllerRevision {
		cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Data: runtime.RawExtension{Raw: []byte(`{}`)}, Revision: 1}
		if err := admin.Create(t.Context(), cr); err != nil {
			t.Fatal(err)
		}
		return cr
	}
	// A new policy takes a moment to be enforced: until it is, a delete
	// goes through, so each attempt is on a revision of its own.
	var statefulSets *appsv1.ControllerRevision
	attempt := 0
	poll.Eventually(t, 30*time.Second, "the policy to refuse deleting a StatefulSet's revision", func(ctx context.Context) (bool, string) {
		attempt++
		statefulSets = revision(fmt.Sprintf("db-7d9f%d", attempt), map[string]string{"controller-revision-hash": "7d9f"})
		err := asChart.Delete(ctx, statefulSets.DeepCopy())
		return err != nil && strings.Contains(err.Error(), "deletes only the revisions of federated resources"), fmt.Sprint(err)
	})
	ours := revision("federateddeployment-web-0a1b2c3d4e", map[string]string{typesv1beta1.LabelRevisionOf: "web"})
	if err := admin.Get(t.Context(), client.ObjectKeyFromObject(statefulSets), &appsv1.ControllerRevision{}); err != nil {
		t.Errorf("the StatefulSet's revision is gone: %v", err)
	}
	if err := asChart.Delete(t.Context(), ours); err != nil {
		t.Errorf("the controller-manager may not delete a Fedwarden revision: %v", err)
	}
}
