package e2e

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/config/admission"
)

// allowCPVSpecWrites adds subject to the ClusterRoleBinding
// admission.CPVSpecWriter, as an admin does who runs the controller-manager
// as another identity than the one the binding names (localfed's admin
// user): the admission policy fedwarden-cpv-spec refuses a
// ClusterPropagatedVersion's spec from anybody else.
func allowCPVSpecWrites(t *testing.T, c client.Client, subject rbacv1.Subject) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b := &rbacv1.ClusterRoleBinding{}
		if err := c.Get(t.Context(), types.NamespacedName{Name: admission.CPVSpecWriter}, b); err != nil {
			return err
		}
		if slices.Contains(b.Subjects, subject) {
			return nil
		}
		b.Subjects = append(b.Subjects, subject)
		return c.Update(t.Context(), b)
	})
	if err != nil {
		t.Fatalf("adding %s %s to ClusterRoleBinding %s: %v", subject.Kind, subject.Name, admission.CPVSpecWriter, err)
	}
}
