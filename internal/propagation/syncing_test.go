package propagation

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestSyncingHoldsEventsUntilTheSyncEnds(t *testing.T) {
	t.Parallel()
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	api := types.NamespacedName{Namespace: "shop", Name: "api"}
	var s syncing
	yes := func() bool { return true }
	no := func() bool { return false }
	if s.hold(web, yes) {
		t.Fatal("held an event of a resource that is not syncing")
	}
	s.begin(web)
	if s.hold(api, yes) {
		t.Error("held an event of another resource")
	}
	if !s.hold(web, no) {
		t.Fatal("did not hold an event of the syncing resource")
	}
	if s.end(web) {
		t.Error("end found news where every held event was an echo")
	}
	if s.hold(web, yes) {
		t.Error("held an event after the sync ended")
	}

	s.begin(web)
	ran := 0
	s.hold(web, func() bool { ran++; return true })
	s.hold(web, func() bool { ran++; return false })
	if !s.end(web) {
		t.Error("end missed the news of a held event")
	}
	if ran != 2 {
		t.Errorf("end ran %d of 2 checks, want every one", ran)
	}
}
