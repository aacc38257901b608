package propagation

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/copyhealth"
	"github.com/fedwarden/fedwarden/internal/render"
)

func memberCopy(rv string, generation int64, templateVersion, overrideVersion string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetResourceVersion(rv)
	u.SetGeneration(generation)
	u.SetAnnotations(map[string]string{
		typesv1beta1.AnnotationTemplateVersion: templateVersion,
		typesv1beta1.AnnotationOverrideVersion: overrideVersion,
	})
	return u
}

func TestCPVStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	v := render.Versions{Template: "2", Override: "3", TemplateHash: "t", OverrideHash: "o"}
	results := []clusterResult{
		// Written at override version 1, whose content for this cluster
		// has not changed since: InSync at the current versions.
		inSync("b", memberCopy("100", 4, "2", "1")),
		applyFailed("a", errors.New("override 0 does not apply"), false),
		unreachable("c", "cluster c is not Ready"),
	}
	st := cpvStatus(typesv1beta1.ClusterPropagatedVersionStatus{}, v, 3, results, "", 5, t0)
	if st.TemplateVersion != "2" || st.OverrideVersion != "3" || *st.ClusterCount != 3 || *st.DriftedClusters != 2 {
		t.Fatalf("status = %+v", st)
	}
	names := []string{}
	for _, cv := range st.ClusterVersions {
		names = append(names, string(cv.ClusterName))
	}
	if names[0] != "a" || names[1] != "b" || names[2] != "c" {
		t.Errorf("entries not sorted by cluster: %v", names)
	}
	b := st.ClusterVersions[1]
	if b.State != typesv1beta1.InSync || b.Version != "100" || b.ObservedGeneration != 4 || b.TemplateVersion != "2" || b.OverrideVersion != "3" || b.DriftedSince != nil {
		t.Errorf("in-sync entry = %+v", b)
	}
	a := st.ClusterVersions[0]
	if a.State != typesv1beta1.ApplyFailed || a.Message != "override 0 does not apply" || a.DriftedSince == nil || !a.DriftedSince.Equal(&t0) {
		t.Errorf("failed entry = %+v", a)
	}
	if !meta.IsStatusConditionTrue(st.Conditions, typesv1beta1.CPVDrifted) || meta.IsStatusConditionTrue(st.Conditions, typesv1beta1.CPVPropagated) {
		t.Errorf("conditions = %+v", st.Conditions)
	}
	// The same observation a minute later changes nothing: no write.
	again := cpvStatus(st, v, 3, results, "", 5, t1)
	if !equality.Semantic.DeepEqual(st, again) {
		t.Errorf("a repeated sync changed the status:\n%+v\n%+v", st, again)
	}
	// All in sync: Propagated, not Drifted.
	healed := cpvStatus(st, v, 1, []clusterResult{inSync("a", memberCopy("101", 1, "2", "3"))}, "", 5, t1)
	if !meta.IsStatusConditionTrue(healed.Conditions, typesv1beta1.CPVPropagated) || meta.IsStatusConditionTrue(healed.Conditions, typesv1beta1.CPVDrifted) || healed.ClusterVersions[0].DriftedSince != nil {
		t.Errorf("healed status = %+v", healed)
	}
}

// A sync that finds a copy current without writing it records the copy's
// resourceVersion for a kind without generations (a ConfigMap: the entry
// may be stale, its sync's status write lost), and keeps the recorded one
// for a status update by the member's own controllers (a Deployment whose
// generation did not move).
func TestClusterVersionRecordsWhatTheSyncDidNotWrite(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	v := render.Versions{Template: "1", Override: "3"}
	tests := []struct {
		name   string
		prev   typesv1beta1.ClusterVersion
		copy   *unstructured.Unstructured
		wantRV string
	}{
		{"a ConfigMap written by a sync whose status was lost", typesv1beta1.ClusterVersion{Version: "1481", TemplateVersion: "1", OverrideVersion: "2"}, memberCopy("2171", 0, "1", "3"), "2171"},
		{"a ConfigMap healed at the same versions", typesv1beta1.ClusterVersion{Version: "805", TemplateVersion: "1", OverrideVersion: "3"}, memberCopy("1320", 0, "1", "3"), "1320"},
		{"a Deployment's status update", typesv1beta1.ClusterVersion{Version: "1481", ObservedGeneration: 4, TemplateVersion: "1", OverrideVersion: "3"}, memberCopy("2171", 4, "1", "3"), "1481"},
		{"a Deployment's new spec", typesv1beta1.ClusterVersion{Version: "1481", ObservedGeneration: 4, TemplateVersion: "1", OverrideVersion: "2"}, memberCopy("2171", 5, "1", "3"), "2171"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.prev.ClusterName, tt.prev.State = "a", typesv1beta1.InSync
			if got := clusterVersion(tt.prev, inSync("a", tt.copy), v, "", now); got.Version != tt.wantRV {
				t.Errorf("Version = %s, want %s", got.Version, tt.wantRV)
			}
		})
	}
}

// The health a sync judged, or a Pull cluster's agent reported, goes into
// the CPV entry and count and the federated resource's per-cluster status
// and HEALTHY column (healthy/placed); a cluster without a copy has none.
func TestHealthInStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC))
	v := render.Versions{Template: "1", Override: "1"}
	healthy := inSync("a", memberCopy("10", 1, "1", "1"))
	healthy.health = &copyhealth.Result{Health: corev1beta1.HealthHealthy, Reason: "ReplicasAvailable"}
	degraded := inSync("b", memberCopy("11", 1, "1", "1"))
	degraded.health = &copyhealth.Result{Health: corev1beta1.HealthDegraded, Reason: "ProgressDeadlineExceeded", Message: strings.Repeat("x", 400)}
	pull := clusterResult{name: "c", fromAgent: true, state: typesv1beta1.InSync, entry: &typesv1beta1.ClusterVersion{ClusterName: "c", State: typesv1beta1.InSync, Health: corev1beta1.HealthHealthy}}
	results := []clusterResult{healthy, degraded, pull, unreachable("d", "cluster d is not Ready")}

	st := cpvStatus(typesv1beta1.ClusterPropagatedVersionStatus{}, v, 4, results, "", 1, now)
	if *st.HealthyClusters != 2 || st.ClusterVersions[1].HealthReason != "ProgressDeadlineExceeded" || len(st.ClusterVersions[1].HealthMessage) > 256 || st.ClusterVersions[3].Health != "" {
		t.Errorf("CPV status = %+v", st)
	}
	fst := federatedStatus(typesv1beta1.FederatedStatus{}, Type{}, targets{names: []string{"a", "b", "c", "d"}}, results, 1, now)
	got := map[string]corev1beta1.HealthState{}
	for _, c := range fst.Clusters {
		got[string(c.Name)] = c.Health
	}
	if fst.Healthy != "2/4" || got["a"] != corev1beta1.HealthHealthy || got["b"] != corev1beta1.HealthDegraded || got["c"] != corev1beta1.HealthHealthy || got["d"] != "" {
		t.Errorf("federated status healthy %q, clusters %v", fst.Healthy, got)
	}
}
