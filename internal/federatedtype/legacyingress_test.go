package federatedtype

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// ingressDoc is the part of the OpenAPI v3 document of networking.k8s.io/v1
// that Kubernetes v1.37 publishes for Ingress, without descriptions.
const ingressDoc = `{
  "openapi": "3.0.0",
  "components": {"schemas": {
    "io.k8s.api.networking.v1.Ingress": {
      "type": "object",
      "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"default": {}, "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
        "spec": {"default": {}, "allOf": [{"$ref": "#/components/schemas/io.k8s.api.networking.v1.IngressSpec"}]},
        "status": {"default": {}, "allOf": [{"$ref": "#/components/schemas/io.k8s.api.networking.v1.IngressStatus"}]}
      },
      "x-kubernetes-group-version-kind": [{"group": "networking.k8s.io", "kind": "Ingress", "version": "v1"}]
    },
    "io.k8s.api.networking.v1.IngressSpec": {"type": "object", "properties": {
      "defaultBackend": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.networking.v1.IngressBackend"}]},
      "ingressClassName": {"type": "string"},
      "rules": {"type": "array", "items": {"$ref": "#/components/schemas/io.k8s.api.networking.v1.IngressRule"}, "x-kubernetes-list-type": "atomic"},
      "tls": {"type": "array", "items": {"$ref": "#/components/schemas/io.k8s.api.networking.v1.IngressTLS"}, "x-kubernetes-list-type": "atomic"}
    }},
    "io.k8s.api.networking.v1.IngressRule": {"type": "object", "properties": {
      "host": {"type": "string"},
      "http": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.networking.v1.HTTPIngressRuleValue"}]}
    }},
    "io.k8s.api.networking.v1.HTTPIngressRuleValue": {"type": "object", "required": ["paths"], "properties": {
      "paths": {"type": "array", "items": {"$ref": "#/components/schemas/io.k8s.api.networking.v1.HTTPIngressPath"}, "x-kubernetes-list-type": "atomic"}
    }},
    "io.k8s.api.networking.v1.HTTPIngressPath": {"type": "object", "required": ["pathType", "backend"], "properties": {
      "backend": {"default": {}, "allOf": [{"$ref": "#/components/schemas/io.k8s.api.networking.v1.IngressBackend"}]},
      "path": {"type": "string"},
      "pathType": {"type": "string", "enum": ["Exact", "ImplementationSpecific", "Prefix"]}
    }},
    "io.k8s.api.networking.v1.IngressBackend": {"type": "object", "properties": {
      "resource": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.TypedLocalObjectReference"}]},
      "service": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.networking.v1.IngressServiceBackend"}]}
    }},
    "io.k8s.api.networking.v1.IngressServiceBackend": {"type": "object", "required": ["name"], "properties": {
      "name": {"type": "string", "default": ""},
      "port": {"default": {}, "allOf": [{"$ref": "#/components/schemas/io.k8s.api.networking.v1.ServiceBackendPort"}]}
    }},
    "io.k8s.api.networking.v1.ServiceBackendPort": {"type": "object", "properties": {
      "name": {"type": "string"},
      "number": {"type": "integer", "format": "int32"}
    }, "x-kubernetes-map-type": "atomic"},
    "io.k8s.api.core.v1.TypedLocalObjectReference": {"type": "object", "required": ["kind", "name"], "properties": {
      "apiGroup": {"type": "string"},
      "kind": {"type": "string", "default": ""},
      "name": {"type": "string", "default": ""}
    }, "x-kubernetes-map-type": "atomic"},
    "io.k8s.api.networking.v1.IngressTLS": {"type": "object", "properties": {
      "hosts": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"},
      "secretName": {"type": "string"}
    }},
    "io.k8s.api.networking.v1.IngressStatus": {"type": "object", "properties": {"loadBalancer": {"type": "object"}}},
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}}
  }}
}`

var ingress = Target{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Plural: "ingresses", Namespaced: true}

// The schemas of a backend as networking.k8s.io/v1 has it, and as a
// legacy one is taken too.
const (
	resourceBackend = `{"type":"object","required":["kind","name"],"properties":{"apiGroup":{"type":"string"},"kind":{"type":"string"},"name":{"type":"string"}},"x-kubernetes-map-type":"atomic"}`
	serviceBackend  = `{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"type":"object","properties":{"name":{"type":"string"},"number":{"type":"integer","format":"int32"}},"x-kubernetes-map-type":"atomic"}}}`
	v1Backend       = `{"type":"object","properties":{"resource":` + resourceBackend + `,"service":` + serviceBackend + `}}`
	legacyBackend   = `{"type":"object","properties":{"resource":` + resourceBackend + `,"service":` + serviceBackend +
		`,"serviceName":{"type":"string"},"servicePort":{"x-kubernetes-int-or-string":true}}}`
)

func TestAcceptLegacyIngressSchema(t *testing.T) {
	t.Parallel()
	s, err := TemplateSchema([]byte(ingressDoc), ingress)
	if err != nil {
		t.Fatal(err)
	}
	crd, err := NewCRD(Type{Target: ingress}, s)
	if err != nil {
		t.Fatal(err)
	}
	checkStructural(t, crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	tests := []struct {
		name string
		path string
		want string // the JSON of the schema there
	}{
		{name: "pathType is optional, backend still required", path: "spec.rules.[].http.paths.[]",
			want: `{"type":"object","required":["backend"],"properties":{"backend":` + legacyBackend + `,"path":{"type":"string"},"pathType":{"type":"string","enum":["Exact","ImplementationSpecific","Prefix"]}}}`},
		{name: "a path backend also takes serviceName and servicePort", path: "spec.rules.[].http.paths.[].backend", want: legacyBackend},
		{name: "spec.backend has the shape of a path backend", path: "spec.backend", want: legacyBackend},
		{name: "spec.defaultBackend is v1's", path: "spec.defaultBackend", want: v1Backend},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := toJSON(t, at(t, s, tt.path)); got != tt.want {
				t.Errorf("schema at %s is\n%s\nwant\n%s", tt.path, got, tt.want)
			}
		})
	}
}

// TestAcceptLegacyIngressTemplates checks which templates the API server
// would take whole, as strict field validation requires.
func TestAcceptLegacyIngressTemplates(t *testing.T) {
	t.Parallel()
	s, err := TemplateSchema([]byte(ingressDoc), ingress)
	if err != nil {
		t.Fatal(err)
	}
	sample := readTemplate(t, "../../test/conformance/kubefed-v0.10.0/sample1/federatedingress.yaml")
	tests := []struct {
		name        string
		template    string
		wantUnknown []string
	}{
		{name: "KubeFed's sample1 Ingress", template: toJSON(t, sample)},
		{name: "v1 shape", template: `{"spec":{"defaultBackend":{"service":{"name":"a","port":{"name":"http"}}},"rules":[{"http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"a","port":{"number":80}}}}]}}]}}`},
		{name: "legacy spec.backend, port by name", template: `{"spec":{"backend":{"serviceName":"a","servicePort":"http"}}}`},
		{name: "legacy resource backend", template: `{"spec":{"backend":{"resource":{"kind":"StorageBucket","name":"b"}}}}`},
		{name: "legacy fields are not taken everywhere", template: `{"spec":{"defaultBackend":{"serviceName":"a"},"rules":[{"serviceName":"a"}]}}`,
			wantUnknown: []string{"spec.defaultBackend.serviceName", "spec.rules[0].serviceName"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var template map[string]any
			if err := yaml.Unmarshal([]byte(tt.template), &template); err != nil {
				t.Fatal(err)
			}
			if got := unknownFields(t, s, template); !slices.Equal(got, tt.wantUnknown) {
				t.Errorf("unknown fields %v, want %v", got, tt.wantUnknown)
			}
		})
	}
}

func TestAcceptLegacyIngressOnlyForV1Ingress(t *testing.T) {
	t.Parallel()
	for _, other := range []Target{
		{Group: "example.io", Version: "v1", Kind: "Ingress"},
		{Group: "networking.k8s.io", Version: "v1beta1", Kind: "Ingress"},
	} {
		doc := strings.NewReplacer(`"group": "networking.k8s.io"`, `"group": "`+other.Group+`"`, `"version": "v1"`, `"version": "`+other.Version+`"`).Replace(ingressDoc)
		s, err := TemplateSchema([]byte(doc), other)
		if err != nil {
			t.Fatal(err)
		}
		if j := toJSON(t, s); strings.Contains(j, "serviceName") {
			t.Errorf("%s: the template takes serviceName: %s", other.GroupVersionKind(), j)
		}
		if _, ok := at(t, s, "spec").Properties["backend"]; ok {
			t.Errorf("%s: the template takes spec.backend", other.GroupVersionKind())
		}
		if r := at(t, s, "spec.rules.[].http.paths.[]").Required; !slices.Contains(r, "pathType") {
			t.Errorf("%s: pathType is optional", other.GroupVersionKind())
		}
	}
}

// readTemplate returns spec.template of the federated resource in file.
func readTemplate(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(file))
	if err != nil {
		t.Fatal(err)
	}
	var fed struct {
		Spec struct {
			Template map[string]any `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &fed); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return fed.Spec.Template
}
