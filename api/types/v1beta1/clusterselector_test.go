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
