package dependencies

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestWithoutValues: the API server's refusal of a derived FederatedSecret
// loses its message, which may quote the Secret, and keeps its kind; other
// kinds' errors are kept whole.
func TestWithoutValues(t *testing.T) {
	const value = "s3cr3t-v4lue"
	refusal := apierrors.NewInvalid(schema.GroupKind{Group: "types.kubefed.io", Kind: "FederatedSecret"}, "db",
		field.ErrorList{field.Invalid(field.NewPath("spec", "template", "data", "password"), value, "bad")})
	got := withoutValues(Ref{Kind: Secret, Name: "db"}, refusal)
	if strings.Contains(got.Error(), value) || !apierrors.IsInvalid(got) || !strings.Contains(got.Error(), `"db"`) {
		t.Errorf("withoutValues: %v (invalid: %t); want no value, still Invalid, naming the Secret", got, apierrors.IsInvalid(got))
	}
	if got := withoutValues(Ref{Kind: Secret, Name: "db"}, apierrors.NewConflict(schema.GroupResource{}, "db", errors.New(value))); !apierrors.IsConflict(got) || strings.Contains(got.Error(), value) {
		t.Errorf("a conflict: %v; want still a conflict, without the value", got)
	}
	if got := withoutValues(Ref{Kind: Secret, Name: "db"}, errors.New("dial: "+value)); strings.Contains(got.Error(), value) {
		t.Errorf("a plain error: %v; want no value", got)
	}
	if got := withoutValues(Ref{Kind: ConfigMap, Name: "c"}, refusal); got != refusal {
		t.Errorf("a ConfigMap's error: %v; want it whole", got)
	}
	if withoutValues(Ref{Kind: Secret}, nil) != nil {
		t.Error("no error became one")
	}
}
