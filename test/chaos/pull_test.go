package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// hostOutage is how long the host stays down under the Pull agent.
const hostOutage = 60 * time.Second

// pullLease is the agent's Lease duration: the host marks a Pull cluster
// not Ready at the latest this long after its agent's last renewal.
const pullLease = 20 * time.Second

// startPullBed starts a host, a Push member push-1 and a Pull member
// pull-1 with its agent, and a controller-manager without leader election
// (the host goes down for longer than a leader may go without renewing),
// and enables ConfigMaps.
func startPullBed(t *testing.T) (*bed, *fedtest.ControllerManager) {
	t.Helper()
	b := newBed(t, fedtest.Options{
		Federation: []localfed.Option{localfed.WithMemberNames("push-1", "pull-1"), localfed.WithControllers(fedtest.JoinControllers...)},
		Pull:       []string{"pull-1"},
		AgentArgs:  []string{"--lease-duration", pullLease.String(), "--lease-renew-interval", "2s", "--resync-period", "5s"},
	}, "--leader-elect=false", "--resync-period", "5s")
	return b, b.fb.Agents["pull-1"]
}

// waitReady waits until the Pull cluster is Ready and, when since is set,
// until its agent has renewed its Lease after since: the Ready=True the
// host kept from before an outage proves nothing.
func (b *bed) waitReady(cluster string, since time.Time) {
	b.t.Helper()
	lease := types.NamespacedName{Namespace: corev1beta1.DefaultFederationNamespace, Name: registration.AgentLeaseName(cluster)}
	poll.Eventually(b.t, pullLease+loadSlack, cluster+" to be Ready", func(ctx context.Context) (bool, string) {
		if !since.IsZero() {
			l := &coordinationv1.Lease{}
			if err := b.host.Get(ctx, lease, l); err != nil {
				return false, err.Error()
			}
			if l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(since) {
				return false, fmt.Sprintf("the agent's Lease was renewed at %v", l.Spec.RenewTime)
			}
		}
		fc := &corev1beta1.FederatedCluster{}
		if err := b.host.Get(ctx, types.NamespacedName{Name: cluster}, fc); err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(fc.Status.Conditions, corev1beta1.ClusterReady), fmt.Sprintf("%+v", fc.Status.Conditions)
	})
}

// The host is down for 60 s under a Pull cluster's agent holding 50
// copies, and ten of them are edited by hand in the member meanwhile.
// Nothing is deleted (every copy keeps its UID, watched each second), the
// agent heals the edits, and once the host is back the drift is reported
// (Events, and each copy's drift ledger in its CPV) and the chaos ledger is
// clean.
func TestHostDownUnderAPullAgent(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	b, _ := startPullBed(t)
	ns := b.namespace("pull")
	l := b.ledger(ns)
	pull := b.Members[1]
	clusters := []string{b.Members[0].Name, pull.Name}
	const resources, edited = 50, 10
	var objs []*unstructured.Unstructured
	for i := range resources {
		objs = append(objs, federatedConfigMap(ns, fmt.Sprintf("cm-%02d", i), clusters, nil))
	}
	if err := createAll(t.Context(), b.host, objs, 4); err != nil {
		t.Fatal(err)
	}
	b.waitClean(l, 2*time.Minute+loadSlack)
	member := b.members[pull.Name]
	uids := func(ctx context.Context) (map[string]types.UID, error) {
		var list corev1.ConfigMapList
		if err := member.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{typesv1beta1.LabelManaged: "true"}); err != nil {
			return nil, err
		}
		out := map[string]types.UID{}
		for _, cm := range list.Items {
			out[cm.Name] = cm.UID
		}
		return out, nil
	}
	before, err := uids(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	if err := b.Host.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	for _, obj := range objs[:edited] {
		cm := &corev1.ConfigMap{}
		if err := member.Get(t.Context(), client.ObjectKeyFromObject(obj), cm); err != nil {
			t.Fatal(err)
		}
		cm.Data["greeting"] = "edited by hand"
		if err := member.Update(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}
	var healedAt time.Duration
	for time.Since(down) < hostOutage {
		now, err := uids(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(before, now) {
			t.Fatalf("copies in %s changed identity or went while the host was down: %d before, %d now", pull.Name, len(before), len(now))
		}
		if healedAt == 0 && b.greetings(t, pull.Name, ns, objs[:edited]) == 0 {
			healedAt = time.Since(down)
		}
		time.Sleep(time.Second) // the outage's length is the fault, not a guess
	}
	if err := b.Host.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	b.waitReady(pull.Name, back)
	report, took := b.waitClean(l, 2*time.Minute+loadSlack)
	if healedAt == 0 {
		t.Logf("the %d hand edits were healed only after the host was back", edited)
	} else {
		t.Logf("the %d hand edits were healed %s into the outage, with the host down", edited, healedAt.Round(time.Millisecond))
	}
	t.Logf("host down %s; converged %s after it was back: %s", back.Sub(down).Round(time.Millisecond), took.Round(time.Millisecond), report)
	after, err := uids(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(before, after) {
		t.Errorf("copies in %s changed identity or went across the outage: %d before, %d after", pull.Name, len(before), len(after))
	}
	// Reported: each edited copy has an Event of its drift being resolved
	// in the Pull cluster (the agent writes Events in the control-plane
	// namespace).
	poll.Eventually(t, time.Minute+loadSlack, "DriftResolved Events for the edited copies", func(ctx context.Context) (bool, string) {
		var events corev1.EventList
		if err := b.host.List(ctx, &events, client.InNamespace(corev1beta1.DefaultFederationNamespace)); err != nil {
			return false, err.Error()
		}
		var missing []string
		for _, obj := range objs[:edited] {
			if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
				return e.InvolvedObject.Name == obj.GetName() && e.Reason == typesv1beta1.EventDriftResolved && strings.Contains(e.Message, pull.Name)
			}) {
				missing = append(missing, obj.GetName())
			}
		}
		return len(missing) == 0, fmt.Sprintf("no DriftResolved Event for %v", missing)
	})
	// Kept: the drift ledger of each edited copy's CPV has the episode the
	// agent ended while the host was down, credited to Enforce.
	poll.Eventually(t, time.Minute+loadSlack, "the edited copies' episodes in the drift ledger", func(ctx context.Context) (bool, string) {
		var missing []string
		for _, obj := range objs[:edited] {
			cpv := &typesv1beta1.ClusterPropagatedVersion{}
			if err := b.host.Get(ctx, types.NamespacedName{Namespace: ns, Name: b.typ.CPVName(obj.GetName())}, cpv); err != nil {
				return false, err.Error()
			}
			if !slices.ContainsFunc(cpv.Status.ClusterVersions, func(cv typesv1beta1.ClusterVersion) bool {
				return string(cv.ClusterName) == pull.Name && slices.ContainsFunc(cv.DriftHistory, func(ep typesv1beta1.DriftEpisode) bool {
					return ep.State == typesv1beta1.ModifiedOutOfBand && ep.ResolvedBy == typesv1beta1.ResolvedByEnforce && !ep.Start.Time.Before(down.Truncate(time.Second))
				})
			}) {
				missing = append(missing, obj.GetName())
			}
		}
		return len(missing) == 0, fmt.Sprintf("no ModifiedOutOfBand episode resolved by Enforce in %s's entry for %v", pull.Name, missing)
	})
}

// greetings counts the copies of objs in cluster whose greeting is not the
// template's.
func (b *bed) greetings(t *testing.T, cluster, namespace string, objs []*unstructured.Unstructured) int {
	n := 0
	for _, obj := range objs {
		cm := &corev1.ConfigMap{}
		if err := b.members[cluster].Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: obj.GetName()}, cm); err != nil || cm.Data["greeting"] != "hello" {
			n++
		}
	}
	return n
}
