package shard

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
)

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i+1)
	}
	return out
}

// loads counts the clusters of each replica.
func loads(assigned map[string]string) map[string]int {
	l := map[string]int{}
	for _, r := range assigned {
		l[r]++
	}
	return l
}

// moved counts the clusters whose replica differs between before and after.
func moved(before, after map[string]string) int {
	n := 0
	for c, r := range after {
		if before[c] != r {
			n++
		}
	}
	return n
}

func TestAssignIsDeterministic(t *testing.T) {
	t.Parallel()
	clusters := names("cluster", 50)
	replicas := []string{"cm-a", "cm-b", "cm-c"}
	want := Assign(clusters, replicas)
	shuffled := slices.Clone(clusters)
	slices.Reverse(shuffled)
	for name, got := range map[string]map[string]string{
		"again":                        Assign(clusters, replicas),
		"clusters in another order":    Assign(shuffled, replicas),
		"replicas in another order":    Assign(clusters, []string{"cm-c", "cm-a", "cm-b"}),
		"with duplicates and an empty": Assign(append(slices.Clone(clusters), clusters[0], ""), append(slices.Clone(replicas), "cm-a", "")),
	} {
		if !maps.Equal(got, want) {
			t.Errorf("%s: the assignment differs: %v, want %v", name, got, want)
		}
	}
}

func TestAssignGivesEveryClusterOneReplicaWithinTheBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ clusters, replicas int }{
		{1, 1}, {1, 3}, {6, 3}, {7, 3}, {100, 3}, {100, 4}, {1000, 7}, {3, 10},
	} {
		t.Run(fmt.Sprintf("%d clusters on %d replicas", tc.clusters, tc.replicas), func(t *testing.T) {
			t.Parallel()
			clusters, replicas := names("cluster", tc.clusters), names("cm", tc.replicas)
			got := Assign(clusters, replicas)
			if len(got) != len(clusters) {
				t.Fatalf("%d clusters assigned, want %d", len(got), len(clusters))
			}
			for c, r := range got {
				if !slices.Contains(replicas, r) {
					t.Errorf("cluster %s went to %q, not a replica", c, r)
				}
			}
			bound := int(math.Ceil(LoadFactor * float64(tc.clusters) / float64(tc.replicas)))
			for r, n := range loads(got) {
				if n > bound {
					t.Errorf("replica %s serves %d clusters, more than the bound %d", r, n, bound)
				}
			}
		})
	}
}

func TestAssignWithoutReplicasAssignsNothing(t *testing.T) {
	t.Parallel()
	if got := Assign(names("cluster", 5), nil); len(got) != 0 {
		t.Errorf("Assign with no replica = %v, want an empty map", got)
	}
	if got := Assign(nil, []string{"cm-a"}); len(got) != 0 {
		t.Errorf("Assign with no cluster = %v, want an empty map", got)
	}
}

func TestOneReplicaServesEveryCluster(t *testing.T) {
	t.Parallel()
	clusters := names("cluster", 20)
	got := Assign(clusters, []string{"cm-a"})
	if l := loads(got); l["cm-a"] != len(clusters) || len(l) != 1 {
		t.Errorf("loads = %v, want all %d clusters on cm-a", l, len(clusters))
	}
}

// TestAJoiningOrLeavingReplicaMovesAFewClusters measures the movement the
// hashing promises: a fourth replica takes about a quarter of the clusters
// from the three (mod-N hashing would move three quarters), and when one of
// four leaves, mostly its own clusters move. Each bound leaves room for
// the load bound's pushes, which move a few more.
func TestAJoiningOrLeavingReplicaMovesAFewClusters(t *testing.T) {
	t.Parallel()
	clusters := names("cluster", 100)
	three := Assign(clusters, []string{"cm-a", "cm-b", "cm-c"})
	four := Assign(clusters, []string{"cm-a", "cm-b", "cm-c", "cm-d"})
	joined := moved(three, four)
	t.Logf("cm-d joining moved %d of 100 clusters; it serves %d", joined, loads(four)["cm-d"])
	if joined > 40 {
		t.Errorf("a fourth replica moved %d of 100 clusters, want about 25 (at most 40)", joined)
	}
	if n := loads(four)["cm-d"]; n < 15 {
		t.Errorf("the fourth replica serves %d clusters, want about 25", n)
	}

	left := Assign(clusters, []string{"cm-a", "cm-b", "cm-d"})
	gone := loads(four)["cm-c"]
	leftMoved := moved(four, left)
	t.Logf("cm-c leaving moved %d of 100 clusters; it served %d", leftMoved, gone)
	if leftMoved > gone+15 {
		t.Errorf("cm-c leaving moved %d clusters, want its own %d and a few pushed by the bound (at most %d)", leftMoved, gone, gone+15)
	}
}

// BenchmarkAssign is one evaluation's cost at a large fleet: every replica
// runs Assign whenever the live replicas or the clusters change.
func BenchmarkAssign(b *testing.B) {
	clusters, replicas := names("cluster", 1000), names("cm", 5)
	for b.Loop() {
		Assign(clusters, replicas)
	}
}
