package propagation

import (
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

func cpvWith(clusters, removals, entries []string) *typesv1beta1.ClusterPropagatedVersion {
	cpv := &typesv1beta1.ClusterPropagatedVersion{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}}
	for _, c := range clusters {
		cpv.Spec.Clusters = append(cpv.Spec.Clusters, typesv1beta1.PlacedCluster{Name: typesv1beta1.ClusterName(c)})
	}
	for _, c := range removals {
		cpv.Spec.Removals = append(cpv.Spec.Removals, typesv1beta1.Removal{Name: typesv1beta1.ClusterName(c)})
	}
	for _, c := range entries {
		cpv.Status.ClusterVersions = append(cpv.Status.ClusterVersions, typesv1beta1.ClusterVersion{ClusterName: typesv1beta1.ClusterName(c)})
	}
	return cpv
}

func TestPullRemovals(t *testing.T) {
	t.Parallel()
	set := clusterSet{
		"edge-a": {Spec: corev1beta1.FederatedClusterSpec{SyncMode: corev1beta1.SyncModePull}},
		"edge-b": {Spec: corev1beta1.FederatedClusterSpec{SyncMode: corev1beta1.SyncModePull}},
		"push":   {Spec: corev1beta1.FederatedClusterSpec{SyncMode: corev1beta1.SyncModePush}},
	}
	tests := []struct {
		name    string
		cpv     *typesv1beta1.ClusterPropagatedVersion
		placed  []string
		want    []string
		labeled []string
	}{
		{"placed: nothing to remove", cpvWith([]string{"edge-a"}, nil, []string{"edge-a"}), []string{"edge-a"}, nil, []string{"edge-a"}},
		{"left, its agent still reports: remove", cpvWith([]string{"edge-a"}, nil, []string{"edge-a"}), nil, []string{"edge-a"}, []string{"edge-a"}},
		{"the agent removed its entry: done", cpvWith(nil, []string{"edge-a"}, nil), nil, nil, nil},
		{"left without ever reporting: nothing known to remove", cpvWith([]string{"edge-a"}, nil, nil), nil, nil, nil},
		{"a Push cluster: the host deletes it itself", cpvWith([]string{"push"}, nil, []string{"push"}), nil, nil, nil},
		{"an unjoined cluster: nothing", cpvWith(nil, []string{"gone"}, []string{"gone"}), nil, nil, nil},
		{"a missing CPV: nothing", &typesv1beta1.ClusterPropagatedVersion{}, []string{"edge-a"}, nil, []string{"edge-a"}},
		{"a removal recorded by hand is not trusted", cpvWith([]string{"edge-a"}, []string{"edge-a", "edge-b"}, []string{"edge-a"}), []string{"edge-a"}, nil, []string{"edge-a"}},
		{"several, sorted, beside a placed one", cpvWith([]string{"push"}, nil, []string{"push", "edge-b", "edge-a"}), []string{"push"}, []string{"edge-a", "edge-b"}, []string{"push", "edge-a", "edge-b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := pullRemovals(tt.cpv, tt.placed, set)
			var names []string
			for _, rm := range got {
				names = append(names, string(rm.Name))
			}
			if !slices.Equal(names, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("pullRemovals = %#v, want %v", got, tt.want)
			}
			if l := labelled(tt.placed, got); !slices.Equal(l, tt.labeled) {
				t.Errorf("labelled = %v, want %v", l, tt.labeled)
			}
		})
	}
}

// ownedBy sets cpv's controller to the FederatedDeployment of UID uid.
func ownedBy(cpv *typesv1beta1.ClusterPropagatedVersion, uid types.UID) *typesv1beta1.ClusterPropagatedVersion {
	cpv.OwnerReferences = []metav1.OwnerReference{{APIVersion: "types.kubefed.io/v1beta1", Kind: "FederatedDeployment", Name: "web", UID: uid, Controller: new(true)}}
	return cpv
}

func TestAgentActionFor(t *testing.T) {
	t.Parallel()
	fed := func(deleted bool, annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAnnotations(annotations)
		if deleted {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}
		return u
	}
	orphan := map[string]string{typesv1beta1.AnnotationOrphan: "true"}
	missing := &typesv1beta1.ClusterPropagatedVersion{}
	tests := []struct {
		name string
		fed  *unstructured.Unstructured
		cpv  *typesv1beta1.ClusterPropagatedVersion
		want agentAction
	}{
		{"placed: sync", fed(false, nil), cpvWith([]string{"edge"}, nil, nil), agentSync},
		{"placed and a removal recorded by hand: placed wins", fed(false, nil), cpvWith([]string{"edge"}, []string{"edge"}, nil), agentSync},
		{"the host tells it to remove: delete", fed(false, nil), cpvWith([]string{"other"}, []string{"edge"}, []string{"edge"}), agentDelete},
		{"CPV missing (deleted, not created yet): keep", fed(false, nil), missing, agentKeep},
		{"CPV names other clusters only (hand-edited): keep", fed(false, nil), cpvWith([]string{"other"}, nil, []string{"edge"}), agentKeep},
		{"resource deleted, its CPV missing: keep the copy, which it may never have placed", fed(true, nil), missing, agentRelease},
		{"resource deleted while placed: delete", fed(true, nil), cpvWith([]string{"edge"}, nil, nil), agentDelete},
		{"resource deleted, its CPV records the agent's entry: delete", fed(true, nil), cpvWith([]string{"other"}, nil, []string{"edge"}), agentDelete},
		{"resource deleted, its CPV places it elsewhere: keep the copy", fed(true, nil), cpvWith([]string{"other"}, nil, []string{"other"}), agentRelease},
		{"resource deleted, the CPV an earlier resource's placing it: keep the copy", fed(true, nil), ownedBy(cpvWith([]string{"edge"}, nil, []string{"edge"}), "earlier-uid"), agentRelease},
		{"resource deleted, its own CPV placing it: delete", fed(true, nil), ownedBy(cpvWith([]string{"edge"}, nil, []string{"edge"}), ""), agentDelete},
		{"resource deleted, copies orphaned: release", fed(true, orphan), cpvWith([]string{"edge"}, nil, nil), agentRelease},
		{"orphan annotation on a live resource: sync", fed(false, orphan), cpvWith([]string{"edge"}, nil, nil), agentSync},
		{"an earlier resource's CPV placing it: keep", fed(false, nil), ownedBy(cpvWith([]string{"edge"}, nil, nil), "earlier-uid"), agentKeep},
		{"an earlier resource's CPV telling it to remove: keep", fed(false, nil), ownedBy(cpvWith([]string{"other"}, []string{"edge"}, []string{"edge"}), "earlier-uid"), agentKeep},
		{"its own CPV placing it: sync", fed(false, nil), ownedBy(cpvWith([]string{"edge"}, nil, nil), ""), agentSync},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := agentActionFor(tt.fed, tt.cpv, "edge"); got != tt.want {
				t.Errorf("agentActionFor = %d, want %d", got, tt.want)
			}
		})
	}
}

// placedBy is the one rule for where a resource's deletion deletes, in the
// host (with the placement) and in the agent (without).
func TestPlacedBy(t *testing.T) {
	t.Parallel()
	fed := &unstructured.Unstructured{}
	fed.SetUID("this-uid")
	written := func(cpv *typesv1beta1.ClusterPropagatedVersion) *typesv1beta1.ClusterPropagatedVersion {
		for i := range cpv.Status.ClusterVersions {
			cpv.Status.ClusterVersions[i].Version = "42"
		}
		return cpv
	}
	tests := []struct {
		name    string
		cpv     *typesv1beta1.ClusterPropagatedVersion
		named   []string
		want    []string
		records map[string]copyRecord
	}{
		{"a missing CPV: only the placement", &typesv1beta1.ClusterPropagatedVersion{}, []string{"b"}, []string{"b"}, map[string]copyRecord{"b": {}}},
		{"a missing CPV, no placement: nowhere", &typesv1beta1.ClusterPropagatedVersion{}, nil, []string{}, map[string]copyRecord{}},
		{"its own CPV: recorded, scheduled and placed", written(ownedBy(cpvWith([]string{"b"}, nil, []string{"a"}), "this-uid")), []string{"c"}, []string{"a", "b", "c"},
			map[string]copyRecord{"a": {reported: true, written: true}, "b": {}, "c": {}}},
		{"an entry without a copy written", cpvWith(nil, nil, []string{"a"}), nil, []string{"a"}, map[string]copyRecord{"a": {reported: true}}},
		{"an earlier resource's CPV records nothing of this one's", written(ownedBy(cpvWith([]string{"a", "b"}, nil, []string{"a", "b"}), "earlier-uid")), nil, []string{}, map[string]copyRecord{}},
		{"an earlier resource's CPV, this one's placement", ownedBy(cpvWith([]string{"a"}, nil, []string{"a"}), "earlier-uid"), []string{"b"}, []string{"b"}, map[string]copyRecord{"b": {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, records := placedBy(fed, tt.cpv, tt.named)
			if !slices.Equal(got, tt.want) || !maps.Equal(records, tt.records) {
				t.Errorf("placedBy = %v %v, want %v %v", got, records, tt.want, tt.records)
			}
		})
	}
}

// ownCopy tells a resource's own copy from one an earlier resource of its
// name left behind.
func TestOwnCopy(t *testing.T) {
	t.Parallel()
	fed := &unstructured.Unstructured{}
	fed.SetUID("this-uid")
	stamped := func(uid string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetLabels(map[string]string{typesv1beta1.LabelManaged: "true"})
		if uid != "" {
			u.SetAnnotations(map[string]string{typesv1beta1.AnnotationOwnerUID: uid})
		}
		return u
	}
	failing := ownedBy(cpvWith([]string{"edge"}, nil, []string{"edge"}), "this-uid")
	failing.Status.ClusterVersions[0].State = typesv1beta1.ApplyFailed
	recording := ownedBy(cpvWith([]string{"edge"}, nil, []string{"edge"}), "this-uid")
	recording.Status.ClusterVersions[0].Version = "1"
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		cpv  *typesv1beta1.ClusterPropagatedVersion
		want bool
	}{
		{"stamped by this resource: its own, whatever the CPV", stamped("this-uid"), &typesv1beta1.ClusterPropagatedVersion{}, true},
		{"stamped by an earlier resource: not its own, though its CPV records it", stamped("earlier-uid"), recording, false},
		{"unstamped, recorded as written by its own CPV: its own (written before stamps)", stamped(""), recording, true},
		{"unstamped, its own CPV's entry reports only a failure: an earlier resource's, kept", stamped(""), failing, false},
		{"unstamped, its own CPV does not record the cluster", stamped(""), ownedBy(cpvWith([]string{"edge"}, nil, []string{"other"}), "this-uid"), false},
		{"unstamped, its CPV missing", stamped(""), &typesv1beta1.ClusterPropagatedVersion{}, false},
		{"unstamped, recorded by an earlier resource's CPV", stamped(""), ownedBy(cpvWith([]string{"edge"}, nil, []string{"edge"}), "earlier-uid"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ownCopy(fed, tt.cpv, "edge", tt.obj); got != tt.want {
				t.Errorf("ownCopy = %v, want %v", got, tt.want)
			}
			if got, want := StampedByAnother(fed, tt.obj), tt.obj.GetAnnotations()[typesv1beta1.AnnotationOwnerUID] == "earlier-uid"; got != want {
				t.Errorf("stampedByAnother = %v, want %v", got, want)
			}
		})
	}
}
