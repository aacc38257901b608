package capacity

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

// list builds a ResourceList from name, quantity pairs.
func list(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

func free(pairs ...string) *framework.Capacity {
	return &framework.Capacity{Free: list(pairs...)}
}

func TestFilter(t *testing.T) {
	t.Parallel()
	perPod := list("cpu", "1", "memory", "512Mi")
	pref := &schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TotalReplicas: 10}
	tests := []struct {
		name     string
		workload framework.Workload
		cluster  framework.Cluster
		reason   string // empty: the cluster passes
	}{
		{"not measured", framework.Workload{Replicas: new(int32(6)), PodRequests: perPod}, framework.Cluster{}, ""},
		{"not replicated", framework.Workload{PodRequests: perPod}, framework.Cluster{Capacity: free("cpu", "0")}, ""},
		{"fits", framework.Workload{Replicas: new(int32(4)), PodRequests: perPod},
			framework.Cluster{Capacity: free("cpu", "4", "memory", "2Gi", "pods", "10")}, ""},
		{"cpu short", framework.Workload{Replicas: new(int32(6)), PodRequests: perPod},
			framework.Cluster{Capacity: free("cpu", "4", "memory", "8Gi", "pods", "10")}, "needs 6 cpu, 4 free"},
		{"millicores", framework.Workload{Replicas: new(int32(3)), PodRequests: list("cpu", "500m")},
			framework.Cluster{Capacity: free("cpu", "1250m")}, "needs 1.5 cpu, 1.25 free"},
		{"memory short, in Gi", framework.Workload{Replicas: new(int32(6)), PodRequests: perPod},
			framework.Cluster{Capacity: free("cpu", "8", "memory", "2936012Ki", "pods", "10")}, "needs 3Gi memory, 2.7Gi free"},
		{"memory short, in Mi", framework.Workload{Replicas: new(int32(2)), PodRequests: list("memory", "300Mi")},
			framework.Cluster{Capacity: free("memory", "500M")}, "needs 600Mi memory, 476Mi free"},
		{"nothing free", framework.Workload{Replicas: new(int32(1)), PodRequests: perPod},
			framework.Cluster{Capacity: free("cpu", "-2")}, "needs 1 cpu, none free"},
		{"pods short", framework.Workload{Replicas: new(int32(3))},
			framework.Cluster{Capacity: free("cpu", "4", "pods", "2")}, "needs 3 pods, 2 free"},
		{"quota short", framework.Workload{Replicas: new(int32(1)), PodRequests: perPod},
			framework.Cluster{Capacity: &framework.Capacity{Free: list("cpu", "8", "pods", "10"), QuotaFree: list("pods", "0")}},
			"needs 1 pod, none left in the namespace's ResourceQuota"},
		{"a previous decision does not make room", framework.Workload{Replicas: new(int32(6)), PodRequests: perPod},
			framework.Cluster{Previous: &framework.Previous{Replicas: new(int32(6))}, Capacity: free("cpu", "2")}, "needs 6 cpu, 2 free"},
		{"preference, one pod fits", framework.Workload{Preference: pref, PodRequests: perPod},
			framework.Cluster{Capacity: free("cpu", "1", "memory", "512Mi")}, ""},
		{"preference, no pod fits", framework.Workload{Preference: pref, Replicas: new(int32(10)), PodRequests: perPod},
			framework.Cluster{Capacity: free("cpu", "500m")}, "needs 1 cpu, 0.5 free"},
		{"preference, already scheduled and full", framework.Workload{Preference: pref, PodRequests: perPod},
			framework.Cluster{Previous: &framework.Previous{Replicas: new(int32(3))}, Capacity: free("cpu", "0")}, "needs 1 cpu, none free"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := (&Plugin{}).Filter(&framework.State{Workload: &tt.workload}, &tt.cluster)
			if tt.reason == "" {
				if !got.IsSuccess() {
					t.Fatalf("ruled out: %v", got.Reasons)
				}
				return
			}
			if got.Code != framework.Unschedulable || len(got.Reasons) != 1 || got.Reasons[0] != tt.reason {
				t.Errorf("got %v %q, want Unschedulable [%q]", got.Code, got.Reasons, tt.reason)
			}
		})
	}
}

func TestScore(t *testing.T) {
	t.Parallel()
	perPod := list("cpu", "1")
	huge := &framework.Capacity{Free: list("cpu", "9000000000000", "pods", "9000000000000000000")}
	tests := []struct {
		name     string
		clusters []*framework.Capacity
		want     []int64
	}{
		{"by pods that fit", []*framework.Capacity{free("cpu", "10"), free("cpu", "5"), free("cpu", "0")}, []int64{100, 50, 0}},
		{"normalized by the roomiest", []*framework.Capacity{free("cpu", "4"), free("cpu", "3")}, []int64{100, 75}},
		{"unknown is half", []*framework.Capacity{nil, free("cpu", "2")}, []int64{50, 100}},
		{"unlimited is max, and does not flatten", []*framework.Capacity{{}, free("cpu", "2"), free("cpu", "1")}, []int64{100, 100, 50}},
		{"nothing fits anywhere", []*framework.Capacity{free("cpu", "0"), free("cpu", "-1")}, []int64{0, 0}},
		{"quota limits", []*framework.Capacity{{Free: list("cpu", "10"), QuotaFree: list("pods", "1")}, free("cpu", "4")}, []int64{25, 100}},
		{"no overflow", []*framework.Capacity{huge, free("cpu", "4500000000000")}, []int64{100, 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &framework.State{Workload: &framework.Workload{Replicas: new(int32(1)), PodRequests: perPod}}
			for _, c := range tt.clusters {
				s.Clusters = append(s.Clusters, &framework.Cluster{Capacity: c})
			}
			for i, c := range s.Clusters {
				got, res := (&Plugin{}).Score(s, c)
				if !res.IsSuccess() {
					t.Fatalf("cluster %d: %v", i, res.Reasons)
				}
				if got != tt.want[i] {
					t.Errorf("cluster %d: score %d, want %d", i, got, tt.want[i])
				}
			}
		})
	}
}

func TestScaleBounds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ n, most, want int64 }{
		{math.MaxInt64 - 1, math.MaxInt64 - 1, framework.MaxScore},
		{math.MaxInt64 / 2, math.MaxInt64 - 1, framework.MaxScore / 2},
		{1, math.MaxInt64 - 1, 0},
	} {
		if got := scale(tt.n, tt.most); got != tt.want {
			t.Errorf("scale(%d, %d) = %d, want %d", tt.n, tt.most, got, tt.want)
		}
	}
}
