package join

import (
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// printObjects prints the objects a join of spec would create, the
// member's then the host's, as a YAML stream or a JSON List. The host
// Secret holds placeholders instead of credentials.
func printObjects(w io.Writer, spec registration.Spec, format string) error {
	host := registration.NewHost(spec, registration.Credentials{})
	host.Credentials.Data = nil
	host.Credentials.StringData = placeholders(spec)
	objects := append(registration.NewMember(spec).Objects(), host.Objects()...)
	manifests := make([]*unstructured.Unstructured, 0, len(objects))
	for _, obj := range objects {
		m, err := manifest(obj)
		if err != nil {
			return err
		}
		manifests = append(manifests, m)
	}
	if format == "json" {
		return printJSON(w, manifests)
	}
	return printYAML(w, manifests)
}

// placeholders stand for the credentials, which a dry run does not read.
func placeholders(spec registration.Spec) map[string]string {
	return map[string]string{
		v1beta1.SecretTokenKey: fmt.Sprintf("<token of ServiceAccount %s/%s, read from the member at join time>",
			spec.Namespace, registration.ServiceAccountName(spec.Name)),
		v1beta1.SecretCAKey: fmt.Sprintf("<ca.crt of Secret %s/%s, read from the member at join time>",
			spec.Namespace, registration.TokenSecretName(spec.Name)),
	}
}

// printYAML prints a YAML stream, the documents separated by "---".
func printYAML(w io.Writer, manifests []*unstructured.Unstructured) error {
	for i, m := range manifests {
		data, err := yaml.Marshal(m.Object)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", describe(m), err)
		}
		if i > 0 {
			data = append([]byte("---\n"), data...)
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// printJSON prints a v1 List.
func printJSON(w io.Writer, manifests []*unstructured.Unstructured) error {
	items := make([]any, 0, len(manifests))
	for _, m := range manifests {
		items = append(items, m.Object)
	}
	list := map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(list)
}
