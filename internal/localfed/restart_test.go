package localfed

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fedwarden/fedwarden/test/poll"
)

// TestKillAndRestartKeepsObjects is the crash a user's member cluster can
// have: its API server dies, clients are refused, and when it is back, with
// the same endpoint and credentials, what it stored is still there. (The
// shared etcd keeps running; losing a member's storage is not simulated.)
func TestKillAndRestartKeepsObjects(t *testing.T) {
	t.Parallel()
	fed := startFederation(t, WithMembers(1))
	member := fed.Member("member-1")
	client := mustClient(t, member)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survivor"}, Data: map[string]string{"k": "v"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ConfigMap: %v", err)
	}
	endpoint := member.Endpoint

	if err := member.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if member.Running() {
		t.Errorf("Running after Kill")
	}
	if err := getConfigMap(client, cm.Name); err == nil {
		t.Fatalf("the killed member still answers")
	}

	if err := member.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if !member.Running() || member.Endpoint != endpoint {
		t.Errorf("after Restart: running %v at %s, want running at %s", member.Running(), member.Endpoint, endpoint)
	}
	poll.Eventually(t, 30*time.Second, "the ConfigMap after the restart", poll.NoError(func(context.Context) error { return getConfigMap(client, cm.Name) }))
	if !fed.Host.Running() {
		t.Errorf("the host stopped with the member")
	}
}

func TestStopAndRestart(t *testing.T) {
	t.Parallel()
	fed := startFederation(t)
	ctx := context.Background()
	if err := fed.Host.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if fed.Host.Running() {
		t.Errorf("Running after Stop")
	}
	// Restart of a running cluster stops it first.
	for range 2 {
		if err := fed.Host.Restart(ctx); err != nil {
			t.Fatalf("Restart: %v", err)
		}
	}
	if _, err := mustClient(t, fed.Host).Discovery().ServerVersion(); err != nil {
		t.Errorf("after Restart: %v", err)
	}
}

// getConfigMap gets the ConfigMap name of the default namespace, giving up
// after a few seconds.
func getConfigMap(client kubernetes.Interface, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := client.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if got.Data["k"] != "v" {
		return errors.New("ConfigMap changed")
	}
	return nil
}
