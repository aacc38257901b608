package localfed

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fedwarden/fedwarden/test/poll"
)

// TestControllerManagerMakesAClusterOfIt checks what later features rely
// on: owner references are garbage collected, long-lived ServiceAccount token
// Secrets get their token and namespaces finish deleting.
func TestControllerManagerMakesAClusterOfIt(t *testing.T) {
	t.Parallel()
	fed := startFederation(t, WithMembers(1))
	client, err := fed.Members[0].Client()
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kcm"}}
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("garbage collection", func(t *testing.T) { checkGarbageCollection(t, client, "kcm") })
	t.Run("token secret", func(t *testing.T) { checkTokenSecret(t, client, "kcm") })
	t.Run("namespace deletion", func(t *testing.T) { checkNamespaceDeletion(t, client, "kcm") })
}

func checkGarbageCollection(t *testing.T, client kubernetes.Interface, ns string) {
	ctx := t.Context()
	owner, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID},
	}}}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, dependent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, time.Minute, "the dependent ConfigMap to be garbage-collected", poll.NoError(func(context.Context) error {
		_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("dependent ConfigMap not garbage collected (get: %v)", err)
	}))
}

func checkTokenSecret(t *testing.T, client kubernetes.Interface, ns string) {
	ctx := t.Context()
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "agent"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "agent"}},
		Type:       corev1.SecretTypeServiceAccountToken,
	}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, time.Minute, "the token Secret to be filled in", poll.NoError(func(context.Context) error {
		s, err := client.CoreV1().Secrets(ns).Get(ctx, "agent-token", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(s.Data[corev1.ServiceAccountTokenKey]) == 0 || len(s.Data[corev1.ServiceAccountRootCAKey]) == 0 {
			return fmt.Errorf("token Secret has keys %v, want token and ca.crt filled in", keys(s.Data))
		}
		return nil
	}))
}

func checkNamespaceDeletion(t *testing.T, client kubernetes.Interface, ns string) {
	ctx := t.Context()
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, time.Minute, "the namespace to be deleted", poll.NoError(func(context.Context) error {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("namespace still there (get: %v)", err)
	}))
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
