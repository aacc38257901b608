package propagation

import (
	"errors"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

func TestDependencyStatus(t *testing.T) {
	now := metav1.Now()
	propagated := typesv1beta1.DependencyStatus{Kind: "ConfigMap", Name: "c", State: typesv1beta1.DependencyPropagated}
	optional := typesv1beta1.DependencyStatus{Kind: "Secret", Name: "maybe", State: typesv1beta1.DependencyMissing, Optional: true, Message: "Secret maybe is missing"}
	missing := typesv1beta1.DependencyStatus{Kind: "ServiceAccount", Name: "sa", State: typesv1beta1.DependencyMissing, Message: "ServiceAccount sa is missing"}
	cases := []struct {
		name          string
		on, available bool
		deps          []typesv1beta1.DependencyStatus
		err           error
		want          metav1.ConditionStatus // "" for no condition
		reason, text  string
	}{
		{name: "every dependency goes", on: true, available: true, deps: []typesv1beta1.DependencyStatus{propagated}, want: metav1.ConditionTrue, reason: typesv1beta1.ReasonDependenciesPropagated},
		{name: "an optional one missing is no failure", on: true, available: true, deps: []typesv1beta1.DependencyStatus{propagated, optional}, want: metav1.ConditionTrue, reason: typesv1beta1.ReasonDependenciesPropagated},
		{name: "a required one missing", on: true, available: true, deps: []typesv1beta1.DependencyStatus{propagated, optional, missing}, want: metav1.ConditionFalse, reason: typesv1beta1.ReasonDependencyMissing, text: "ServiceAccount sa is missing"},
		{name: "a controller without the stage says so", on: true, want: metav1.ConditionFalse, reason: typesv1beta1.ReasonDependenciesNotEnabled, text: "--propagate-dependencies"},
		{name: "off: nothing", available: true, deps: []typesv1beta1.DependencyStatus{propagated}},
		{name: "off, but not yet released: kept and said", available: true, deps: []typesv1beta1.DependencyStatus{propagated}, err: errors.New("the API server is away"),
			want: metav1.ConditionFalse, reason: typesv1beta1.ReasonDependencyFailed, text: "the API server is away"},
		{name: "off, a race: kept, the condition as it was", available: true, deps: []typesv1beta1.DependencyStatus{propagated},
			err: apierrors.NewConflict(schema.GroupResource{}, "c", errors.New("changed")), want: metav1.ConditionTrue, reason: typesv1beta1.ReasonDependenciesPropagated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := typesv1beta1.FederatedStatus{}
			// A condition from an earlier sync, which an off workload drops.
			setCondition(&st.Conditions, typesv1beta1.FederatedDependencies, true, typesv1beta1.ReasonDependenciesPropagated, "", 1, now)
			dependencyStatus(&st, tc.on, tc.available, tc.deps, tc.err, 2, now)
			c := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedDependencies)
			switch {
			case tc.want == "" && (c != nil || st.Dependencies != nil):
				t.Fatalf("condition %+v, dependencies %v: want neither", c, st.Dependencies)
			case tc.want == "":
			case c == nil || c.Status != tc.want || c.Reason != tc.reason || !strings.Contains(c.Message, tc.text):
				t.Fatalf("condition %+v: want %s, %s, saying %q", c, tc.want, tc.reason, tc.text)
			case tc.available && len(st.Dependencies) != len(tc.deps):
				t.Fatalf("dependencies %v: want %v", st.Dependencies, tc.deps)
			}
		})
	}
}

// TestRecordedTargets: a Pull cluster whose first copy waits for the
// dependencies is left out of what the CPV's spec records, so that its
// agent does not see the workload placed yet; a waiting Push cluster is
// recorded, as its copy is simply not written.
func TestRecordedTargets(t *testing.T) {
	pull := &corev1beta1.FederatedCluster{Spec: corev1beta1.FederatedClusterSpec{SyncMode: corev1beta1.SyncModePull}}
	push := &corev1beta1.FederatedCluster{Spec: corev1beta1.FederatedClusterSpec{SyncMode: corev1beta1.SyncModePush}}
	s := &syncState{
		set: clusterSet{"edge": pull, "eu": push, "us": push},
		t:   targets{names: []string{"edge", "eu", "us"}, replicas: map[string]int32{"edge": 1, "eu": 2, "us": 3}},
	}
	if got := s.recordedTargets(); !slices.Equal(got.names, s.t.names) {
		t.Errorf("nothing waits: recorded %v, want %v", got.names, s.t.names)
	}
	s.depsWaiting = map[string]string{"edge": "waits", "eu": "waits"}
	got := s.recordedTargets()
	if !slices.Equal(got.names, []string{"eu", "us"}) || len(got.replicas) != 2 || got.replicas["edge"] != 0 {
		t.Errorf("recorded %v with replicas %v; want eu and us, without the waiting Pull cluster edge", got.names, got.replicas)
	}
	if !slices.Equal(s.t.names, []string{"edge", "eu", "us"}) || len(s.t.replicas) != 3 {
		t.Errorf("the placement itself changed: %v %v", s.t.names, s.t.replicas)
	}
}
