package propagation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

func TestStoppedStatus(t *testing.T) {
	t.Parallel()
	now := metav1.Now()
	old := typesv1beta1.FederatedStatus{
		ObservedGeneration: 2,
		Clusters:           []typesv1beta1.PropagationStatus{{Name: "west", Reason: typesv1beta1.ClusterPropagated}},
		Conditions: []metav1.Condition{
			{Type: typesv1beta1.FederatedScheduled, Status: metav1.ConditionTrue, Reason: typesv1beta1.ReasonScheduled, Message: "west"},
			{Type: typesv1beta1.FederatedPropagated, Status: metav1.ConditionTrue, Reason: typesv1beta1.ReasonPropagated, Message: "1 of 1 clusters have the current version"},
		},
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "retried", err: fmt.Errorf("reading ClusterPropagatedVersion shop/deployment-web: %w", errors.New("timeout")),
			want: "the last sync stopped before it finished, and is retried: reading ClusterPropagatedVersion shop/deployment-web: timeout"},
		{name: "terminal", err: reconcile.TerminalError(errors.New("reading spec: bad")),
			want: "not synced: reading spec: bad; the resource is synced again when it changes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := stoppedStatus(old, tt.err, 3, now)
			c := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedPropagated)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != typesv1beta1.ReasonPropagationFailed || c.Message != tt.want || c.ObservedGeneration != 3 {
				t.Errorf("Propagated = %+v, want False %s %q", c, typesv1beta1.ReasonPropagationFailed, tt.want)
			}
			if s := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedScheduled); s == nil || *s != old.Conditions[0] {
				t.Errorf("Scheduled = %+v, want it as it was", s)
			}
			if st.ObservedGeneration != 2 || len(st.Clusters) != 1 || st.Clusters[0] != old.Clusters[0] {
				t.Errorf("status %+v: the clusters and observedGeneration changed", st)
			}
		})
	}
	if meta.FindStatusCondition(old.Conditions, typesv1beta1.FederatedPropagated).Status != metav1.ConditionTrue {
		t.Error("stoppedStatus changed the old status")
	}
}

func TestWorthReporting(t *testing.T) {
	t.Parallel()
	gr := schema.GroupResource{Group: "types.kubefed.io", Resource: "federateddeployments"}
	tests := []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("listing FederatedClusters: %w", errors.New("boom")), true},
		{reconcile.TerminalError(errors.New("reading spec: bad")), true},
		{fmt.Errorf("adding the finalizer: %w", apierrors.NewConflict(gr, "web", errors.New("changed"))), false},
		{fmt.Errorf("creating ClusterPropagatedVersion: %w", apierrors.NewAlreadyExists(gr, "web")), false},
		{apierrors.NewNotFound(gr, "web"), false},
		{fmt.Errorf("writing: %w", context.Canceled), false},
	}
	for _, tt := range tests {
		if got := worthReporting(tt.err); got != tt.want {
			t.Errorf("worthReporting(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestDeletionStatus(t *testing.T) {
	t.Parallel()
	now := metav1.Now()
	gr := schema.GroupResource{Group: "types.kubefed.io", Resource: "federateddeployments"}
	old := typesv1beta1.FederatedStatus{
		ObservedGeneration: 2,
		Conditions: []metav1.Condition{
			{Type: typesv1beta1.FederatedPropagated, Status: metav1.ConditionTrue, Reason: typesv1beta1.ReasonPropagated, Message: "1 of 1 clusters have the current version"},
		},
	}
	tests := []struct {
		name       string
		pending    []string
		err        error
		wantReason string // "" when nothing is written
		wantMsg    string
	}{
		{name: "went through"},
		{name: "waits", pending: []string{"east", "west"}, wantReason: typesv1beta1.ReasonDeletionPending,
			wantMsg: "deleting: waiting for the copies in clusters east, west to be deleted"},
		{name: "cluster list failed", err: fmt.Errorf("listing FederatedClusters: %w", errors.New("forbidden")), wantReason: typesv1beta1.ReasonDeletionFailed,
			wantMsg: "deleting: the last attempt stopped before it finished, and is retried: listing FederatedClusters: forbidden"},
		{name: "finalizer refused", pending: nil, err: fmt.Errorf("removing the finalizer: %w", apierrors.NewForbidden(gr, "web", errors.New("denied"))),
			wantReason: typesv1beta1.ReasonDeletionFailed, wantMsg: "removing the finalizer: federateddeployments.types.kubefed.io \"web\" is forbidden: denied"},
		{name: "race", err: fmt.Errorf("removing the finalizer: %w", apierrors.NewConflict(gr, "web", errors.New("changed")))},
		{name: "gone", err: apierrors.NewNotFound(gr, "web")},
		{name: "stopping", err: fmt.Errorf("reading the ClusterPropagatedVersion: %w", context.Canceled)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, ok := deletionStatus(old, tt.pending, tt.err, 3, now)
			if ok != (tt.wantReason != "") {
				t.Fatalf("deletionStatus writes = %v, want %v", ok, tt.wantReason != "")
			}
			if !ok {
				return
			}
			c := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedPropagated)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tt.wantReason || !strings.Contains(c.Message, tt.wantMsg) || c.ObservedGeneration != 3 {
				t.Errorf("Propagated = %+v, want False %s holding %q", c, tt.wantReason, tt.wantMsg)
			}
			if st.ObservedGeneration != 2 {
				t.Errorf("observedGeneration changed: %d", st.ObservedGeneration)
			}
		})
	}
	if meta.FindStatusCondition(old.Conditions, typesv1beta1.FederatedPropagated).Status != metav1.ConditionTrue {
		t.Error("deletionStatus changed the old status")
	}
}
