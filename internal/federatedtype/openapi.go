package federatedtype

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ErrNoOpenAPI says that the host publishes no OpenAPI v3 schema of a
// kind: its template is then kept without a schema.
var ErrNoOpenAPI = errors.New("no OpenAPI v3 schema")

// schemaRefPrefix starts every $ref of a Kubernetes OpenAPI v3 document.
const schemaRefPrefix = "#/components/schemas/"

// objectMeta is the schema name of metav1.ObjectMeta, which templates
// replace by the metadata shape of the FederatedDeployment template.
const objectMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

// opaque are schemas kept as objects of any content: raw objects and
// JSON schemas, which are recursive and hold arbitrary values.
var opaque = map[string]bool{
	"io.k8s.apimachinery.pkg.runtime.RawExtension": true,
}

// opaqueSuffixes end the names of the JSON-schema types of
// apiextensions, in every version.
var opaqueSuffixes = []string{".JSONSchemaProps", ".JSONSchemaPropsOrArray", ".JSONSchemaPropsOrBool", ".JSONSchemaPropsOrStringArray"}

// templateDropped are the target's top-level fields a template leaves out:
// the Federated<Kind> sets the kind, and status belongs to the members.
var templateDropped = []string{"apiVersion", "kind", "status"}

// openAPIDocument is the part of an OpenAPI v3 document the conversion reads.
type openAPIDocument struct {
	Components struct {
		Schemas map[string]*openAPISchema `json:"schemas"`
	} `json:"components"`
}

// openAPISchema is the part of an OpenAPI v3 schema the conversion reads.
type openAPISchema struct {
	Ref                  string                    `json:"$ref"`
	AllOf                []*openAPISchema          `json:"allOf"`
	OneOf                []*openAPISchema          `json:"oneOf"`
	AnyOf                []*openAPISchema          `json:"anyOf"`
	Type                 schemaType                `json:"type"`
	Format               string                    `json:"format"`
	Properties           map[string]*openAPISchema `json:"properties"`
	Items                *openAPISchema            `json:"items"`
	AdditionalProperties *additionalProperties     `json:"additionalProperties"`
	Required             []string                  `json:"required"`
	Enum                 []json.RawMessage         `json:"enum"`
	Default              json.RawMessage           `json:"default"`
	Nullable             bool                      `json:"nullable"`
	IntOrString          bool                      `json:"x-kubernetes-int-or-string"`
	PreserveUnknown      bool                      `json:"x-kubernetes-preserve-unknown-fields"`
	EmbeddedResource     bool                      `json:"x-kubernetes-embedded-resource"`
	ListType             string                    `json:"x-kubernetes-list-type"`
	ListMapKeys          []string                  `json:"x-kubernetes-list-map-keys"`
	MapType              string                    `json:"x-kubernetes-map-type"`
	GroupVersionKinds    []groupVersionKind        `json:"x-kubernetes-group-version-kind"`
}

type groupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// schemaType is an OpenAPI type: a string, or (OpenAPI 3.1) a list of
// types of which "null" means nullable.
type schemaType struct {
	name     string
	nullable bool
}

func (t *schemaType) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '[' {
		var names []string
		if err := json.Unmarshal(data, &names); err != nil {
			return err
		}
		for _, n := range names {
			if n == "null" {
				t.nullable = true
			} else if t.name == "" {
				t.name = n
			}
		}
		return nil
	}
	return json.Unmarshal(data, &t.name)
}

// additionalProperties is a schema or a boolean.
type additionalProperties struct {
	allows bool
	schema *openAPISchema
}

func (a *additionalProperties) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("true")) || bytes.Equal(data, []byte("false")) {
		return json.Unmarshal(data, &a.allows)
	}
	a.allows = true
	a.schema = &openAPISchema{}
	return json.Unmarshal(data, a.schema)
}

// TemplateSchema returns the schema of spec.template of t's Federated<Kind>,
// converted from doc, the JSON of the host's OpenAPI v3 document of t's
// group-version (/openapi/v3/apis/<group>/<version>, or /openapi/v3/api/v1).
//
// The result is a structural schema: references are inlined (a reference
// to a schema being expanded, and JSON-schema types, become objects of any
// content), quantities and int-or-strings become x-kubernetes-int-or-string,
// and descriptions, defaults and validations are left out; object metadata
// takes the shape of the FederatedDeployment template's metadata. The
// template has no apiVersion, kind nor status. A networking.k8s.io/v1
// Ingress template also accepts the legacy extensions/v1beta1 shape (see
// acceptLegacyIngress). When doc has no schema of t's kind, the error wraps
// ErrNoOpenAPI.
func TemplateSchema(doc []byte, t Target) (*apiextensionsv1.JSONSchemaProps, error) {
	var d openAPIDocument
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("decoding the OpenAPI v3 document of %s: %w", t.GroupVersionKind().GroupVersion(), err)
	}
	name, kind := findKind(d.Components.Schemas, t)
	if kind == nil {
		return nil, fmt.Errorf("%w: the OpenAPI v3 document of %s has no schema of kind %s", ErrNoOpenAPI, t.GroupVersionKind().GroupVersion(), t.Kind)
	}
	meta, err := metadataSchema()
	if err != nil {
		return nil, err
	}
	c := &converter{schemas: d.Components.Schemas, metadata: meta, expanding: map[string]bool{name: true}}
	out := c.convert(kind)
	if out.Type != "object" {
		return nil, fmt.Errorf("the OpenAPI v3 schema %s of kind %s is not an object", name, t.Kind)
	}
	for _, field := range templateDropped {
		delete(out.Properties, field)
	}
	if out.Properties == nil {
		out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	out.Properties["metadata"] = *meta.DeepCopy()
	out.Required = existing(out.Required, out.Properties)
	out.Default = nil
	dropDefaults(&out, nil)
	acceptLegacyIngress(t, &out)
	return &out, nil
}

// findKind returns the schema whose x-kubernetes-group-version-kind names
// t's kind, and its name. The names are sorted so that the choice is
// stable.
func findKind(schemas map[string]*openAPISchema, t Target) (string, *openAPISchema) {
	for _, name := range slices.Sorted(maps.Keys(schemas)) {
		s := schemas[name]
		for _, gvk := range s.GroupVersionKinds {
			if gvk.Group == t.Group && gvk.Version == t.Version && gvk.Kind == t.Kind {
				return name, s
			}
		}
	}
	return "", nil
}

// converter converts the schemas of one OpenAPI document.
type converter struct {
	schemas  map[string]*openAPISchema
	metadata *apiextensionsv1.JSONSchemaProps
	// expanding holds the references being expanded on the current path.
	expanding map[string]bool
}

// convert returns the structural schema of s.
func (c *converter) convert(s *openAPISchema) apiextensionsv1.JSONSchemaProps {
	switch {
	case s == nil:
		return anyValue()
	case s.Ref != "":
		return c.ref(s.Ref)
	case len(s.AllOf) > 0:
		return c.allOf(s)
	case s.IntOrString || s.Format == "int-or-string":
		return intOrString()
	case s.Type.name == "" && (len(s.OneOf) > 0 || len(s.AnyOf) > 0):
		return alternatives(append(slices.Clone(s.OneOf), s.AnyOf...))
	}
	switch typeOf(s) {
	case "object":
		return c.object(s)
	case "array":
		return c.array(s)
	case "":
		return anyValue()
	default:
		return scalar(s)
	}
}

// typeOf returns the type of s, inferred from its fields when it has none.
func typeOf(s *openAPISchema) string {
	switch {
	case s.Type.name != "":
		return s.Type.name
	case len(s.Properties) > 0 || s.AdditionalProperties != nil:
		return "object"
	case s.Items != nil:
		return "array"
	default:
		return ""
	}
}

// ref expands the schema a reference names.
func (c *converter) ref(ref string) apiextensionsv1.JSONSchemaProps {
	name := strings.TrimPrefix(ref, schemaRefPrefix)
	target, found := c.schemas[name]
	switch {
	case name == objectMeta:
		return *c.metadata.DeepCopy()
	case isOpaque(name), c.expanding[name]:
		return anyObject()
	case !found:
		return anyValue()
	}
	c.expanding[name] = true
	defer delete(c.expanding, name)
	return c.convert(target)
}

func isOpaque(name string) bool {
	if opaque[name] {
		return true
	}
	for _, suffix := range opaqueSuffixes {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// allOf merges the parts of an allOf, most often the one reference that
// Kubernetes wraps in allOf to give it a description or default.
func (c *converter) allOf(s *openAPISchema) apiextensionsv1.JSONSchemaProps {
	out := c.convert(s.AllOf[0])
	for _, part := range s.AllOf[1:] {
		merge(&out, c.convert(part))
	}
	if s.Nullable || s.Type.nullable {
		out.Nullable = true
	}
	return out
}

// merge adds the properties and required fields of from to out.
func merge(out *apiextensionsv1.JSONSchemaProps, from apiextensionsv1.JSONSchemaProps) {
	for name, p := range from.Properties {
		if _, ok := out.Properties[name]; !ok {
			if out.Properties == nil {
				out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
			}
			out.Properties[name] = p
		}
	}
	for _, r := range from.Required {
		if !slices.Contains(out.Required, r) {
			out.Required = append(out.Required, r)
		}
	}
}

// alternatives converts a oneOf or anyOf without a type: scalars that may
// be strings, such as quantities, become int-or-string; anything else may
// hold any value.
func alternatives(options []*openAPISchema) apiextensionsv1.JSONSchemaProps {
	hasString := false
	for _, o := range options {
		switch typeOf(o) {
		case "string":
			hasString = true
		case "integer", "number":
		default:
			return anyValue()
		}
	}
	if hasString {
		return intOrString()
	}
	return anyValue()
}

func (c *converter) object(s *openAPISchema) apiextensionsv1.JSONSchemaProps {
	out := apiextensionsv1.JSONSchemaProps{
		Type:                   "object",
		Nullable:               s.Nullable || s.Type.nullable,
		XPreserveUnknownFields: preserve(s.PreserveUnknown),
		XEmbeddedResource:      s.EmbeddedResource,
		XMapType:               optional(s.MapType),
	}
	if len(s.Properties) > 0 {
		out.Properties = make(map[string]apiextensionsv1.JSONSchemaProps, len(s.Properties))
		for name, p := range s.Properties {
			out.Properties[name] = c.convert(p)
		}
		out.Required = existing(s.Required, out.Properties)
	}
	switch ap := s.AdditionalProperties; {
	case ap == nil || !ap.allows:
	case ap.schema == nil || len(out.Properties) > 0:
		// Structural schemas cannot have both properties and
		// additionalProperties: keep the unknown fields instead.
		out.XPreserveUnknownFields = preserve(true)
	default:
		item := c.convert(ap.schema)
		out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &item}
	}
	if len(out.Properties) == 0 && out.AdditionalProperties == nil {
		out.XPreserveUnknownFields = preserve(true)
	}
	return out
}

func (c *converter) array(s *openAPISchema) apiextensionsv1.JSONSchemaProps {
	item := c.convert(s.Items)
	out := apiextensionsv1.JSONSchemaProps{
		Type:     "array",
		Nullable: s.Nullable || s.Type.nullable,
		Items:    &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item},
	}
	switch s.ListType {
	case "atomic":
		out.XListType = optional(s.ListType)
	case "set":
		if isScalar(item.Type) {
			item.Nullable = false
			out.XListType = optional(s.ListType)
		}
	case "map":
		if validMapKeys(item, s.ListMapKeys) {
			item.Nullable = false
			out.XListType = optional(s.ListType)
			out.XListMapKeys = slices.Clone(s.ListMapKeys)
		}
	}
	return out
}

// validMapKeys tells whether keys can be the x-kubernetes-list-map-keys of
// a list of item: scalar properties, each required or with a default.
func validMapKeys(item apiextensionsv1.JSONSchemaProps, keys []string) bool {
	if item.Type != "object" || len(keys) == 0 {
		return false
	}
	for _, k := range keys {
		p, ok := item.Properties[k]
		if !ok || p.Nullable || !(isScalar(p.Type) || p.XIntOrString) {
			return false
		}
		if p.Default == nil && !slices.Contains(item.Required, k) {
			return false
		}
	}
	return true
}

func scalar(s *openAPISchema) apiextensionsv1.JSONSchemaProps {
	out := apiextensionsv1.JSONSchemaProps{Type: s.Type.name, Format: s.Format, Nullable: s.Nullable || s.Type.nullable}
	for _, e := range s.Enum {
		out.Enum = append(out.Enum, apiextensionsv1.JSON{Raw: slices.Clone(e)})
	}
	if len(s.Default) > 0 && !bytes.Equal(s.Default, []byte("null")) {
		// Kept for now: a list-map key may need it (see dropDefaults).
		out.Default = &apiextensionsv1.JSON{Raw: slices.Clone(s.Default)}
	}
	return out
}

// dropDefaults removes the defaults under s but those of keep, the
// properties of s that key a map list of s and are not required: such a
// key needs a default.
func dropDefaults(s *apiextensionsv1.JSONSchemaProps, keep []string) {
	for name, p := range s.Properties {
		dropDefaults(&p, nil)
		if !slices.Contains(keep, name) || slices.Contains(s.Required, name) {
			p.Default = nil
		}
		s.Properties[name] = p
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		dropDefaults(s.AdditionalProperties.Schema, nil)
		s.AdditionalProperties.Schema.Default = nil
	}
	if s.Items != nil && s.Items.Schema != nil {
		var keys []string
		if s.XListType != nil && *s.XListType == "map" {
			keys = s.XListMapKeys
		}
		dropDefaults(s.Items.Schema, keys)
		s.Items.Schema.Default = nil
	}
}

// existing returns the names of required that properties has.
func existing(required []string, properties map[string]apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	for _, r := range required {
		if _, ok := properties[r]; ok && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func isScalar(t string) bool {
	return t == "string" || t == "integer" || t == "number" || t == "boolean"
}

// anyValue is a schema that accepts any JSON value and keeps it whole.
func anyValue() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: preserve(true)}
}

// anyObject is a schema that accepts any object and keeps it whole.
func anyObject() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: preserve(true)}
}

// intOrString accepts an integer or a string, as quantities and ports.
func intOrString() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{XIntOrString: true}
}

// preserve returns a pointer to true, or nil: the field is omitted unless set.
func preserve(on bool) *bool {
	if !on {
		return nil
	}
	return &on
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
