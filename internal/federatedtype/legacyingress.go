package federatedtype

import (
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ingressV1 is the only Ingress version Kubernetes still serves.
var ingressV1 = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}

// acceptLegacyIngress extends s, the template schema of a
// networking.k8s.io/v1 Ingress, so that it also accepts the
// extensions/v1beta1 shape KubeFed's manifests use; propagation converts
// that shape to v1 before writing to members. A path backend may hold
// serviceName (string) and servicePort (integer or string) beside service
// and resource, a path's pathType may be left out, and spec.backend, the
// old name of spec.defaultBackend, takes the shape of a path backend.
// Parts of the schema it does not find are left alone, and so are other
// targets.
func acceptLegacyIngress(t Target, s *apiextensionsv1.JSONSchemaProps) {
	if t.GroupVersionKind() != ingressV1 {
		return
	}
	var backend *apiextensionsv1.JSONSchemaProps
	update(s, []string{"spec", "rules", "[]", "http", "paths", "[]"}, func(path *apiextensionsv1.JSONSchemaProps) {
		path.Required = slices.DeleteFunc(path.Required, func(r string) bool { return r == "pathType" })
		if len(path.Required) == 0 {
			path.Required = nil
		}
		update(path, []string{"backend"}, func(b *apiextensionsv1.JSONSchemaProps) {
			if b.Properties == nil {
				return // it keeps unknown fields already
			}
			b.Properties["serviceName"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
			b.Properties["servicePort"] = intOrString()
			backend = b.DeepCopy()
		})
	})
	if backend == nil {
		return
	}
	update(s, []string{"spec"}, func(spec *apiextensionsv1.JSONSchemaProps) {
		if _, ok := spec.Properties["backend"]; !ok && spec.Properties != nil {
			spec.Properties["backend"] = *backend
		}
	})
}

// update calls f on the schema at path under s, if there is one; "[]"
// steps into the items of an array.
func update(s *apiextensionsv1.JSONSchemaProps, path []string, f func(*apiextensionsv1.JSONSchemaProps)) {
	if len(path) == 0 {
		f(s)
		return
	}
	if path[0] == "[]" {
		if s.Items != nil && s.Items.Schema != nil {
			update(s.Items.Schema, path[1:], f)
		}
		return
	}
	p, ok := s.Properties[path[0]]
	if !ok {
		return
	}
	update(&p, path[1:], f)
	s.Properties[path[0]] = p
}
