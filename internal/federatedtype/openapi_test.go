package federatedtype

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// widgetDoc is a small OpenAPI v3 document in the shape Kubernetes
// publishes, with each construct the conversion handles.
const widgetDoc = `{
  "openapi": "3.0.0",
  "components": {"schemas": {
    "io.example.v1.Widget": {
      "description": "Widget is an example.",
      "type": "object",
      "required": ["spec", "gone"],
      "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"default": {}, "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
        "spec": {"description": "The spec.", "default": {}, "allOf": [{"$ref": "#/components/schemas/io.example.v1.WidgetSpec"}]},
        "status": {"allOf": [{"$ref": "#/components/schemas/io.example.v1.WidgetStatus"}]}
      },
      "x-kubernetes-group-version-kind": [{"group": "example.io", "kind": "Widget", "version": "v1"}]
    },
    "io.example.v1.WidgetSpec": {
      "type": "object",
      "required": ["size", "missing"],
      "properties": {
        "size": {"description": "Size.", "type": "integer", "format": "int32", "default": 3},
        "mode": {"type": "string", "enum": ["Fast", "Slow"]},
        "port": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}]},
        "limits": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}},
        "raw": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.runtime.RawExtension"},
        "validation": {"$ref": "#/components/schemas/io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"},
        "anything": {"description": "Any JSON value."},
        "extra": {"type": "object", "additionalProperties": true},
        "tree": {"$ref": "#/components/schemas/io.example.v1.Node"},
        "podTemplate": {"type": "object", "properties": {"metadata": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}}},
        "ports": {
          "type": "array",
          "items": {"type": "object", "required": ["port"], "properties": {
            "port": {"type": "integer", "default": 0},
            "protocol": {"type": "string", "default": "TCP"},
            "name": {"type": "string", "default": "x"}
          }},
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["port", "protocol"]
        },
        "hosts": {
          "type": "array",
          "items": {"type": "object", "properties": {"ip": {"type": "string"}}},
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["ip"]
        },
        "rules": {
          "type": "array",
          "items": {"type": "object", "properties": {"verb": {"type": "string"}}},
          "x-kubernetes-list-type": "set"
        },
        "names": {"type": "array", "items": {"type": "string", "nullable": true}, "x-kubernetes-list-type": "set"},
        "selector": {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "atomic"},
        "untyped": {"type": "array"}
      }
    },
    "io.example.v1.WidgetStatus": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    "io.example.v1.Node": {
      "type": "object",
      "properties": {
        "value": {"type": "string", "nullable": true},
        "children": {"type": "array", "items": {"$ref": "#/components/schemas/io.example.v1.Node"}}
      }
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}, "uid": {"type": "string"}}},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"oneOf": [{"type": "string"}, {"type": "number"}]},
    "io.k8s.apimachinery.pkg.runtime.RawExtension": {"type": "object"},
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps": {
      "type": "object",
      "properties": {"properties": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"}}}
    }
  }}
}`

var widget = Target{Group: "example.io", Version: "v1", Kind: "Widget", Plural: "widgets", Namespaced: true}

// at returns the schema at a dotted path of property names; "[]" steps
// into items, "{}" into additionalProperties.
func at(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, step := range strings.Split(path, ".") {
		switch step {
		case "[]":
			if s.Items == nil || s.Items.Schema == nil {
				t.Fatalf("%s: no items at %q", path, step)
			}
			s = s.Items.Schema
		case "{}":
			if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
				t.Fatalf("%s: no additionalProperties at %q", path, step)
			}
			s = s.AdditionalProperties.Schema
		default:
			p, ok := s.Properties[step]
			if !ok {
				t.Fatalf("%s: no property %q", path, step)
			}
			s = &p
		}
	}
	return s
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestTemplateSchema(t *testing.T) {
	t.Parallel()
	s, err := TemplateSchema([]byte(widgetDoc), widget)
	if err != nil {
		t.Fatal(err)
	}
	crd, err := NewCRD(Type{Target: widget}, s)
	if err != nil {
		t.Fatal(err)
	}
	checkStructural(t, crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	meta, err := metadataSchema()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string // "" is the template itself
		want string // the JSON of the schema there
	}{
		{name: "the template has metadata and spec only, and requires only spec",
			want: `"required":["spec"]`},
		{name: "metadata has the FederatedDeployment template's shape", path: "metadata", want: toJSON(t, meta)},
		{name: "nested object metadata too", path: "spec.podTemplate.metadata", want: toJSON(t, meta)},
		{name: "required keeps existing properties", path: "spec", want: `"required":["size"]`},
		{name: "no description nor default", path: "spec.size", want: `{"type":"integer","format":"int32"}`},
		{name: "enum", path: "spec.mode", want: `{"type":"string","enum":["Fast","Slow"]}`},
		{name: "int-or-string in allOf", path: "spec.port", want: `{"x-kubernetes-int-or-string":true}`},
		{name: "quantity", path: "spec.limits.{}", want: `{"x-kubernetes-int-or-string":true}`},
		{name: "raw extension", path: "spec.raw", want: `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
		{name: "JSON schema", path: "spec.validation", want: `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
		{name: "any value", path: "spec.anything", want: `{"x-kubernetes-preserve-unknown-fields":true}`},
		{name: "additionalProperties true", path: "spec.extra", want: `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
		{name: "recursion stops", path: "spec.tree.children.[]", want: `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`},
		{name: "nullable", path: "spec.tree.value", want: `{"type":"string","nullable":true}`},
		{name: "map list keeps the default of an optional key only", path: "spec.ports",
			want: `{"type":"array","items":{"type":"object","required":["port"],"properties":{"name":{"type":"string"},"port":{"type":"integer"},"protocol":{"type":"string","default":"TCP"}}},"x-kubernetes-list-map-keys":["port","protocol"],"x-kubernetes-list-type":"map"}`},
		{name: "map list with an optional key without default becomes atomic", path: "spec.hosts",
			want: `{"type":"array","items":{"type":"object","properties":{"ip":{"type":"string"}}}}`},
		{name: "set of objects becomes atomic", path: "spec.rules",
			want: `{"type":"array","items":{"type":"object","properties":{"verb":{"type":"string"}}}}`},
		{name: "set items are not nullable", path: "spec.names",
			want: `{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"set"}`},
		{name: "map type", path: "spec.selector",
			want: `{"type":"object","additionalProperties":{"type":"string"},"x-kubernetes-map-type":"atomic"}`},
		{name: "array without items", path: "spec.untyped",
			want: `{"type":"array","items":{"x-kubernetes-preserve-unknown-fields":true}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := s
			if tt.path != "" {
				got = at(t, s, tt.path)
			}
			if j := toJSON(t, got); !strings.Contains(j, tt.want) {
				t.Errorf("schema at %q is\n%s\nwant it to hold\n%s", tt.path, j, tt.want)
			}
		})
	}
	for _, gone := range templateDropped {
		if _, ok := s.Properties[gone]; ok {
			t.Errorf("the template has %s", gone)
		}
	}
	if j := toJSON(t, s); strings.Contains(j, "description") {
		t.Errorf("the template holds descriptions: %s", j)
	}
}

func TestTemplateSchemaErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		doc      string
		target   Target
		wantErr  string
		noSchema bool
	}{
		{name: "not JSON", doc: "<html>", target: widget, wantErr: "decoding the OpenAPI v3 document of example.io/v1"},
		{name: "other kind", doc: widgetDoc, target: Target{Group: "example.io", Version: "v1", Kind: "Gadget"},
			wantErr: "has no schema of kind Gadget", noSchema: true},
		{name: "other version", doc: widgetDoc, target: Target{Group: "example.io", Version: "v2", Kind: "Widget"}, noSchema: true},
		{name: "not an object", doc: `{"components":{"schemas":{"s":{"type":"string","x-kubernetes-group-version-kind":[{"group":"example.io","version":"v1","kind":"Widget"}]}}}}`,
			target: widget, wantErr: "is not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := TemplateSchema([]byte(tt.doc), tt.target)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one holding %q", err, tt.wantErr)
			}
			if errors.Is(err, ErrNoOpenAPI) != tt.noSchema {
				t.Errorf("errors.Is(%v, ErrNoOpenAPI) = %v, want %v", err, !tt.noSchema, tt.noSchema)
			}
		})
	}
}
