package e2e

import (
	"context"
	"testing"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// ownMember starts a member API server of the test's own, called name, on
// the shared bed's etcd; it is not joined. A test that joins a cluster under
// a name of its own uses one: Fedwarden refuses a second FederatedCluster of
// a member already joined (DuplicateCluster), so the bed's members cannot be
// joined again under other names. The member is stopped when the test ends,
// after the test's own cleanups (such as its unjoin), which run first.
func ownMember(t *testing.T, name string) *localfed.Cluster {
	t.Helper()
	done, err := fedtest.StartSlot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m, err := fed.AddMember(t.Context(), name)
	done()
	if err != nil {
		t.Fatalf("starting a member of the test's own: %v", err)
	}
	t.Cleanup(func() {
		if err := fed.RemoveMember(m); err != nil {
			t.Errorf("stopping member %s: %v", name, err)
		}
	})
	// Its Secrets (the tokens join makes there) are known to the leak scan.
	stop, err := fedtest.WatchCluster(m)
	if err != nil {
		t.Fatalf("watching member %s for the leak scan: %v", name, err)
	}
	t.Cleanup(stop)
	return m
}

// joinOwnMember starts a member of the test's own, joins it as name with
// the extra join flags, and unjoins it when the test ends (before the
// member stops).
func joinOwnMember(t *testing.T, name string, extra ...string) *localfed.Cluster {
	t.Helper()
	m := ownMember(t, name)
	rejoin(t, m, name, extra...)
	t.Cleanup(func() {
		if r := runFedwardenContext(context.Background(), t, unjoinArgs(fed, m, name)...); r.code != 0 {
			t.Errorf("unjoining %s:\n%s", name, r)
		}
	})
	return m
}

// rejoin runs fedwarden join for the member m of the test's own.
func rejoin(t *testing.T, m *localfed.Cluster, name string, extra ...string) {
	t.Helper()
	if r := runFedwarden(t, joinArgs(fed, m, name, extra...)...); r.code != 0 {
		t.Fatalf("joining %s:\n%s", name, r)
	}
}
