package geospread

import (
	"maps"
	"slices"
	"testing"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

type option func(*framework.Cluster)

// scheduled marks a cluster the last decision placed the workload on.
func scheduled(c *framework.Cluster) { c.Previous = &framework.Previous{} }

func notReady(c *framework.Cluster) { c.Ready, c.NotReady = false, "ClusterUnreachable" }

func tolerated(c *framework.Cluster) { c.Tolerated = true }

func failedOver(c *framework.Cluster) { c.FailedOver = true }

// surge marks a cluster the last decision chose standing in for a
// failed-over one.
func surge(c *framework.Cluster) { c.Previous = &framework.Previous{Surge: true} }

func zone(z string) option { return func(c *framework.Cluster) { c.Zones = []string{z} } }

// cluster is a Ready, joined candidate; tests list them in ranked order.
func cluster(name, region string, score int64, opts ...option) framework.ScoredCluster {
	c := &framework.Cluster{Name: name, Region: region, Joined: true, Ready: true}
	for _, o := range opts {
		o(c)
	}
	return framework.ScoredCluster{Cluster: c, Score: score}
}

func byRegion(minGroups, maxGroups, maxPerGroup *int32) typesv1beta1.SpreadConstraint {
	return typesv1beta1.SpreadConstraint{SpreadBy: typesv1beta1.SpreadByRegion,
		MinGroups: minGroups, MaxGroups: maxGroups, MaxClustersPerGroup: maxPerGroup}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	onePerRegionInTwo := byRegion(new(int32(2)), nil, new(int32(1)))
	tests := []struct {
		name        string
		constraints []typesv1beta1.SpreadConstraint
		ranked      []framework.ScoredCluster
		wantChosen  []string
		wantLeftOut map[string]string
		wantCode    framework.Code
		wantReason  string
	}{
		{
			name:       "no constraints passes everything through",
			ranked:     []framework.ScoredCluster{cluster("a", "eu-west", 90), cluster("b", "", 10)},
			wantChosen: []string{"a", "b"},
		},
		{
			name:        "one cluster per region, at least two regions",
			constraints: []typesv1beta1.SpreadConstraint{onePerRegionInTwo},
			ranked: []framework.ScoredCluster{cluster("eu-1", "eu-west", 90), cluster("eu-2", "eu-west", 80),
				cluster("us-1", "us-east", 70), cluster("ap-1", "ap-south", 60)},
			wantChosen:  []string{"eu-1", "us-1", "ap-1"},
			wantLeftOut: map[string]string{"eu-2": "region eu-west already has its 1 cluster (maxClustersPerGroup)"},
		},
		{
			name:        "previously scheduled cluster kept over a higher-scored one",
			constraints: []typesv1beta1.SpreadConstraint{onePerRegionInTwo},
			ranked: []framework.ScoredCluster{cluster("eu-1", "eu-west", 90), cluster("us-1", "us-east", 70),
				cluster("eu-2", "eu-west", 50, scheduled)},
			wantChosen:  []string{"us-1", "eu-2"},
			wantLeftOut: map[string]string{"eu-1": "region eu-west already has its 1 cluster (maxClustersPerGroup)"},
		},
		{
			name:        "not-Ready scheduled cluster replaced by a Ready one in its region",
			constraints: []typesv1beta1.SpreadConstraint{onePerRegionInTwo},
			ranked: []framework.ScoredCluster{cluster("eu-2", "eu-west", 95, scheduled, notReady),
				cluster("us-1", "us-east", 70, scheduled), cluster("eu-1", "eu-west", 60)},
			wantChosen:  []string{"us-1", "eu-1"},
			wantLeftOut: map[string]string{"eu-2": "region eu-west already has its 1 cluster (maxClustersPerGroup)"},
		},
		{
			name:        "under a failover policy, a not-Ready scheduled cluster within its toleration stays",
			constraints: []typesv1beta1.SpreadConstraint{onePerRegionInTwo},
			ranked: []framework.ScoredCluster{cluster("eu-1", "eu-west", 95),
				cluster("us-1", "us-east", 70, scheduled), cluster("eu-2", "eu-west", 60, scheduled, notReady, tolerated)},
			wantChosen:  []string{"us-1", "eu-2"},
			wantLeftOut: map[string]string{"eu-1": "region eu-west already has its 1 cluster (maxClustersPerGroup)"},
		},
		{
			name:        "a failed-over cluster gives way to a surge in its region",
			constraints: []typesv1beta1.SpreadConstraint{onePerRegionInTwo},
			ranked: []framework.ScoredCluster{cluster("eu-2", "eu-west", 95, scheduled, notReady, failedOver),
				cluster("us-1", "us-east", 70, scheduled), cluster("eu-1", "eu-west", 60)},
			wantChosen:  []string{"us-1", "eu-1"},
			wantLeftOut: map[string]string{"eu-2": "region eu-west already has its 1 cluster (maxClustersPerGroup)"},
		},
		{
			name:        "after failback the cluster that failed over comes first again, before its surge",
			constraints: []typesv1beta1.SpreadConstraint{onePerRegionInTwo},
			ranked: []framework.ScoredCluster{cluster("eu-1", "eu-west", 95, surge),
				cluster("us-1", "us-east", 70, scheduled), cluster("eu-2", "eu-west", 60, scheduled)},
			wantChosen:  []string{"us-1", "eu-2"},
			wantLeftOut: map[string]string{"eu-1": "region eu-west already has its 1 cluster (maxClustersPerGroup)"},
		},
		{
			name:        "not-Ready scheduled cluster kept when its region has no other",
			constraints: []typesv1beta1.SpreadConstraint{onePerRegionInTwo},
			ranked: []framework.ScoredCluster{cluster("us-1", "us-east", 70),
				cluster("eu-1", "eu-west", 60, scheduled, notReady)},
			wantChosen: []string{"us-1", "eu-1"},
		},
		{
			name:        "maxGroups picks regions with scheduled clusters first, then by score",
			constraints: []typesv1beta1.SpreadConstraint{byRegion(nil, new(int32(2)), nil)},
			ranked: []framework.ScoredCluster{cluster("ap-1", "ap-south", 90), cluster("sa-1", "sa-east", 85, scheduled, notReady),
				cluster("us-1", "us-east", 70), cluster("eu-1", "eu-west", 50, scheduled), cluster("eu-2", "eu-west", 40)},
			wantChosen: []string{"ap-1", "eu-1", "eu-2"},
			wantLeftOut: map[string]string{
				"sa-1": "region sa-east not chosen: at most 2 regions (maxGroups)",
				"us-1": "region us-east not chosen: at most 2 regions (maxGroups)",
			},
		},
		{
			name:        "equal scores: groups ordered by name",
			constraints: []typesv1beta1.SpreadConstraint{byRegion(nil, new(int32(1)), nil)},
			ranked:      []framework.ScoredCluster{cluster("z", "b-region", 50), cluster("y", "a-region", 50)},
			wantChosen:  []string{"y"},
			wantLeftOut: map[string]string{"z": "region b-region not chosen: at most 1 region (maxGroups)"},
		},
		{
			name:        "minGroups not met",
			constraints: []typesv1beta1.SpreadConstraint{onePerRegionInTwo},
			ranked:      []framework.ScoredCluster{cluster("eu-1", "eu-west", 90), cluster("eu-2", "eu-west", 80)},
			wantCode:    framework.Unschedulable,
			wantReason:  "needs clusters in at least 2 regions, found 1 (eu-west)",
		},
		{
			name:        "minGroups not met, counting clusters without a region",
			constraints: []typesv1beta1.SpreadConstraint{onePerRegionInTwo},
			ranked:      []framework.ScoredCluster{cluster("eu-1", "eu-west", 90), cluster("x", "", 80)},
			wantCode:    framework.Unschedulable,
			wantReason:  "needs clusters in at least 2 regions, found 1 (eu-west); 1 cluster has no region set",
		},
		{
			name:        "default minGroups needs one region",
			constraints: []typesv1beta1.SpreadConstraint{byRegion(nil, nil, nil)},
			ranked:      []framework.ScoredCluster{cluster("x", "", 80), cluster("y", "", 70)},
			wantCode:    framework.Unschedulable,
			wantReason:  "needs clusters in at least 1 region, found 0; 2 clusters have no region set",
		},
		{
			name:        "minGroups message lists a few regions, sorted",
			constraints: []typesv1beta1.SpreadConstraint{byRegion(new(int32(9)), nil, nil)},
			ranked: []framework.ScoredCluster{cluster("1", "r7", 90), cluster("2", "r6", 80), cluster("3", "r5", 70),
				cluster("4", "r4", 60), cluster("5", "r3", 50), cluster("6", "r2", 40), cluster("7", "r1", 30)},
			wantCode:   framework.Unschedulable,
			wantReason: "needs clusters in at least 9 regions, found 7 (r1, r2, r3, r4, r5 and 2 more)",
		},
		{
			name:        "clusters without a region are left out",
			constraints: []typesv1beta1.SpreadConstraint{byRegion(nil, nil, nil)},
			ranked:      []framework.ScoredCluster{cluster("x", "", 90), cluster("eu-1", "eu-west", 80), cluster("us-1", "us-east", 70)},
			wantChosen:  []string{"eu-1", "us-1"},
			wantLeftOut: map[string]string{"x": "no region set"},
		},
		{
			name: "zone constraint groups by the first zone",
			constraints: []typesv1beta1.SpreadConstraint{{SpreadBy: typesv1beta1.SpreadByZone,
				MinGroups: new(int32(2)), MaxClustersPerGroup: new(int32(1))}},
			ranked: []framework.ScoredCluster{cluster("a1", "eu-west", 90, zone("eu-west-a")), cluster("a2", "eu-west", 80, zone("eu-west-a")),
				cluster("b1", "eu-west", 70, zone("eu-west-b")), cluster("none", "eu-west", 60)},
			wantChosen: []string{"a1", "b1"},
			wantLeftOut: map[string]string{
				"a2":   "zone eu-west-a already has its 1 cluster (maxClustersPerGroup)",
				"none": "no zone set",
			},
		},
		{
			name: "region then zone, each narrowing what the last left",
			constraints: []typesv1beta1.SpreadConstraint{
				byRegion(new(int32(2)), new(int32(2)), nil),
				{SpreadBy: typesv1beta1.SpreadByZone, MaxClustersPerGroup: new(int32(1))},
			},
			ranked: []framework.ScoredCluster{cluster("eu-a1", "eu-west", 90, zone("eu-west-a")),
				cluster("eu-a2", "eu-west", 80, zone("eu-west-a")), cluster("eu-b", "eu-west", 70, zone("eu-west-b")),
				cluster("us-a", "us-east", 60, zone("us-east-a")), cluster("ap", "ap-south", 50)},
			wantChosen: []string{"eu-a1", "eu-b", "us-a"},
			wantLeftOut: map[string]string{
				"eu-a2": "zone eu-west-a already has its 1 cluster (maxClustersPerGroup)",
				"ap":    "region ap-south not chosen: at most 2 regions (maxGroups)",
			},
		},
		{
			name:        "maxGroups below minGroups is an error",
			constraints: []typesv1beta1.SpreadConstraint{byRegion(new(int32(3)), new(int32(2)), nil)},
			ranked:      []framework.ScoredCluster{cluster("eu-1", "eu-west", 90)},
			wantCode:    framework.Error,
			wantReason:  "spread by region: maxGroups 2 is less than minGroups 3",
		},
		{
			name:        "unknown spreadBy is an error",
			constraints: []typesv1beta1.SpreadConstraint{{SpreadBy: "rack"}},
			ranked:      []framework.ScoredCluster{cluster("eu-1", "eu-west", 90)},
			wantCode:    framework.Error,
			wantReason:  `unknown spreadBy "rack"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &framework.State{Workload: &framework.Workload{
				Placement: typesv1beta1.Placement{SpreadConstraints: tt.constraints}}}
			before := names(tt.ranked)
			sel, res := New().(framework.SelectPlugin).Select(s, tt.ranked)
			if got := names(tt.ranked); !slices.Equal(got, before) {
				t.Errorf("ranked changed to %v, was %v", got, before)
			}
			if res.Code != tt.wantCode {
				t.Fatalf("code = %v, want %v (%q)", res.Code, tt.wantCode, res.Reasons)
			}
			if tt.wantCode != framework.Success {
				if len(res.Reasons) != 1 || res.Reasons[0] != tt.wantReason {
					t.Errorf("reasons = %q, want [%q]", res.Reasons, tt.wantReason)
				}
				return
			}
			if got := names(sel.Chosen); !slices.Equal(got, tt.wantChosen) {
				t.Errorf("chosen = %v, want %v", got, tt.wantChosen)
			}
			if !maps.Equal(sel.LeftOut, tt.wantLeftOut) {
				t.Errorf("left out = %q, want %q", sel.LeftOut, tt.wantLeftOut)
			}
		})
	}
}

func names(cs []framework.ScoredCluster) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
