package join_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/internal/cli/join"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/poll"
)

// TestPropagateRBACRights checks that, joined with --propagate-rbac, the host's
// identity in the member can create KubeFed's sample ClusterRole (*/*/*)
// and ClusterRoleBinding (to cluster-admin), and that a join without it
// takes that right away again.
func TestPropagateRBACRights(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tb, member := startTestBed(ctx, t, "--wait=false")

	tb.mustRun(t, join.NewCommand, "--propagate-rbac")
	identity := tb.identity(ctx, t, member)
	poll.Eventually(t, 30*time.Second, "the identity to create a ClusterRole", poll.NoError(func(context.Context) error { return identity.Create(ctx, sampleClusterRole("test-clusterrole")) }))
	poll.Eventually(t, 30*time.Second, "the identity to create a ClusterRoleBinding", poll.NoError(func(context.Context) error { return identity.Create(ctx, sampleClusterRoleBinding()) }))

	tb.mustRun(t, join.NewCommand)
	poll.Eventually(t, 30*time.Second, "the identity to be refused a ClusterRole granting everything", poll.NoError(func(context.Context) error {
		err := identity.Create(ctx, sampleClusterRole("test-clusterrole-2"))
		if apierrors.IsForbidden(err) {
			return nil
		}
		return fmt.Errorf("creating a ClusterRole granting */*/* without --propagate-rbac: %v, want Forbidden", err)
	}))
}

// identity returns a client acting as the host's identity in the member.
func (tb *testBed) identity(ctx context.Context, t *testing.T, member *localfed.Cluster) client.Client {
	t.Helper()
	secret := &corev1.Secret{}
	if err := tb.member.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fedwarden-member-1-token"}, secret); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(&rest.Config{
		Host:            member.Endpoint,
		BearerToken:     string(secret.Data[corev1.ServiceAccountTokenKey]),
		TLSClientConfig: rest.TLSClientConfig{CAData: member.CAData},
	}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sampleClusterRole is KubeFed's sample1 ClusterRole.
func sampleClusterRole(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}
}

// sampleClusterRoleBinding is KubeFed's sample1 ClusterRoleBinding.
func sampleClusterRoleBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-clusterrolebinding"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "test-user", APIGroup: rbacv1.GroupName}},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin", APIGroup: rbacv1.GroupName},
	}
}
