package v1beta1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// AsSelector converts the selector into a labels.Selector; a nil selector
// selects nothing.
func (s *ClusterSelector) AsSelector() (labels.Selector, error) {
	if s == nil {
		return labels.Nothing(), nil
	}
	ls := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, r := range s.MatchExpressions {
		ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: r.Key, Operator: metav1.LabelSelectorOperator(r.Operator), Values: r.Values,
		})
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("cluster selector: %w", err)
	}
	return sel, nil
}

// ParseClusterSelector parses a label selector in kubectl's syntax, such
// as "env=lab,tier in (edge,core)", into a ClusterSelector: its
// equalities as matchLabels, the rest as matchExpressions. AsSelector
// turns it back.
func ParseClusterSelector(s string) (*ClusterSelector, error) {
	ls, err := metav1.ParseToLabelSelector(s)
	if err != nil {
		return nil, err
	}
	out := &ClusterSelector{MatchLabels: ls.MatchLabels}
	for _, r := range ls.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, ClusterSelectorRequirement{
			Key: r.Key, Operator: SelectorOperator(r.Operator), Values: r.Values,
		})
	}
	return out, nil
}
