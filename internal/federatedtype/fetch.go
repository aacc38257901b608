package federatedtype

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// openAPIPath returns the key of t's group-version among the host's
// OpenAPI v3 paths: api/v1 for the core group, else apis/<group>/<version>.
func openAPIPath(t Target) string {
	if t.Group == "" {
		return "api/" + t.Version
	}
	return "apis/" + t.Group + "/" + t.Version
}

// FetchOpenAPI returns the JSON of the host's OpenAPI v3 document of t's
// group-version. When the host publishes none, the error wraps
// ErrNoOpenAPI.
func FetchOpenAPI(ctx context.Context, disco Discovery, t Target) ([]byte, error) {
	paths, err := disco.OpenAPIV3WithContext(ctx).PathsWithContext(ctx)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: the host serves no /openapi/v3", ErrNoOpenAPI)
	case err != nil:
		return nil, fmt.Errorf("listing the host's OpenAPI v3 documents: %w", err)
	}
	gv, ok := paths[openAPIPath(t)]
	if !ok {
		return nil, fmt.Errorf("%w: the host publishes no /openapi/v3/%s", ErrNoOpenAPI, openAPIPath(t))
	}
	data, err := gv.SchemaWithContext(ctx, "application/json")
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: the host serves no /openapi/v3/%s", ErrNoOpenAPI, openAPIPath(t))
	case err != nil:
		return nil, fmt.Errorf("reading the host's /openapi/v3/%s: %w", openAPIPath(t), err)
	}
	return data, nil
}

// FetchTemplateSchema fetches the host's OpenAPI v3 document of t and
// converts the schema of its kind (see TemplateSchema). When the host
// publishes no schema of the kind, the error wraps ErrNoOpenAPI: callers
// then fall back to PreserveUnknownTemplate.
func FetchTemplateSchema(ctx context.Context, disco Discovery, t Target) (*apiextensionsv1.JSONSchemaProps, error) {
	doc, err := FetchOpenAPI(ctx, disco, t)
	if err != nil {
		return nil, err
	}
	return TemplateSchema(doc, t)
}
