package v1beta1

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

func TestClusterSelectorAsSelector(t *testing.T) {
	t.Parallel()
	eu := labels.Set{"region": "eu", "gpu": "true"}
	us := labels.Set{"region": "us"}
	tests := []struct {
		name       string
		selector   *ClusterSelector
		eu, us     bool
		wantErrMsg bool
	}{
		{name: "nil selects nothing"},
		{name: "empty selects everything", selector: &ClusterSelector{}, eu: true, us: true},
		{name: "match labels", selector: &ClusterSelector{MatchLabels: map[string]string{"region": "eu"}}, eu: true},
		{name: "In", selector: &ClusterSelector{MatchExpressions: []ClusterSelectorRequirement{{Key: "region", Operator: "In", Values: []string{"us", "ap"}}}}, us: true},
		{name: "DoesNotExist", selector: &ClusterSelector{MatchExpressions: []ClusterSelectorRequirement{{Key: "gpu", Operator: "DoesNotExist"}}}, us: true},
		{name: "bad label value", selector: &ClusterSelector{MatchLabels: map[string]string{"region": "eu west"}}, wantErrMsg: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sel, err := tt.selector.AsSelector()
			if tt.wantErrMsg {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := sel.Matches(eu); got != tt.eu {
				t.Errorf("matches eu = %v, want %v", got, tt.eu)
			}
			if got := sel.Matches(us); got != tt.us {
				t.Errorf("matches us = %v, want %v", got, tt.us)
			}
		})
	}
}

// ParseClusterSelector reads kubectl's selector syntax into a
// ClusterSelector that AsSelector turns back into the same selector; a
// selector that does not parse is an error.
func TestParseClusterSelector(t *testing.T) {
	t.Parallel()
	cs, err := ParseClusterSelector("env=lab,tier in (core,edge),!legacy")
	if err != nil {
		t.Fatal(err)
	}
	if cs.MatchLabels["env"] != "lab" || len(cs.MatchExpressions) != 2 {
		t.Fatalf("parsed %+v", cs)
	}
	sel, err := cs.AsSelector()
	if err != nil {
		t.Fatal(err)
	}
	for l, want := range map[string]bool{"env=lab,tier=edge": true, "env=lab,tier=edge,legacy=y": false, "env=prod,tier=edge": false} {
		set, _ := labels.ConvertSelectorToLabelsMap(l)
		if got := sel.Matches(set); got != want {
			t.Errorf("%s matches %s: %v, want %v", sel, l, got, want)
		}
	}
	if _, err := ParseClusterSelector("env in lab"); err == nil {
		t.Error(`"env in lab" parsed; want an error`)
	}
}
