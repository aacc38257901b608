package propagation

import (
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
		{"resource deleted: delete, even without a CPV", fed(true, nil), missing, agentDelete},
		{"resource deleted while placed: delete", fed(true, nil), cpvWith([]string{"edge"}, nil, nil), agentDelete},
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
