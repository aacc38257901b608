package propagation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// servesOnly is a Shard that serves the clusters it names, and counts the
// holds taken and released.
type servesOnly struct {
	names         map[string]bool
	held, release int
}

func (s *servesOnly) Serves(cluster string) bool { return s.names[cluster] }

func (s *servesOnly) Acquire(cluster string) (func(), bool) {
	if !s.names[cluster] {
		return nil, false
	}
	s.held++
	return func() { s.release++ }, true
}

func joinedCluster(name string, mode corev1beta1.SyncMode) *corev1beta1.FederatedCluster {
	return &corev1beta1.FederatedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1beta1.FederatedClusterSpec{SyncMode: mode}}
}

// A sync of the leader sees the Push clusters another replica serves as
// written elsewhere, as Pull clusters are; the clusters it serves, and the
// cached objects, are left as they are.
func TestShardView(t *testing.T) {
	set := clusterSet{
		"mine":   joinedCluster("mine", corev1beta1.SyncModePush),
		"theirs": joinedCluster("theirs", corev1beta1.SyncModePush),
		"pull":   joinedCluster("pull", corev1beta1.SyncModePull),
	}
	r := &Reconciler{opts: Options{Shard: &servesOnly{names: map[string]bool{"mine": true}}}}
	view := r.shardView(set)
	if isPull(view["mine"]) || !isPull(view["theirs"]) || !isPull(view["pull"]) {
		t.Errorf("written elsewhere: mine %v, theirs %v, pull %v; want false, true, true", isPull(view["mine"]), isPull(view["theirs"]), isPull(view["pull"]))
	}
	if set["theirs"].Annotations != nil || isPull(set["theirs"]) {
		t.Errorf("the listed cluster was changed: %+v", set["theirs"].ObjectMeta)
	}
	if got := writer("theirs", view["theirs"]); !strings.Contains(got, "controller-manager replica serving cluster theirs") {
		t.Errorf("writer of a cluster served elsewhere: %q", got)
	}
	if got := writer("pull", view["pull"]); got != "the agent of Pull cluster pull" {
		t.Errorf("writer of a Pull cluster: %q", got)
	}
	if unsharded := (&Reconciler{}).shardView(set); isPull(unsharded["theirs"]) {
		t.Error("without a shard, a Push cluster is written elsewhere")
	}
}

// The mark is the sync's own: an annotation of its name stored on a
// FederatedCluster does not make the host stop writing the cluster, with
// or without a shard, and the stored object is left as it is.
func TestAStoredMarkIsNotTrusted(t *testing.T) {
	forged := joinedCluster("forged", corev1beta1.SyncModePush)
	forged.Annotations = map[string]string{servedElsewhere: "true", "team": "pay"}
	set := clusterSet{"forged": forged}
	for name, r := range map[string]*Reconciler{
		"without a shard":          {},
		"with a shard that serves": {opts: Options{Shard: &servesOnly{names: map[string]bool{"forged": true}}}},
	} {
		view := r.shardView(set)
		if isPull(view["forged"]) {
			t.Errorf("%s: a Push cluster whose stored object carries %s is written elsewhere", name, servedElsewhere)
		}
		if view["forged"].Annotations["team"] != "pay" {
			t.Errorf("%s: the other annotations were lost: %v", name, view["forged"].Annotations)
		}
	}
	if forged.Annotations[servedElsewhere] != "true" {
		t.Error("the listed object was changed")
	}
}

// A write holds its cluster; a cluster another replica serves is not
// held, and one that left the federation, which nobody serves, is held
// without asking.
func TestHold(t *testing.T) {
	shard := &servesOnly{names: map[string]bool{"mine": true}}
	release, ok := hold(shard, "mine", joinedCluster("mine", corev1beta1.SyncModePush))
	if !ok || shard.held != 1 {
		t.Fatalf("mine: held %v (%d holds), want held once", ok, shard.held)
	}
	release()
	if shard.release != 1 {
		t.Errorf("released %d times, want 1", shard.release)
	}
	if _, ok := hold(shard, "theirs", joinedCluster("theirs", corev1beta1.SyncModePush)); ok {
		t.Error("a cluster another replica serves was held")
	}
	if _, ok := hold(shard, "left", nil); !ok {
		t.Error("a cluster that left the federation was not held")
	}
	if _, ok := hold(nil, "any", joinedCluster("any", corev1beta1.SyncModePush)); !ok {
		t.Error("without a shard, a cluster was not held")
	}
}
