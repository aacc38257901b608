package federatedtype

import (
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkStructural fails t unless s is a valid structural schema, as the
// API server requires of a CRD's root schema.
func checkStructural(t *testing.T, s *apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	if errs := structuralschema.ValidateStructural(field.NewPath("schema"), structural(t, s)); len(errs) > 0 {
		t.Fatalf("not structural: %v", errs.ToAggregate())
	}
}

// unknownFields returns the paths of the fields of value that s does not
// know: those the API server prunes, and strict field validation refuses.
func unknownFields(t *testing.T, s *apiextensionsv1.JSONSchemaProps, value map[string]any) []string {
	t.Helper()
	return pruning.PruneWithOptions(value, structural(t, s), false, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
}

// structural returns s as the API server reads a CRD's schema.
func structural(t *testing.T, s *apiextensionsv1.JSONSchemaProps) *structuralschema.Structural {
	t.Helper()
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, internal, nil); err != nil {
		t.Fatalf("converting the schema: %v", err)
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatalf("NewStructural: %v", err)
	}
	return ss
}
