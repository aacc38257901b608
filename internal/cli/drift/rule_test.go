package drift

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
)

const (
	replicas = "/spec/replicas"
	image    = "/spec/template/spec/containers/0/image"
	kcm      = "kube-controller-manager"
)

// changed is an ended episode in cluster, h hours ago, in which each
// manager wrote the paths it is given with the operation Update, as the
// ledger records it since it keeps operations.
func changed(cluster string, h int, writes ...typesv1beta1.ManagerOperation) Episode {
	ep := typesv1beta1.DriftEpisode{Start: *ago(time.Duration(h) * time.Hour), End: *ago(time.Duration(h)*time.Hour - time.Second),
		State: typesv1beta1.ModifiedOutOfBand, ResolvedBy: typesv1beta1.ResolvedByEnforce}
	for _, w := range writes {
		if w.Operation == "" {
			w.Operation = metav1.ManagedFieldsOperationUpdate
		}
		ep.ChangedPaths = append(ep.ChangedPaths, w.Paths...)
		ep.ChangedBy = append(ep.ChangedBy, w.Manager)
		ep.ChangedByOperations = append(ep.ChangedByOperations, w)
	}
	return Episode{Namespace: "shop", Kind: "FederatedDeployment", Name: "web", Cluster: cluster, DriftEpisode: ep}
}

// by is manager's write of paths.
func by(manager string, paths ...string) typesv1beta1.ManagerOperation {
	return typesv1beta1.ManagerOperation{Manager: manager, Paths: paths}
}

// legacy is an episode recorded before the ledger kept operations: the
// managers and paths, not who changed which.
func legacy(cluster string, h int, managers []string, paths ...string) Episode {
	ep := changed(cluster, h)
	ep.ChangedBy, ep.ChangedPaths = managers, paths
	return ep
}

// times repeats episodes made by mk for hours 1..n.
func times(n int, mk func(h int) Episode) []Episode {
	var out []Episode
	for h := 1; h <= n; h++ {
		out = append(out, mk(h))
	}
	return out
}

func evidence(manager string, person bool, path string, episodes int, clusters []string, operations []string, first, last int) Evidence {
	return Evidence{Manager: manager, Person: person, Path: path, Episodes: episodes, Clusters: clusters, Operations: operations,
		FirstSeen: *ago(time.Duration(first) * time.Hour), LastSeen: *ago(time.Duration(last)*time.Hour - time.Second)}
}

var update = []string{"Update"}

func TestSuggestRule(t *testing.T) {
	t.Parallel()
	none := drift.Policy{}
	tests := []struct {
		name     string
		episodes []Episode
		policy   drift.Policy
		// clusterPolicy, when set, is the policy in cluster b only.
		clusterPolicy *drift.Policy
		want          []Suggestion
	}{
		{
			name: "an autoscaler's replicas, again and again in two clusters: ignoreManagers",
			episodes: append(times(3, func(h int) Episode { return changed("a", h, by(kcm, replicas)) }),
				changed("b", 5, by(kcm, replicas))),
			want: []Suggestion{{Field: fieldIgnoreManagers, Value: kcm, Evidence: []Evidence{evidence(kcm, false, replicas, 4, []string{"a", "b"}, update, 5, 1)}}},
		},
		{
			name:     "a person's edits, again and again: ignorePaths, never ignoreManagers",
			episodes: times(3, func(h int) Episode { return changed("a", h, by("kubectl-edit", image)) }),
			want:     []Suggestion{{Field: fieldIgnorePaths, Value: image, Evidence: []Evidence{evidence("kubectl-edit", true, image, 3, []string{"a"}, update, 3, 1)}}},
		},
		{
			name:     "kubectl scale, which names no manager: a person too",
			episodes: times(3, func(h int) Episode { return changed("a", h, by("kubectl", replicas)) }),
			want:     []Suggestion{{Field: fieldIgnorePaths, Value: replicas, Evidence: []Evidence{evidence("kubectl", true, replicas, 3, []string{"a"}, update, 3, 1)}}},
		},
		{
			name:     "below the threshold: nothing",
			episodes: times(2, func(h int) Episode { return changed("a", h, by(kcm, replicas)) }),
		},
		{
			name:     "the manager ignored already: nothing",
			episodes: times(5, func(h int) Episode { return changed("a", h, by(kcm, replicas)) }),
			policy:   drift.Policy{IgnoreManagers: []string{kcm}},
		},
		{
			name:     "the path ignored already, by a path above it: nothing",
			episodes: times(5, func(h int) Episode { return changed("a", h, by("kubectl-edit", image)) }),
			policy:   drift.Policy{IgnorePaths: []string{"/spec/template"}},
		},
		{
			name: "ignored in one cluster: the others' episodes alone count",
			episodes: append(times(3, func(h int) Episode { return changed("b", h, by(kcm, replicas)) }),
				changed("a", 4, by(kcm, replicas)), changed("a", 5, by(kcm, replicas))),
			clusterPolicy: &drift.Policy{IgnorePaths: []string{replicas}},
		},
		{
			name: "a controller that changed another field once: ignorePaths for what it keeps changing",
			episodes: append(times(3, func(h int) Episode { return changed("a", h, by(kcm, replicas)) }),
				changed("a", 4, by(kcm, "/spec/paused"))),
			want: []Suggestion{{Field: fieldIgnorePaths, Value: replicas, Evidence: []Evidence{evidence(kcm, false, replicas, 3, []string{"a"}, update, 3, 1)}}},
		},
		{
			name: "a webhook's controller that sets another annotation each time: their parent",
			episodes: times(3, func(h int) Episode {
				return changed("a", h, by("policy-controller", "/metadata/annotations/checked-"+string(rune('0'+h))))
			}),
			want: []Suggestion{{Field: fieldIgnoreManagers, Value: "policy-controller",
				Evidence: []Evidence{evidence("policy-controller", false, "/metadata/annotations", 3, []string{"a"}, update, 3, 1)}}},
		},
		{
			name: "one path by two people: one ignorePaths entry, with both",
			episodes: append(times(3, func(h int) Episode { return changed("a", h, by("kubectl-edit", replicas)) }),
				times(3, func(h int) Episode { return changed("b", h+3, by("kubectl-scale", replicas)) })...),
			want: []Suggestion{{Field: fieldIgnorePaths, Value: replicas, Evidence: []Evidence{
				evidence("kubectl-edit", true, replicas, 3, []string{"a"}, update, 3, 1),
				evidence("kubectl-scale", true, replicas, 3, []string{"b"}, update, 6, 4),
			}}},
		},
		{
			name: "a manager that applied and updated in one episode counts it once",
			episodes: times(3, func(h int) Episode {
				return changed("a", h, by("flux", replicas), typesv1beta1.ManagerOperation{Manager: "flux", Operation: metav1.ManagedFieldsOperationApply, Paths: []string{replicas}})
			}),
			want: []Suggestion{{Field: fieldIgnoreManagers, Value: "flux", Evidence: []Evidence{evidence("flux", false, replicas, 3, []string{"a"}, []string{"Apply", "Update"}, 3, 1)}}},
		},
		{
			name: "episodes recorded before operations: one manager's are its own, two managers' tell nobody's",
			episodes: append(times(3, func(h int) Episode { return legacy("a", h, []string{kcm}, replicas) }),
				times(3, func(h int) Episode { return legacy("a", h+3, []string{kcm, "kubectl-edit"}, replicas, image) })...),
			want: []Suggestion{{Field: fieldIgnoreManagers, Value: kcm, Evidence: []Evidence{evidence(kcm, false, replicas, 3, []string{"a"}, []string{}, 3, 1)}}},
		},
		{
			name: "ignoreManagers first, then ignorePaths",
			episodes: times(3, func(h int) Episode {
				return changed("a", h, by(kcm, replicas), by("kubectl-edit", image))
			}),
			want: []Suggestion{
				{Field: fieldIgnoreManagers, Value: kcm, Evidence: []Evidence{evidence(kcm, false, replicas, 3, []string{"a"}, update, 3, 1)}},
				{Field: fieldIgnorePaths, Value: image, Evidence: []Evidence{evidence("kubectl-edit", true, image, 3, []string{"a"}, update, 3, 1)}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			policy := func(cluster string) drift.Policy {
				if cluster == "b" && tt.clusterPolicy != nil {
					return *tt.clusterPolicy
				}
				if tt.policy.IgnorePaths == nil && tt.policy.IgnoreManagers == nil {
					return none
				}
				return tt.policy
			}
			got := suggest(tt.episodes, policy, 3)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("suggest =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestIsPerson(t *testing.T) {
	t.Parallel()
	for manager, want := range map[string]bool{
		"kubectl": true, "kubectl.exe": true, "kubectl-edit": true, "kubectl-client-side-apply": true, "kubectl-scale": true,
		"kube-controller-manager": false, "kubectlish": false, "helm": false, "horizontal-pod-autoscaler": false,
	} {
		if got := isPerson(manager); got != want {
			t.Errorf("isPerson(%q) = %v, want %v", manager, got, want)
		}
	}
}
