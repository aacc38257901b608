package replicadivision

import (
	"math"
	"math/big"
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

// fuzzCluster is one selected cluster as FuzzAssign builds it.
type fuzzCluster struct {
	name    string
	ready   bool
	inSpec  bool // has an entry in spec.clusters
	weight  int64
	min     int64
	max     *int64
	running *int32 // replicas the last decision gave it
}

// readClusters reads up to 8 clusters from data, 7 bytes each: flags
// (ready, in spec.clusters, has a maximum, ran before, weight as large as
// int64 allows), weight, min and max (scaled by the high bits of the
// flags) and the replicas running.
func readClusters(data []byte) []fuzzCluster {
	var out []fuzzCluster
	for i := 0; len(data) >= 7 && i < 8; i, data = i+1, data[7:] {
		flags := data[0]
		scale := int64(1) << (3 * int64(flags>>6)) // 1, 8, 64 or 512
		c := fuzzCluster{name: string(rune('a' + i)), ready: flags&1 != 0, inSpec: flags&2 != 0,
			weight: int64(data[1]), min: int64(data[2]) * scale}
		if flags&16 != 0 {
			c.weight = math.MaxInt64 - int64(data[1])
		}
		if flags&4 != 0 {
			c.max = new(int64(data[3]) * scale)
		}
		if flags&8 != 0 {
			c.running = new(int32(data[4])<<8 | int32(data[5]))
		}
		out = append(out, c)
	}
	return out
}

// FuzzAssign: for any weights, minimums and maximums, the division never
// panics; a cluster that is not Ready gets nothing new; a Ready one stays
// within its maximum, and gets at least its minimum when the minimums fit
// in the total; a cluster of weight 0 gets no more than its minimum (or
// what it runs, without rebalance); the replicas add up to the total when
// the clusters have room for them, and a note says so when they do not;
// without rebalance no running replica moves.
func FuzzAssign(f *testing.F) {
	// KubeFed's scheduling sample: 10 replicas, weights 2 and 3.
	data, err := os.ReadFile("../../../../test/conformance/kubefed-v0.10.0/scheduling/federateddeployment-rsp.yaml")
	if err != nil {
		f.Fatal(err)
	}
	var rsp schedulingv1alpha1.ReplicaSchedulingPreference
	if err := yaml.Unmarshal(data, &rsp); err != nil {
		f.Fatal(err)
	}
	sample := []byte{}
	for _, name := range []string{"cluster1", "cluster2"} {
		p := rsp.Spec.Clusters[name]
		sample = append(sample, 1|2, byte(p.Weight), byte(p.MinReplicas), 0, 0, 0, 0)
	}
	f.Add(rsp.Spec.TotalReplicas, rsp.Spec.Rebalance, false, sample)
	f.Add(int32(10), false, false, []byte{1 | 2 | 8, 2, 0, 0, 0, 7, 0, 1 | 2 | 4 | 8, 3, 1, 2, 0, 9, 0, 2, 1, 0, 0, 0, 1, 0})
	f.Add(int32(100), true, true, []byte{1 | 2 | 16, 1, 0, 0, 0, 0, 0, 1 | 2 | 16, 0, 0, 0, 0, 0, 0, 1 | 2 | 4 | 0xc0, 0, 5, 3, 0, 0, 0})
	f.Add(int32(7), false, true, []byte{1 | 2 | 4 | 8, 0, 3, 2, 0, 5, 0, 2 | 8, 4, 0, 0, 0, 9, 0, 1 | 2 | 0x40, 1, 2, 0, 0, 0, 0})
	f.Add(int32(-3), true, false, []byte{1 | 2, 1, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, total int32, rebalance, star bool, data []byte) {
		cs := readClusters(data)
		spec := &schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TargetKind: "FederatedDeployment", TotalReplicas: total, Rebalance: rebalance,
			Clusters: map[string]schedulingv1alpha1.ClusterPreferences{}}
		var selected []framework.ScoredCluster
		for _, c := range cs {
			p := schedulingv1alpha1.ClusterPreferences{Weight: c.weight, MinReplicas: c.min, MaxReplicas: c.max}
			switch {
			case c.inSpec:
				spec.Clusters[c.name] = p
			case star:
				spec.Clusters[anyCluster] = p
			}
			fc := &framework.Cluster{Name: c.name, Joined: true, Ready: c.ready}
			if c.running != nil {
				fc.Previous = &framework.Previous{Replicas: c.running}
			}
			selected = append(selected, framework.ScoredCluster{Cluster: fc})
		}
		s := &framework.State{Workload: &framework.Workload{Kind: "FederatedDeployment", Namespace: "ns", Name: "web", Replicas: new(int32(1)), Preference: spec}}
		for _, c := range selected {
			s.Clusters = append(s.Clusters, c.Cluster)
		}
		got, res := (&Plugin{}).Assign(s, selected)
		checkAssign(t, spec, cs, got, res)
	})
}

// checkAssign checks a division against the rules FuzzAssign states.
func checkAssign(t *testing.T, spec *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec, cs []fuzzCluster, got map[string]int32, res framework.Result) {
	t.Helper()
	total := int64(max(spec.TotalReplicas, 0))
	var running, minimums int64
	room := new(big.Int) // the most the Ready clusters may take
	weighted := false
	for _, c := range cs {
		p, known := preferences(spec, c.name)
		bound := boundOf(spec, c.name)
		weighted = weighted || known && p.Weight > 0
		prev := int64(0)
		if c.running != nil {
			prev = max(int64(*c.running), 0)
		}
		if !c.ready {
			running += prev // keepRunning starts from it
			continue
		}
		running += min(prev, bound)
		floor := min(max(p.MinReplicas, 0), bound)
		minimums += floor
		if max(p.Weight, 0) == 0 {
			room.Add(room, big.NewInt(floor))
		} else {
			room.Add(room, big.NewInt(bound))
		}
	}
	placesAll := room.Cmp(big.NewInt(total)) >= 0 || !spec.Rebalance && running >= total
	if got == nil {
		// Replicas left over and no weight anywhere: bad input, and the
		// plugin decides nothing.
		if weighted || len(cs) == 0 || placesAll || res.Code == framework.Success {
			t.Fatalf("no division, result %+v, though a cluster has a weight (%v) or there is room", res, weighted)
		}
		return
	}
	var sum int64
	for _, c := range cs {
		n, ok := got[c.name]
		if !ok || n < 0 {
			t.Fatalf("cluster %s: %d replicas (given: %v); division %v", c.name, n, ok, got)
		}
		sum += int64(n)
		p, _ := preferences(spec, c.name)
		bound := boundOf(spec, c.name)
		prev := int64(0)
		if c.running != nil {
			prev = max(int64(*c.running), 0)
		}
		if !c.ready {
			if rebalance := spec.Rebalance; rebalance && n != 0 || !rebalance && int64(n) > prev {
				t.Fatalf("cluster %s is not Ready: %d replicas (%d before)", c.name, n, prev)
			}
			continue
		}
		if int64(n) > bound {
			t.Fatalf("cluster %s: %d replicas, above its bound %d", c.name, n, bound)
		}
		if floor := min(max(p.MinReplicas, 0), bound); max(p.Weight, 0) == 0 {
			limit := floor
			if !spec.Rebalance {
				limit = max(floor, min(prev, bound))
			}
			if int64(n) > limit {
				t.Fatalf("cluster %s of weight 0: %d replicas, above %d", c.name, n, limit)
			}
		}
	}
	if sum > total {
		t.Fatalf("%d replicas given, more than the total %d: %v", sum, total, got)
	}
	if placesAll && sum != total {
		t.Fatalf("%d of %d replicas given, with room for them: %v", sum, total, got)
	}
	if (sum < total) != (len(res.Reasons) > 0) || res.Code != framework.Success || sum < total && !weighted && len(cs) > 0 {
		t.Fatalf("%d of %d replicas given, result %+v", sum, total, res)
	}
	for _, c := range cs {
		if !c.ready {
			continue
		}
		p, _ := preferences(spec, c.name)
		n := int64(got[c.name])
		if spec.Rebalance && minimums <= total && n < min(max(p.MinReplicas, 0), boundOf(spec, c.name)) {
			t.Fatalf("cluster %s: %d replicas, below its minimum %d though the minimums fit", c.name, n, p.MinReplicas)
		}
	}
	if spec.Rebalance {
		return
	}
	for _, c := range cs {
		prev := int64(0)
		if c.running != nil {
			prev = max(int64(*c.running), 0)
		}
		kept := prev
		if c.ready {
			kept = min(prev, boundOf(spec, c.name))
		}
		n := int64(got[c.name])
		if running <= total && n < kept || running >= total && n > kept {
			t.Fatalf("cluster %s: %d replicas from %d running (%d in all, total %d): a running replica moved", c.name, n, kept, running, total)
		}
	}
}

// boundOf is the most replicas the preference lets cluster name run.
func boundOf(spec *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec, name string) int64 {
	p, ok := preferences(spec, name)
	switch {
	case !ok:
		return 0
	case p.MaxReplicas != nil:
		return max(*p.MaxReplicas, 0)
	}
	return math.MaxInt64
}
