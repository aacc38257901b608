package e2e

import (
	"testing"

	"github.com/fedwarden/fedwarden/internal/localfed"
)

// ownMember starts a member API server of the test's own, called name, on
// the shared bed's etcd; it is not joined. A test that joins a cluster under
// a name of its own uses one: Fedwarden refuses a second FederatedCluster of
// a member already joined (DuplicateCluster), so the bed's members cannot be
// joined again under other names. The member is stopped when the test ends,
// after the test's own cleanups (such as its unjoin), which run first.
func ownMember(t *testing.T, name string) *localfed.Cluster {
	t.Helper()
	m, err := fed.AddMember(t.Context(), name)
	if err != nil {
		t.Fatalf("starting a member of the test's own: %v", err)
	}
	t.Cleanup(func() {
		if err := fed.RemoveMember(m); err != nil {
			t.Errorf("stopping member %s: %v", name, err)
		}
	})
	return m
}
