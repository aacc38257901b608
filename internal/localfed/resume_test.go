package localfed

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedwarden/fedwarden/test/poll"
)

// A federation started again from its data directory has what it stored
// and the same serving CA; a directory of other clusters is refused.
func TestResumeFromDataDir(t *testing.T) {
	skipShort(t)
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	first, err := Start(ctx, WithMembers(1), WithDataDir(dir), WithControllers())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopAtEnd(t, first) // if the test fails before it stops it
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survivor"}, Data: map[string]string{"k": "v"}}
	if _, err := mustClient(t, first.Member("member-1")).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ConfigMap: %v", err)
	}
	ca := string(first.Member("member-1").CAData)
	if err := first.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}

	other, err := Start(ctx, WithMembers(2), WithDataDir(dir), WithControllers())
	if other != nil {
		stopAtEnd(t, other)
	}
	if err == nil || !strings.Contains(err.Error(), "holds a federation of clusters") {
		t.Fatalf("Start with other clusters over the same data: %v, want a refusal", err)
	}
	again, err := Start(ctx, WithMembers(1), WithDataDir(dir), WithControllers())
	if err != nil {
		t.Fatalf("Start again: %v", err)
	}
	stopAtEnd(t, again)
	member := again.Member("member-1")
	if string(member.CAData) != ca {
		t.Errorf("the member's serving CA changed across the restart")
	}
	poll.Eventually(t, 30*time.Second, "the ConfigMap after the resume", poll.NoError(func(context.Context) error { return getConfigMap(mustClient(t, member), cm.Name) }))
}

// stopAtEnd stops fed when the test ends, whether it passed or not; a
// federation stopped before is not stopped again.
func stopAtEnd(t *testing.T, fed *Federation) {
	t.Helper()
	t.Cleanup(func() {
		if err := fed.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
}
