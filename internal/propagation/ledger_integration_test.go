package propagation_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fedwarden/fedwarden/test/poll"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// TestAHealWhoseStatusWriteFailsStaysInTheLedger heals a hand edit while
// the host refuses every write of the CPV's status (a
// ValidatingAdmissionPolicy bound to the test's namespace): the sync that
// healed the copy is the only one that sees its episode end, the next finds
// the copy InSync. Once the host takes status writes again, member-1's
// ledger has the episode, once, resolved by Enforce, with the path edited
// and who edited it.
func TestAHealWhoseStatusWriteFailsStaysInTheLedger(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ns := tb.Namespace(t, "ledger")
	tb.create(t, federatedDeployment(t, ns, "web", "nginx:1.27", []string{member1, member2}, nil))
	tb.waitForCPV(t, ns, "web", "1", "1", member1, member2)

	const message = "the test refuses status writes of ClusterPropagatedVersions"
	unbind := tb.refuseCPVStatusWrites(t, ns, "web", message)
	tb.editImage(t, member1, ns, "web", "nginx:hand-edited")
	tb.waitForImage(t, member1, ns, "web", "nginx:1.27", "the hand edit to be written back")
	if cv := entry(mustCPV(t, tb, ns, "web"), member1); len(cv.DriftHistory) != 0 {
		t.Fatalf("the CPV status was written while refused: %s's history %+v", member1, cv.DriftHistory)
	}
	unbind()

	var got []typesv1beta1.DriftEpisode
	poll.Eventually(t, propagated, "member-1's ledger to record the healed episode", func(ctx context.Context) (bool, string) {
		cpv, err := tb.cpv(ctx, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		got = entry(cpv, member1).DriftHistory
		return len(got) > 0, fmt.Sprintf("%s's history %+v", member1, got)
	})
	if len(got) != 1 {
		t.Fatalf("%s's history has %d episodes, want the one healed: %+v", member1, len(got), got)
	}
	ep := got[0]
	if ep.State != typesv1beta1.ModifiedOutOfBand || ep.ResolvedBy != typesv1beta1.ResolvedByEnforce ||
		!slices.Contains(ep.ChangedPaths, imagePath) || !slices.Contains(ep.ChangedBy, "kubectl-edit") {
		t.Errorf("the episode %+v; want ModifiedOutOfBand of %s by kubectl-edit, resolved by Enforce", ep, imagePath)
	}
	if want := (typesv1beta1.ManagerOperation{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, Paths: []string{imagePath}}); !slices.ContainsFunc(ep.ChangedByOperations,
		func(o typesv1beta1.ManagerOperation) bool { return reflect.DeepEqual(o, want) }) {
		t.Errorf("the episode's changedByOperations %+v; want %+v, from the copy's managedFields", ep.ChangedByOperations, want)
	}
	if cv := entry(mustCPV(t, tb, ns, "web"), member2); len(cv.DriftHistory) != 0 {
		t.Errorf("%s, not edited, has episodes: %+v", member2, cv.DriftHistory)
	}
}

// refuseCPVStatusWrites makes the host refuse, with message, every write
// of the status of the CPVs of namespace, and waits until it does (a dry
// run of a write of resource's CPV is refused). It
// returns what lifts the refusal (also done when the test ends).
func (tb bed) refuseCPVStatusWrites(t *testing.T, namespace, resource, message string) func() {
	t.Helper()
	name := "test-refuse-cpv-status-" + namespace
	policy, binding := fedtest.RefusingPolicy(name, namespace, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{typesv1beta1.GroupVersion.Group}, APIVersions: []string{"*"}, Resources: []string{"clusterpropagatedversions/status"}},
	}, "false", message)
	unbind := func() {
		_ = tb.Host.Delete(context.Background(), binding)
		_ = tb.Host.Delete(context.Background(), policy)
	}
	t.Cleanup(unbind)
	tb.create(t, policy)
	tb.create(t, binding)
	// The API server enforces a policy a moment after it is stored: a dry
	// run of a status write tells when.
	poll.Eventually(t, propagated, "the host to refuse status writes of CPVs", func(ctx context.Context) (bool, string) {
		cpv, err := tb.cpv(ctx, namespace, resource)
		if err != nil {
			return false, err.Error()
		}
		cpv.Status.Resync = "dry-run"
		err = tb.Host.Status().Update(ctx, cpv, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), message), fmt.Sprint(err)
	})
	return unbind
}

func mustCPV(t *testing.T, tb bed, namespace, name string) *typesv1beta1.ClusterPropagatedVersion {
	t.Helper()
	cpv, err := tb.cpv(t.Context(), namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	return cpv
}
