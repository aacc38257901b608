package rollout

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/render"
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

// A dry run of Ensure writes nothing and numbers the content as a write
// would: the newest revision's number for its content, the next one for
// a new content or an earlier one (renumbered).
func TestEnsureDryRun(t *testing.T) {
	t.Parallel()
	fed := func(image string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"image": image}}}}
		u.SetName("web")
		u.SetNamespace("shop")
		return u
	}
	revs := []Revision{{Number: 3, Key: KeyOf(fed("x")), Name: "web-x"}, {Number: 4, Key: KeyOf(fed("y")), Name: "web-y"}, {Number: 5, Key: KeyOf(fed("z")), Name: "web-z"}}
	tests := []struct {
		name  string
		revs  []Revision
		image string
		want  typesv1beta1.Revision
		after []typesv1beta1.Revision
	}{
		{name: "no revision yet", image: "z", want: 1, after: []typesv1beta1.Revision{1}},
		{name: "the newest content", revs: revs, image: "z", want: 5, after: []typesv1beta1.Revision{3, 4, 5}},
		{name: "a new content", revs: revs, image: "w", want: 6, after: []typesv1beta1.Revision{3, 4, 5, 6}},
		{name: "an earlier content, renumbered", revs: revs, image: "x", want: 6, after: []typesv1beta1.Revision{4, 5, 6}},
	}
	store := &Store{DryRun: true} // no client: a write would panic
	for _, tt := range tests {
		got, after, err := store.Ensure(t.Context(), fed(tt.image), "shop", tt.revs, render.Versions{Template: "9", Override: "1"})
		var numbers []typesv1beta1.Revision
		for _, r := range after {
			numbers = append(numbers, r.Number)
		}
		if err != nil || got.Number != tt.want || !slices.Equal(numbers, tt.after) {
			t.Errorf("%s: %d, %v, %v; want %d, %v", tt.name, got.Number, numbers, err, tt.want, tt.after)
		}
	}
	if revs[0].Number != 3 || len(revs) != 3 {
		t.Errorf("Ensure changed its argument: %+v", revs)
	}
}
