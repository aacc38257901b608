package rollout

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// TestRevisionNamesAndLabelsOfAnyName: a resource whose name is longer
// than a label value may be (63) rolled out in no wave, as the API server
// refused its revisions; its labels and revision names are valid, differ
// from those of another long name with the same beginning, and are those
// of today for a short name.
func TestRevisionNamesAndLabelsOfAnyName(t *testing.T) {
	long := strings.Repeat("a", 60) + "-" + strings.Repeat("b", 40)
	for _, c := range []struct {
		name string
	}{
		{name: "web"},
		{name: strings.Repeat("w", 63)},
		{name: long},
		{name: long + "x"},
		{name: strings.Repeat("a", 51) + "-" + strings.Repeat("c", 30)}, // cut on the '-'
		{name: strings.Repeat("d.", 126) + "e"},                         // 253 characters, dots
	} {
		fed := &unstructured.Unstructured{}
		fed.SetKind("FederatedDeployment")
		fed.SetName(c.name)
		labels := revisionLabels(fed)
		of := labels[typesv1beta1.LabelRevisionOf]
		if errs := validation.IsValidLabelValue(of); len(errs) > 0 {
			t.Errorf("%d characters: label %q: %v", len(c.name), of, errs)
		}
		if len(c.name) <= validation.LabelValueMaxLength && of != c.name {
			t.Errorf("a name of %d characters is labelled %q, want itself", len(c.name), of)
		}
		rev := RevisionName(fed, Key{Template: "t", Overrides: "o"})
		if errs := validation.IsDNS1123Subdomain(rev); len(errs) > 0 {
			t.Errorf("%d characters: revision name %q: %v", len(c.name), rev, errs)
		}
	}
	a, b := &unstructured.Unstructured{}, &unstructured.Unstructured{}
	a.SetName(long)
	b.SetName(long + "x")
	if revisionLabels(a)[typesv1beta1.LabelRevisionOf] == revisionLabels(b)[typesv1beta1.LabelRevisionOf] {
		t.Errorf("two long names with the same beginning share the label %q", revisionLabels(a)[typesv1beta1.LabelRevisionOf])
	}
}
